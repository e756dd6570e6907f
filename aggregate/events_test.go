package aggregate

import (
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
)

// TestCompleteEventsPublishPoisson: change events of a complete history
// (records.KindChange, and changes-tsv visits written before that kind)
// publish poisson_events, (N+½)/(T+τ₀), not a visit-based estimator.
func TestCompleteEventsPublishPoisson(t *testing.T) {
	m := DefaultModel()
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		obs  func(i int) records.Observation
	}{
		{"change kind", func(i int) records.Observation {
			return records.Observation{Object: "a.xml", Time: t0.Add(time.Duration(i) * 30 * 24 * time.Hour), Kind: records.KindChange, Changed: records.Changed}
		}},
		{"old changes-tsv record", func(i int) records.Observation {
			return records.Observation{Object: "a.xml", Time: t0.Add(time.Duration(i) * 30 * 24 * time.Hour), Kind: records.KindVisit, Changed: records.Changed, Format: "changes-tsv"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Object
			for i := 0; i <= 10; i++ {
				obs := tc.obs(i)
				var eff Effects
				if out := o.Apply(&obs, &m, &eff); out != Applied {
					t.Fatalf("observation %d: %v", i, out)
				}
			}
			var scratch estimators.Estimates
			rec, ok := o.ChangeEstimate("a.xml", &m, &scratch)
			if !ok || rec.RatePerS == nil || rec.Estimator != estimators.KeyPoissonEvents {
				t.Fatalf("estimate %+v", rec)
			}
			T := 10 * 30 * 86400.0
			if want := 10.5 / (T + 43200); *rec.RatePerS != want {
				t.Errorf("rate %v, want %v", *rec.RatePerS, want)
			}
			if _, ok := rec.Estimates[estimators.KeyCGMImproved]; ok {
				t.Error("cgm_improved published for a complete history")
			}
			if rec.CI95 == nil || rec.CI95[0] >= *rec.RatePerS || rec.CI95[1] <= *rec.RatePerS {
				t.Errorf("ci95 %v", rec.CI95)
			}
		})
	}
}
