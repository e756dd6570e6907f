package state

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestCommitPlanAgainstMap checks commitPlan's grouping against the
// straightforward one (a map from field to the last write, grouped by
// bucket): the same last write of each object, each with its stamp and
// value or as a delete, in the bucket its key names, every bucket once
// and in ascending order; with duplicate objects, deletes, empty values
// and one plan reused across commits of different sizes; half the writes
// carry their Digest, the others leave it to the plan.
func TestCommitPlanAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	const tag = "{Xab}"
	pl := new(commitPlan)
	for round := range 200 {
		nb := []int{1, 3, 16, 1024, MaxBuckets}[round%5]
		n := rng.IntN(300)
		now := int64(1_700_000_000_000 + round)
		writes := make([]Write, n)
		for i := range writes {
			writes[i].Object = fmt.Sprintf("https://e%d.example.org/p%d", rng.IntN(5), rng.IntN(n/2+1))
			if rng.IntN(2) == 0 {
				writes[i].Digest = DigestOf(writes[i].Object)
			}
			switch rng.IntN(5) {
			case 0: // delete
			case 1:
				writes[i].Value = []byte{}
			default:
				writes[i].Value = fmt.Appendf(nil, "state %d of round %d", i, round)
			}
		}
		pl.plan(tag, nb, now, writes)

		type want struct {
			b     int
			write int
		}
		last := map[string]want{}
		for i, w := range writes {
			b, f := fieldOf(tag, DigestOf(w.Object), nb)
			last[f] = want{b, i}
		}
		seen := map[string]bool{}
		prev := -1
		for _, pb := range pl.buckets {
			if pb.b <= prev {
				t.Fatalf("round %d: bucket %d after %d", round, pb.b, prev)
			}
			prev = pb.b
			if pb.key != bucketKey(tag, pb.b, nb) || !(pb.start <= pb.mid && pb.mid <= pb.end && pb.start < pb.end) {
				t.Fatalf("round %d: bucket %+v", round, pb)
			}
			for k, i := range pl.order[pb.start:pb.end] {
				f := pl.fields[i]
				w, ok := last[f]
				if !ok || int(i) != w.write || seen[f] || w.b != pb.b {
					t.Fatalf("round %d: bucket %d holds write %d (%q): want write %+v, seen %v", round, pb.b, i, writes[i].Object, w, seen[f])
				}
				seen[f] = true
				isSet := pb.start+k < pb.mid
				if isSet != (writes[i].Value != nil) {
					t.Fatalf("round %d: write %d (value %v) listed as set %v", round, i, writes[i].Value, isSet)
				}
				if isSet {
					v := pl.vals[i]
					st, ok := stampOf([]byte(v))
					if !ok || st != now || v[stampLen:] != string(writes[i].Value) {
						t.Fatalf("round %d: write %d stored as %q", round, i, v)
					}
				}
			}
		}
		if len(seen) != len(last) {
			keys := make([]string, 0, len(last))
			for f := range last {
				if !seen[f] {
					keys = append(keys, fmt.Sprintf("%x", f))
				}
			}
			sort.Strings(keys)
			t.Fatalf("round %d: %d of %d objects planned; missing %v", round, len(seen), len(last), keys)
		}
	}
}
