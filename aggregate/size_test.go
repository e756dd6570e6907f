package aggregate

import (
	"fmt"
	"math/bits"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// The state budget is 256 bytes of Redis MEMORY USAGE per object (SPEC,
// State), the object's own rhythm included (issue 36). In the bucketed
// layout (docs/state-layout.md) an object is one field of a bucket hash,
// whose values (6-byte stamp + state, over hash-max-listpack-value's 64
// bytes) make it a hashtable; Redis 7.0 counts per field: the dict entry
// (24), the 10-byte field as an sds of 14 bytes (jemalloc: 16), the value
// as an sds of 6+n+4 bytes (jemalloc's class, jemallocClass), and one or
// two 8-byte slots of the bucket's table (it doubles when full: ≤ 16);
// the bucket's own 104 bytes are shared by its objects (≤ 1 byte from 104
// objects a bucket; the design point is 3,800). So an object of n state
// bytes costs at most redisFieldBytes(n) = 24+16+16+1+jemallocClass(n+10)
// and n ≤ 182 keeps it within 256 (jemalloc's 192-byte class: 249); from
// 183 bytes on it costs 281. Measured this way (redis-server 7.0.15, one
// hash of 3,000 fields, MEMORY USAGE … SAMPLES 0): 243 bytes per field
// for n = 176–182, 275 for n = 183–214.
//
// MEMORY USAGE is a bucket's, so the bytes per object Redis holds are a
// bucket's mean over its objects (SHA-256 spreads a partition's objects
// uniformly over its buckets): the budget holds when the mean of
// redisFieldBytes over the objects is ≤ 256. The worst population is one
// class alone, so each class's mean is checked.
const (
	maxObjectBytes = 256
	maxValueBytes  = 182 // the largest state with redisFieldBytes ≤ 256
)

// redisFieldBytes is an upper bound on the MEMORY USAGE share of one
// object of n state bytes in a bucket hash (see maxObjectBytes).
func redisFieldBytes(n int) int { return 24 + 16 + 16 + 1 + jemallocClass(6+n+4) }

// jemallocClass is the size class jemalloc (16-byte quantum) allocates
// for n bytes: multiples of 16 up to 128, then four classes per doubling.
func jemallocClass(n int) int {
	if n <= 8 {
		return 8
	}
	if n <= 128 {
		return (n + 15) &^ 15
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) / step * step
}

// TestJemallocClass: the classes of jemalloc's size table around the
// budget, and the derived limit.
func TestJemallocClass(t *testing.T) {
	for n, want := range map[int]int{1: 8, 9: 16, 14: 16, 100: 112, 129: 160, 160: 160, 161: 192, 192: 192, 193: 224, 256: 256, 257: 320, 513: 640} {
		if got := jemallocClass(n); got != want {
			t.Errorf("jemallocClass(%d) = %d, want %d", n, got, want)
		}
	}
	if redisFieldBytes(maxValueBytes) > maxObjectBytes || redisFieldBytes(maxValueBytes+1) <= maxObjectBytes {
		t.Errorf("maxValueBytes %d: %d and %d bytes", maxValueBytes, redisFieldBytes(maxValueBytes), redisFieldBytes(maxValueBytes+1))
	}
}

// TestEncodedSizeLongHistories builds objects with 30 days of crawler,
// proxy and mixed history (sim.History: up to thousands of observations,
// the largest states the aggregator keeps) and checks their Redis bytes
// against the budget: every class's mean redisFieldBytes fits. research/cmd/benchreport
// measures the same workload's MEMORY USAGE in a real Redis.
func TestEncodedSizeLongHistories(t *testing.T) {
	m := DefaultModel()
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	rng := sim.NewRand(11, 7)
	perClass := 400
	if raceEnabled {
		perClass = 50 // the race detector slows the 480,000 observations per class twentyfold
	}
	for _, class := range []sim.HistoryClass{sim.HistoryCrawl, sim.HistoryProxy, sim.HistoryMixed} {
		// Apply the objects' observations in time order, as a partition
		// does, with their sites' seasonal profiles (issue 14): accesses
		// enter the access windows at the profiles' operational time.
		type ev struct {
			i   int
			obs records.Observation
		}
		var evs []ev
		names := make([]string, perClass)
		for i := 0; i < perClass; i++ {
			names[i] = fmt.Sprintf("https://site%d.example.org/%s/page-%07d.html", i%101, class, i)
			sim.History(rng, class, names[i], start, 30, func(ob *records.Observation) {
				evs = append(evs, ev{i, *ob})
			})
		}
		sort.SliceStable(evs, func(a, b int) bool { return evs[a].obs.Time.Before(evs[b].obs.Time) })
		objs := make([]Object, perClass)
		det := newDetector(&m)
		var eff Effects
		for k := range evs {
			eff.Reset()
			det.apply(names[evs[k].i], det.site(Site(names[evs[k].i])), &objs[evs[k].i], &evs[k].obs, &eff)
		}
		active, activeChange := 0, 0
		for _, e := range det.sites {
			if e.st.Access.Active() {
				active++
			}
			if e.st.Change.Active() {
				activeChange++
			}
		}
		var sizes []int
		obs := len(evs)
		redis := 0
		for i := range objs {
			n := len(objs[i].AppendBinary(nil))
			sizes = append(sizes, n)
			redis += redisFieldBytes(n)
		}
		t.Logf("%s: %d access and %d change profiles active of %d sites", class, active, activeChange, len(det.sites))
		sort.Ints(sizes)
		sum, over := 0, 0
		for _, s := range sizes {
			sum += s
			if s > maxValueBytes {
				over++
			}
		}
		p99, worst := sizes[len(sizes)*99/100], sizes[len(sizes)-1]
		mean := float64(redis) / float64(perClass)
		t.Logf("%s: %.0f observations/object, encoded mean %.1f, p99 %d, max %d bytes, %d of %d above %d; Redis bytes per object (mean) ≤ %.1f",
			class, float64(obs)/float64(perClass), float64(sum)/float64(perClass), p99, worst, over, perClass, maxValueBytes, mean)
		if mean > maxObjectBytes {
			t.Errorf("%s: Redis bytes per object %.1f > %d", class, mean, maxObjectBytes)
		}
	}
}
