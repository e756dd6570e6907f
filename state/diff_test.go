package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
)

// errClass names the sentinel an error matches, for comparing stores.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, state.ErrAlreadyCommitted):
		return "repeat"
	case errors.Is(err, state.ErrOffsetMismatch):
		return "mismatch"
	case errors.Is(err, state.ErrFenced):
		return "fenced"
	default:
		return "other"
	}
}

// TestDifferential applies one seeded random sequence of claims, commits
// and reads to Memory and to each Redis variant and requires the same
// result from every store at every step, and equal snapshots at the end.
// Compact and bucketed stores share tags, so they run in separate
// sequences (each against Memory); the bucketed stores run once more
// with an idle time on fake clocks moved alike, and must then also count
// the same expiries after every commit (the sweep's plan).
func TestDifferential(t *testing.T) {
	all := impls()
	byName := map[string]impl{}
	for _, im := range all {
		byName[im.name] = im
	}
	pick := func(names ...string) []impl {
		var out []impl
		for _, n := range names {
			out = append(out, byName[n])
		}
		return out
	}
	t.Run("per-object", func(t *testing.T) {
		differential(t, pick("memory", "redis", "cluster", "redis-compact", "cluster-compact"), 0)
	})
	t.Run("buckets", func(t *testing.T) {
		differential(t, pick("memory", "redis-buckets", "cluster-buckets"), 0)
	})
	t.Run("buckets-idle", func(t *testing.T) {
		differential(t, pick("memory", "redis-buckets", "cluster-buckets"), 20*time.Second)
	})
}

// differential runs the sequence on the stores of ims with idle time ttl
// (0: none). With ttl, every step moves the clocks by 0-3 s.
func differential(t *testing.T, ims []impl, ttl time.Duration) {
	var envs []env
	var names []string
	for _, im := range ims {
		envs = append(envs, im.open(t, ttl))
		names = append(names, im.name)
	}
	rng := rand.New(rand.NewPCG(42, 7))
	// Different IDs: compact tags of different topics may collide.
	parts := []state.Partition{{Topic: "d", ID: 0}, {Topic: "d", ID: 1}, {Topic: "e", ID: 2}}
	// Per partition: the epoch and offset a well-behaved owner believes.
	type view struct{ epoch, next int64 }
	views := map[state.Partition]*view{}
	counts := map[string]int{}
	for step := 0; step < 1500; step++ {
		p := parts[rng.IntN(len(parts))]
		v := views[p]
		if v == nil {
			v = &view{epoch: 1, next: -1}
			views[p] = v
		}
		var results []string
		if ttl > 0 {
			d := time.Duration(rng.IntN(3000)) * time.Millisecond
			for _, en := range envs {
				en.advance(d)
			}
		}
		switch op := rng.IntN(10); {
		case op == 0: // claim with a random epoch near the current one
			e := v.epoch + int64(rng.IntN(3)) - 1
			for _, en := range envs {
				next, err := en.store.Claim(ctx, p, e)
				results = append(results, fmt.Sprintf("%s %d", errClass(err), next))
				if err == nil && en.store == envs[0].store {
					v.epoch, v.next = e, next
				}
			}
		case op <= 7: // commit, usually from the believed offset
			from := v.next
			if rng.IntN(5) == 0 {
				from += int64(rng.IntN(5)) - 2
				if from < -1 {
					from = -1
				}
			}
			to := from + int64(rng.IntN(4))
			if to < 0 {
				to = 0
			}
			epoch := v.epoch
			if rng.IntN(8) == 0 {
				epoch += int64(rng.IntN(3)) - 1
			}
			var w []state.Write
			for k := rng.IntN(6); k > 0; k-- {
				o := fmt.Sprint("o", rng.IntN(8))
				if rng.IntN(4) == 0 {
					w = append(w, state.Write{Object: o})
				} else {
					w = append(w, state.Write{Object: o, Value: []byte(fmt.Sprint(step, "/", k))})
				}
			}
			for i, en := range envs {
				err := en.store.Commit(ctx, p, epoch, from, to, w)
				results = append(results, fmt.Sprintf("%s expired %d", errClass(err), en.store.(state.ExpiryCounter).Expired()))
				if errClass(err) == "other" {
					t.Logf("%s: %v", names[i], err)
				}
				if i == 0 && err == nil {
					v.next = to
				}
			}
		default: // read
			objs := []string{"o0", "o3", "o7", "nope"}
			for _, en := range envs {
				g, err := en.store.Get(ctx, p, objs, nil)
				results = append(results, fmt.Sprintf("%s %q", errClass(err), g))
			}
		}
		counts[strings.Fields(results[0])[0]]++
		for i := 1; i < len(results); i++ {
			if results[i] != results[0] {
				t.Fatalf("step %d on %v: %s gives %s, %s gives %s", step, p, names[0], results[0], names[i], results[i])
			}
		}
	}
	for _, p := range parts {
		want, err := envs[0].store.(state.Snapshotter).Snapshot(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(envs); i++ {
			got, err := envs[i].store.(state.Snapshotter).Snapshot(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			renamed := state.PartitionSnapshot{Next: want.Next, Objects: map[string][]byte{}}
			for o, v := range want.Objects {
				renamed.Objects[envs[i].name(p, o)] = v
			}
			if err := equalSnapshots(got, renamed); err != nil || got.Epoch != want.Epoch {
				t.Fatalf("%v: %s snapshot differs from memory: %v (epochs %d, %d)", p, names[i], err, got.Epoch, want.Epoch)
			}
		}
	}
	if n := envs[0].store.(state.ExpiryCounter).Expired(); ttl > 0 && n == 0 {
		t.Errorf("no object expired with idle time %v", ttl)
	} else if ttl > 0 {
		t.Logf("%d objects expired, counted alike by every store", n)
	}
	// The sequence must exercise every outcome.
	for _, c := range []string{"ok", "mismatch", "fenced", "repeat"} {
		if counts[c] == 0 {
			t.Errorf("no commit ended %s: %v", c, counts)
		}
	}
}
