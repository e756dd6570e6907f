package aggregate

import (
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// BenchmarkApplyAccessSeasonal is BenchmarkApplyAccess with the site's
// seasonal state (a profile that becomes active after the learning
// period): the cost of counting the access and of the operational time.
// Compare the two in one run (the machine is shared).
func BenchmarkApplyAccessSeasonal(b *testing.B) {
	m := DefaultModel()
	var o Object
	var st SiteState
	var eff Effects
	obs := records.Observation{Object: "o", Kind: records.KindAccess}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		obs.Time = t0.Add(time.Duration(i) * time.Second)
		eff.Reset()
		o.ApplyAt(&obs, &m, &st, &eff)
	}
}
