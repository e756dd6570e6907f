package aggregate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/wire"
)

// driftSiteLog is one site of n pages visited daily for days days whose
// rates swap halfway: the even pages change every 3 days on average
// (Poisson) until the middle and every 200 days after, the odd pages the
// other way round; stationary keeps every page at its first rate, drawn
// from a Gamma(1) population of mean 1/10 per day.
func driftSiteLog(seed uint64, n, days int, stationary bool) []byte {
	r := rand.New(rand.NewPCG(seed, 33))
	half := float64(days) * 86400 / 2
	var evs []timedObs
	for i := 0; i < n; i++ {
		before, after := 1/(3*86400.0), 1/(200*86400.0)
		if i%2 == 1 {
			before, after = after, before
		}
		if stationary {
			before = r.ExpFloat64() / (10 * 86400)
			after = before
		}
		// acc is the time of the next change (the draws are added to it
		// by appendVisits): the rate in force there decides the draw, a
		// draw that crosses the middle is redrawn from it at the new rate
		// (memoryless).
		acc := r.ExpFloat64() / before
		if acc > half {
			acc = half + r.ExpFloat64()/after
		}
		next := acc
		draw := func() float64 {
			x := acc
			if acc < half {
				acc += r.ExpFloat64() / before
				if acc > half {
					acc = half + r.ExpFloat64()/after
				}
			} else {
				acc += r.ExpFloat64() / after
			}
			return acc - x
		}
		evs = appendVisits(evs, fmt.Sprintf("http://drift.example/p/%d", i), dailyVisits(days, 60*float64(i)), next, draw)
	}
	return encodeLog(evs)
}

// TestSiteTemperPlan: the site state keeps the prequential scores of its
// visits (estimators/tempered.go T3), and every published change record
// carries what its plan posterior (T1) is made of: plan_evidence is the
// stored object's evidence, plan_prior the stored site's prior and
// plan_omega the ω its scores choose (exactly: the same values), and
// rate_per_s is not Gamma(α₀ + ωX, β₀ + ωE)'s mean for most pages when
// ω < 1. On a site whose rates swap halfway the scores pick ω ≤ 0.2 (a
// page's past says little about its next visit); on a stationary site
// ω ≥ 0.5. The query API's path rebuilds every record byte for byte, and a
// replay stores the same site state and publishes the same records.
func TestSiteTemperPlan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stationary bool
		ok         func(w float64) bool
	}{
		{"drift", false, func(w float64) bool { return w <= 0.2 }},
		{"stationary", true, func(w float64) bool { return w >= 0.5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := driftSiteLog(5, 80, 120, tc.stationary)
			cfg := DefaultConfig()
			cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
			run := runSite(t, cfg, in, "drift.example")
			m := &cfg.Model
			omega, _ := estimators.TemperChoose(&run.site.Temper)
			t.Logf("ω %v, scores %v", omega, run.site.Temper)
			if run.site.Temper == ([estimators.TemperPoints]float64{}) || !tc.ok(omega) {
				t.Fatalf("ω %v from scores %v", omega, run.site.Temper)
			}
			prior, ok := run.site.Pool.Prior()
			if !ok {
				t.Fatal("no prior")
			}
			differ := 0
			for i, n := range run.names {
				var o Object
				if err := o.DecodeBinary(run.objects[i]); err != nil {
					t.Fatal(err)
				}
				rec := run.recs[n]
				ev, ok := o.Change.Evidence(&m.Estimators)
				if !ok || rec.PlanEvidence == nil || rec.PlanPrior == nil || rec.PlanOmega == nil {
					t.Fatalf("%s: no plan fields (evidence %v)", n, ok)
				}
				if *rec.PlanOmega != omega || *rec.PlanEvidence != [2]float64{ev.X, ev.E} || *rec.PlanPrior != [2]float64{prior.Shape, prior.Rate} {
					t.Errorf("%s: plan evidence %v prior %v ω %v, want %v %v %v", n, *rec.PlanEvidence, *rec.PlanPrior, *rec.PlanOmega, ev, prior, omega)
				}
				a, b := prior.Shape+omega*ev.X, prior.Rate+omega*ev.E
				if rec.RatePerS != nil && math.Abs(*rec.RatePerS-a/b) > 1e-9*a/b {
					differ++
				}
			}
			if omega < 1 && differ < len(run.names)/2 {
				t.Errorf("%d of %d pages publish their plan posterior's mean as rate_per_s", len(run.names)-differ, len(run.names))
			}
			run.checkRebuilt(t, m)
			run.checkReplay(t, cfg, in)
		})
	}
}

// TestSiteStateTemperEncoding: the scores round-trip in version 5 (after
// the spacing sums, written even when empty), at 8 bytes each, a count and
// the legacy byte; the golden states of versions 3 (a legacy pool) and 4
// (end-spacing sums), written before the scores existed, decode with none
// and encode again as they were, the golden version 5 decodes to its
// scores; a legacy pool with scores keeps its mark; a score above 0 or
// infinite, or a legacy byte other than 0 and 1, is corrupt, and scores of
// another grid's length are dropped.
func TestSiteStateTemperEncoding(t *testing.T) {
	checkGoldenSites(t, siteVersionFlags, siteVersionBack, siteVersionTemper)
	g := goldenSites()
	v3, v4, v5 := g[siteVersionFlags], g[siteVersionBack], g[siteVersionTemper]
	b := v5.AppendBinary(nil)
	if n := len(b) - len(v4.AppendBinary(nil)); n != 8*estimators.TemperPoints+2 {
		t.Errorf("the scores cost %d bytes, want %d (a count, the legacy byte, the scores)", n, 8*estimators.TemperPoints+2)
	}
	var d SiteState
	// A legacy pool with scores keeps its mark (and has no end-spacing sums).
	lv := v3
	lv.Temper = v5.Temper
	if lb := lv.AppendBinary(nil); lb[0] != siteVersionTemper || len(lb)-len(v3.AppendBinary(nil)) != 8*estimators.TemperPoints+2 {
		t.Errorf("legacy pool with scores: version %d, %d bytes more than version 3", lb[0], len(lb)-len(v3.AppendBinary(nil)))
	} else if err := d.DecodeBinary(lb); err != nil || d != lv {
		t.Errorf("legacy pool with scores: %v, %+v", err, d.Flags)
	}
	// Without spacing sums version 5 writes them empty (65 bytes).
	only := SiteState{Temper: v5.Temper}
	if err := d.DecodeBinary(only.AppendBinary(nil)); err != nil || d != only {
		t.Errorf("scores alone: %v, %+v", err, d)
	}
	for _, v := range []float64{math.NaN(), math.Inf(-1), 0.5} {
		bad := v5
		bad.Temper[3] = v
		if err := d.DecodeBinary(bad.AppendBinary(nil)); err == nil {
			t.Errorf("score %v decoded", v)
		}
	}
	// The legacy byte sits after the five sums: 2 is corrupt.
	mark := len((&SiteState{Sitemap: v3.Sitemap, Flags: v3.Flags}).AppendBinary(nil))
	if b[mark] != 0 {
		t.Fatalf("byte %d after the five sums is %d, want the legacy byte 0", mark, b[mark])
	}
	badMark := append([]byte{}, b...)
	badMark[mark] = 2
	if err := d.DecodeBinary(badMark); err == nil {
		t.Error("legacy byte 2 decoded")
	}
	// Another grid's scores (3 of them): dropped, the rest decodes.
	at := len((&SiteState{Sitemap: v4.Sitemap, Flags: v4.Flags}).AppendBinary(nil)) + 1
	other := append([]byte{}, b[:at]...)
	other = append(other, 3)
	for i := 0; i < 3; i++ {
		other = wire.AppendFloat64(other, -2)
	}
	other = append(other, b[at+1+8*estimators.TemperPoints:]...)
	if err := d.DecodeBinary(other); err != nil || d != v4 {
		t.Errorf("another grid's scores: %v, %+v", err, d.Temper)
	}
}
