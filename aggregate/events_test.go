package aggregate

import (
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
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

// TestWindowRatesMeaningful: fitted window rates are published in
// estimates only with MinPoints points and within windows.MaxRateRatio of
// N(t)/t (issue 31: a Duane rate 337 × (changes+1)/span from 3 points).
// Three daily changes then a year's quiet gave a Weibull rate 1/14 of
// N(t)/t.
func TestWindowRatesMeaningful(t *testing.T) {
	m := DefaultModel()
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var o Object
	const day = 24 * time.Hour
	at := []time.Duration{0, day, 2 * day, 3 * day, 400 * day}
	for i, d := range at {
		obs := records.Observation{Object: "http://a.example/", Time: t0.Add(d), Kind: records.KindVisit, Digest: string(rune('a' + i))}
		var eff Effects
		o.Apply(&obs, &m, &eff)
	}
	var scratch estimators.Estimates
	rec, ok := o.ChangeEstimate("http://a.example/", &m, &scratch)
	if !ok || rec.Window == nil {
		t.Fatalf("estimate %+v", rec)
	}
	intuitive, ok := rec.Estimates["intuitive"]
	if !ok {
		t.Fatalf("no intuitive rate: %+v", rec.Estimates)
	}
	for _, k := range []string{"weibull", "duane"} {
		v, ok := rec.Estimates[k]
		if !ok {
			continue
		}
		if rec.Window.Points < int64(m.Windows.MinPoints) || v > windows.MaxRateRatio*intuitive || v*windows.MaxRateRatio < intuitive {
			t.Errorf("%s = %.3g published: %d points, %.1f × N(t)/t", k, v, rec.Window.Points, v/intuitive)
		}
	}
	// The rule itself.
	sum := windows.Summary{Points: 10}
	sum.Rates, sum.HasRates = [3]float64{1e-8, 2e-8, 3.37e-6}, [3]bool{true, true, true}
	if !meaningfulWindowRate(1, sum, &m) || meaningfulWindowRate(2, sum, &m) {
		t.Error("ratio 2 must pass, ratio 337 must not")
	}
	sum.Points = 3
	if meaningfulWindowRate(1, sum, &m) || !meaningfulWindowRate(0, sum, &m) {
		t.Error("3 points: only the intuitive rate")
	}
}

// TestGonePages: a page that only answers 404 is published as gone (it
// had no record); a page deleted after two visits is gone without a
// rate, whatever the source says of its error page's change (Heritrix
// JSON gives 404s a digest and a change flag); content seen again ends it.
func TestGonePages(t *testing.T) {
	m := DefaultModel()
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	visit := func(o *Object, day int, status int, digest string, ch records.ChangeFlag) {
		obs := records.Observation{Object: "http://a.example/x", Time: t0.Add(time.Duration(day) * 24 * time.Hour), Kind: records.KindVisit, Status: status, Digest: digest, Changed: ch}
		var eff Effects
		if out := o.Apply(&obs, &m, &eff); out != Applied {
			t.Fatalf("day %d: %v", day, out)
		}
	}
	var scratch estimators.Estimates
	var only404 Object
	visit(&only404, 0, 404, "sha1:E1", records.ChangeUnknown)
	visit(&only404, 7, 404, "sha1:E2", records.ChangeUnknown)
	rec, ok := only404.ChangeEstimate("http://a.example/x", &m, &scratch)
	if !ok || !rec.Gone || rec.RatePerS != nil || len(rec.Estimates) != 0 || rec.TTLS != nil {
		t.Fatalf("404-only: %v %+v", ok, rec)
	}
	var deleted Object
	visit(&deleted, 0, 200, "sha1:A", records.ChangeUnknown)
	visit(&deleted, 1, 200, "sha1:B", records.ChangeUnknown)
	for d := 2; d < 6; d++ {
		visit(&deleted, d, 404, "sha1:E"+string(rune('0'+d)), records.Changed)
	}
	rec, ok = deleted.ChangeEstimate("http://a.example/x", &m, &scratch)
	if !ok || !rec.Gone || rec.RatePerS != nil || rec.NextVisit != nil || rec.Changes != 1 || rec.Observations != 2 {
		t.Fatalf("deleted: %v %+v", ok, rec)
	}
	visit(&deleted, 9, 200, "sha1:C", records.ChangeUnknown)
	rec, _ = deleted.ChangeEstimate("http://a.example/x", &m, &scratch)
	if rec.Gone || rec.RatePerS == nil || rec.Observations != 3 {
		t.Fatalf("back: %+v", rec)
	}
	// The state round-trips with the mark.
	var g Object
	visit(&g, 0, 410, "", records.ChangeUnknown)
	b := g.AppendBinary(nil)
	var d Object
	if err := d.DecodeBinary(b); err != nil || !d.Change.Gone() {
		t.Fatalf("decode: %v gone %v", err, d.Change.Gone())
	}
}
