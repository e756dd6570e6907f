package aggregate

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/sim"
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
// against the budget: every class's 99th percentile fits. cmd/benchreport
// measures the same workload's MEMORY USAGE in a real Redis.
func TestEncodedSizeLongHistories(t *testing.T) {
	m := DefaultModel()
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	rng := sim.NewRand(11, 7)
	const perClass = 400
	for _, class := range []sim.HistoryClass{sim.HistoryCrawl, sim.HistoryProxy, sim.HistoryMixed} {
		var sizes []int
		obs := 0
		for i := 0; i < perClass; i++ {
			var o Object
			var eff Effects
			name := fmt.Sprintf("https://site%d.example.org/%s/page-%07d.html", i%101, class, i)
			obs += sim.History(rng, class, name, start, 30, func(ob *records.Observation) {
				eff.Reset()
				o.Apply(ob, &m, &eff)
			})
			sizes = append(sizes, len(o.AppendBinary(nil)))
		}
		sort.Ints(sizes)
		sum := 0
		for _, s := range sizes {
			sum += s
		}
		p99, worst := sizes[len(sizes)*99/100], sizes[len(sizes)-1]
		t.Logf("%s: %.0f observations/object, encoded mean %.1f, p99 %d, max %d bytes", class,
			float64(obs)/perClass, float64(sum)/perClass, p99, worst)
		if p99 > maxValueBytes {
			t.Errorf("%s: p99 encoded size %d > %d bytes", class, p99, maxValueBytes)
		}
	}
}
