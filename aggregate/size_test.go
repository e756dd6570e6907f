package aggregate

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// maxValueBytes is the largest encoded object that fits the state budget of
// 256 bytes of Redis MEMORY USAGE under compact keys: a value of n bytes is
// an sds string of n+4 bytes (jemalloc rounds 189–192 up to 192), plus the
// 14-byte key (16), the string object (16) and the dict entry (24) = 248.
// One byte more moves the value into the 224-byte class: 280.
const maxValueBytes = 188

// TestEncodedSizeLongHistories builds objects with 30 days of crawler,
// proxy and mixed history (sim.History: up to thousands of observations,
// the largest states the aggregator keeps) and checks the encoded size
// against the budget: every class's 99th percentile fits. research/cmd/benchreport
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
		for i := range objs {
			sizes = append(sizes, len(objs[i].AppendBinary(nil)))
		}
		t.Logf("%s: %d access and %d change profiles active of %d sites", class, active, activeChange, len(det.sites))
		sort.Ints(sizes)
		sum := 0
		for _, s := range sizes {
			sum += s
		}
		p99, worst := sizes[len(sizes)*99/100], sizes[len(sizes)-1]
		t.Logf("%s: %.0f observations/object, encoded mean %.1f, p99 %d, max %d bytes", class,
			float64(obs)/float64(perClass), float64(sum)/float64(perClass), p99, worst)
		if p99 > maxValueBytes {
			t.Errorf("%s: p99 encoded size %d > %d bytes", class, p99, maxValueBytes)
		}
	}
}
