package estimators

import (
	"math"
	"math/rand/v2"
	"testing"
)

// openPopulation draws n complete histories (events.go E1) with rates
// λ ~ Gamma(shape, rate): each starts at a baseline s uniform over
// [end − span, end − 30 days] and changes as a Poisson process up to end.
// It returns their Change states (fed as the aggregator feeds them).
func openPopulation(rng *rand.Rand, n int, shape, rate, end, span float64) []Change {
	cs := make([]Change, n)
	for i := range cs {
		l := gammaDraw(rng, shape, rate)
		s := end - 30*day - rng.Float64()*(span-30*day)
		cs[i].Visit(Visit{Time: s, Complete: true})
		for t := s + rng.ExpFloat64()/l; t <= end; t += rng.ExpFloat64() / l {
			cs[i].Visit(Visit{Time: t, Complete: true})
		}
	}
	return cs
}

// Known truth: a population of complete histories with rates drawn from
// Gamma(α, β) and baselines spread over six years. Their evidence is
// folded as the aggregator folds it (Evidence: the exposure to each
// object's last event) and the prior fitted as of the end of the log
// (PriorAt, P2: every exposure runs to the end). Over R replications the
// mean fitted α and α/β are within 3 standard errors of the truth (the SE
// from the replications' spread). The fit on the exposures to the last
// events (what the prior used before) overestimates the mean by far more
// than 3 SE: the quiet time after an object's last change is exposure.
func TestPoolOpenPriorKnownGamma(t *testing.T) {
	const (
		R, n  = 24, 2000
		alpha = 0.8
	)
	beta := alpha * 120 * day // mean one change in 120 days
	end := 1.7e9
	rng := rand.New(rand.NewPCG(31, 1))
	cfg := mustCfg(t)
	var sa, sa2, sm, sm2, sOld, sOld2 float64
	for r := 0; r < R; r++ {
		var open, closed PoolStats
		for _, c := range openPopulation(rng, n, alpha, beta, end, 6*365*day) {
			ev, ok := c.Evidence(cfg)
			if !ok {
				continue
			}
			open.Add(ev, 1)
			ev.Open = false
			closed.Add(ev, 1)
		}
		g, ok := open.PriorAt(end)
		if !ok {
			t.Fatalf("replication %d: no prior from %+v", r, open)
		}
		m := g.Shape / g.Rate * beta / alpha // fitted mean ÷ true mean
		sa, sa2, sm, sm2 = sa+g.Shape, sa2+g.Shape*g.Shape, sm+m, sm2+m*m
		if old, ok := closed.Prior(); ok {
			mo := old.Shape / old.Rate * beta / alpha
			sOld, sOld2 = sOld+mo, sOld2+mo*mo
		}
	}
	meanSE := func(s, s2 float64) (float64, float64) {
		m := s / R
		return m, math.Sqrt((s2/R - m*m) / (R - 1))
	}
	a, aSE := meanSE(sa, sa2)
	m, mSE := meanSE(sm, sm2)
	mo, moSE := meanSE(sOld, sOld2)
	t.Logf("fitted α %.4f ± %.4f (true %.2f); fitted mean ÷ true %.4f ± %.4f; to the last events %.3f ± %.3f", a, aSE, alpha, m, mSE, mo, moSE)
	if math.Abs(a-alpha) > 3*aSE {
		t.Errorf("fitted shape %.4f, true %.2f: %.1f SE apart (tolerance 3 SE)", a, alpha, math.Abs(a-alpha)/aSE)
	}
	if math.Abs(m-1) > 3*mSE {
		t.Errorf("fitted mean ÷ true %.4f: %.1f SE from 1 (tolerance 3 SE)", m, math.Abs(m-1)/mSE)
	}
	if !(mo-1 > 3*moSE) {
		t.Errorf("exposures to the last events: mean ÷ true %.4f ± %.4f, want the bias above 3 SE", mo, moSE)
	}
}

// (P2) is Clayton & Kaldor's fit when the open evidence's exposures are
// equal: the same prior as the closed evidence of the same exposure (to
// 1e-12 relative, rounding of the t-polynomials), at any t ≥ Latest.
// Remove undoes Add: after removing every open object the prior is the
// closed objects' alone.
func TestPoolOpenEqualExposures(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	const end = 1.6e9
	e := 200 * day
	var open, closed, mixed PoolStats
	var evs []Evidence
	for i := 0; i < 60; i++ {
		x := poissonDraw(rng, gammaDraw(rng, 1.5, 1.5*50*day)*e)
		s := end - e
		ev := Evidence{X: x, E: e * (0.5 + 0.5*rng.Float64()), Since: s, Open: true} // taken before the end
		open.Add(ev, 1)
		closed.Add(Evidence{X: x, E: e}, 1)
		evs = append(evs, ev)
	}
	for i := 0; i < 20; i++ {
		mixed.Add(Evidence{X: float64(i % 4), E: (10 + float64(i)) * day}, 1)
	}
	base, _ := mixed.Prior()
	g, ok1 := open.PriorAt(end)
	w, ok2 := closed.Prior()
	if !ok1 || !ok2 {
		t.Fatalf("no prior: %v %v", ok1, ok2)
	}
	for _, c := range [][2]float64{{g.Shape, w.Shape}, {g.Rate, w.Rate}} {
		if math.Abs(c[0]/c[1]-1) > 1e-12 {
			t.Errorf("equal exposures: open prior %+v, Clayton–Kaldor %+v", g, w)
		}
	}
	for _, ev := range evs {
		mixed.Add(ev, 1)
	}
	for _, ev := range evs {
		mixed.Remove(ev, 1)
	}
	if got, _ := mixed.PriorAt(end); math.Abs(got.Shape/base.Shape-1) > 1e-9 || math.Abs(got.Rate/base.Rate-1) > 1e-9 {
		t.Errorf("after removing the open objects: %+v, want %+v", got, base)
	}
	if mixed.ON != 0 || mixed.OX != 0 {
		t.Errorf("open sums left after Remove: %+v", mixed)
	}
}

// A complete history's pooled evidence runs to the as-of time, as its own
// estimate's exposure does (events.go E1): the posterior under the prior
// is the conjugate Gamma(α + N, β + (asOf − t₀)), not Gamma(α + N, β +
// span); an as-of before its last event is its last event.
func TestPooledEstimateCompleteAsOf(t *testing.T) {
	cfg := mustCfg(t)
	c := completeHistory(1e9, 30*day, 200*day, 300*day)
	prior := GammaPrior{Shape: 0.5, Rate: 0.5 * 365 * day}
	for _, tc := range []struct{ asOf, e float64 }{{1e9 + 2*365*day, 2 * 365 * day}, {1e9 + 100*day, 300 * day}, {0, 300 * day}} {
		got, ok := c.PooledEstimateIn(prior, tc.asOf, cfg, nil)
		want, _ := Pooled(prior, Evidence{X: 3, E: tc.e}, cfg)
		if !ok || got != want {
			t.Errorf("as of %v: %+v, want the conjugate %+v", tc.asOf, got, want)
		}
		near(t, "rate·year", got.Rate*365*day, 3.5/(0.5+tc.e/(365*day)), 1e-9)
		ev, _ := c.EvidenceAt(tc.asOf, cfg)
		if !ev.Open || ev.Since != 1e9 || ev.E != tc.e || ev.X != 3 {
			t.Errorf("as of %v: evidence %+v", tc.asOf, ev)
		}
	}
}
