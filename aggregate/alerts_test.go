package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// TestBenjaminiHochberg checks the adjusted p-values against R's
// p.adjust(c(0.01, 0.04, 0.03, 0.005), method = "BH") = 0.02 0.04 0.04
// 0.02, and with the same p-values among m = 8 tests (the other four
// p = 1): twice those, capped at 1.
func TestBenjaminiHochberg(t *testing.T) {
	p := []float64{0.01, 0.04, 0.03, 0.005}
	for _, c := range []struct {
		m    int64
		want []float64
	}{{4, []float64{0.02, 0.04, 0.04, 0.02}}, {8, []float64{0.04, 0.08, 0.08, 0.04}}} {
		q := BenjaminiHochberg(p, c.m)
		for i := range q {
			if math.Abs(q[i]-c.want[i]) > 1e-12 {
				t.Errorf("m=%d: q[%d] = %v, want %v", c.m, i, q[i], c.want[i])
			}
		}
	}
	if q := BenjaminiHochberg([]float64{0.9}, 3); q[0] != 1 {
		t.Errorf("q capped at 1, got %v", q[0])
	}
}

// TestAlertBookGroupsSites: four objects of one site shifting up in one
// period become one site alert listing the three most significant; an
// object of another site stays an object alert; a candidate that is not a
// discovery at the FDR is dropped; the period's alerts come out when the
// clock passes its end.
func TestAlertBookGroupsSites(t *testing.T) {
	cfg := DefaultAlertConfig()
	cfg.SiteObjects, cfg.SiteTop = 3, 3
	b := newAlertBook(&cfg)
	t0 := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		b.Observe(t0.Add(time.Duration(i)*time.Second), true, nil)
	}
	mk := func(obj, site string, p, ratio float64) records.Alert {
		a := records.Alert{Object: obj, Site: site, Kind: records.EstimateAccess, Test: "cusum-binomial-up", PValue: p, AsOf: t0}
		a.Scope, a.Ratio, a.Observed, a.Expected = records.AlertScopeObject, ptr(ratio), 40, ptr(40/ratio)
		return a
	}
	for i, p := range []float64{1e-6, 2e-6, 3e-6, 4e-6} {
		b.Add(mk("http://a.example/"+string(rune('w'+i)), "a.example", p, 5))
	}
	b.Add(mk("http://b.example/x", "b.example", 1e-7, 2.5))
	b.Add(mk("http://c.example/y", "c.example", 0.01, 3)) // q = 0.01·100/6 > 0.01
	if out := b.Observe(t0.Add(30*time.Minute), false, nil); len(out) != 0 {
		t.Fatalf("alerts before the period closed: %d", len(out))
	}
	out := b.Observe(t0.Add(time.Hour), true, nil)
	if len(out) != 2 {
		t.Fatalf("%d alerts, want a site alert and an object alert", len(out))
	}
	s, o := out[0], out[1]
	if s.Scope != records.AlertScopeSite || s.Site != "a.example" || s.ObjectsShifted != 4 || len(s.TopObjects) != 3 ||
		s.TopObjects[0].Object != "http://a.example/w" || s.Observed != 160 || s.Severity != records.SeverityCritical {
		t.Errorf("site alert %+v", s.AlertDetail)
	}
	if o.Scope != records.AlertScopeObject || o.Object != "http://b.example/x" || o.Tested != 100 || o.Severity != records.SeverityMajor {
		t.Errorf("object alert %+v", o.AlertDetail)
	}
	// q of b.example/x: rank 1 of the 6 candidates among m = 100: 1e-5
	if math.Abs(*o.PAdjusted-1e-5) > 1e-15 || o.Adjustment != AdjustmentBH {
		t.Errorf("adjusted p %v (%s), want 1e-5", *o.PAdjusted, o.Adjustment)
	}
	if AlertKey(&s) != "site:a.example" || AlertKey(&o) != "http://b.example/x" {
		t.Errorf("keys %q %q", AlertKey(&s), AlertKey(&o))
	}
}
