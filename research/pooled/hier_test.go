package pooled

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// LevelDrift recovers the increment variance of a log-level random walk
// net of the Poisson noise of each period's count (eq. H1).
func TestLevelDriftRecoversTau2(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tau2 := range []float64{0, 0.25, 1} {
		var all LevelDrift
		for site := 0; site < 4000; site++ {
			var d LevelDrift
			l := math.Log(20.0) // noise 1/20 + 1/20 a pair: uncorrected it fails τ² = 0
			for h := 0; h < 4; h++ {
				x := poissonDraw(rng, math.Exp(l))
				d.AddPeriod(estimators.PoolStats{N: 1, X: x, E: 1})
				l += math.Sqrt(tau2) * rng.NormFloat64()
			}
			all.N += d.N
			all.SS += d.SS
			all.Noise += d.Noise
		}
		got, ok := all.Var()
		// 12000 increments: the estimate's standard error is about
		// τ²·√(2/12000) + the noise term's, < 0.03 here.
		if !ok || math.Abs(got-tau2) > 0.05+0.05*tau2 {
			t.Errorf("τ² = %g: got %g (ok %v)", tau2, got, ok)
		}
	}
	var d LevelDrift
	if _, ok := d.Var(); ok {
		t.Error("an empty LevelDrift has a variance")
	}
	d.AddPeriod(estimators.PoolStats{X: 5, E: 1})
	d.AddPeriod(estimators.PoolStats{X: 0, E: 1}) // breaks the chain
	d.AddPeriod(estimators.PoolStats{X: 5, E: 1})
	if d.N != 0 {
		t.Errorf("a period without a change must break the chain: %d pairs", int(d.N))
	}
}

// WithLevelVar matches the moments of θ·e^η (eq. H2), checked by Monte
// Carlo; τ² = 0 leaves the prior unchanged.
func TestWithLevelVarMoments(t *testing.T) {
	g := estimators.GammaPrior{Shape: 2, Rate: 4}
	if WithLevelVar(g, 0) != g {
		t.Error("τ² = 0 changed the prior")
	}
	const tau2, n = 0.3, 400000
	rng := rand.New(rand.NewPCG(1, 2))
	var s, s2 float64
	for i := 0; i < n; i++ {
		th := (rng.ExpFloat64() + rng.ExpFloat64()) / g.Rate // Gamma(2, 4)
		l := th * math.Exp(math.Sqrt(tau2)*rng.NormFloat64())
		s += l
		s2 += l * l
	}
	mean, v := s/n, s2/n-(s/n)*(s/n)
	w := WithLevelVar(g, tau2)
	if math.Abs(Mean(w)-mean) > 0.01*mean {
		t.Errorf("mean %g, Monte Carlo %g", Mean(w), mean)
	}
	if gv := w.Shape / (w.Rate * w.Rate); math.Abs(gv-v) > 0.04*v {
		t.Errorf("variance %g, Monte Carlo %g", gv, v)
	}
	if !(w.Shape < g.Shape) {
		t.Errorf("a drifting level must widen the prior: shape %g ≥ %g", w.Shape, g.Shape)
	}
}

func TestShrinkLevelAndWithMean(t *testing.T) {
	cases := []struct{ l, v, lg, om, want float64 }{
		{1, 0, 3, 1, 1},   // a certain site level stays
		{1, 1, 3, 0, 3},   // no spread between sites: all sites' level
		{1, 1, 3, 1, 2},   // equal precisions: the midpoint
		{1, 1, 3, 3, 1.5}, // (1/1 + 3/3) / (1 + 1/3)
	}
	for _, c := range cases {
		if got := ShrinkLevel(c.l, c.v, c.lg, c.om); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ShrinkLevel(%v): %g, want %g", c, got, c.want)
		}
	}
	g := WithMean(estimators.GammaPrior{Shape: 0.5, Rate: 2}, 3)
	if g.Shape != 0.5 || math.Abs(Mean(g)-3) > 1e-12 {
		t.Errorf("WithMean: %+v", g)
	}
}

// Lasting inverts eq. H4: the variance of λ = θ·u (u ~ Gamma(k, k)) is
// σ_θ²(1 + 1/k) + μ²/k (checked by Monte Carlo), and from the gamma with
// those moments Lasting(k) returns θ's prior; k = ∞ leaves the prior as it
// is, and a burst share above the whole variance falls to the floor.
func TestLastingInvertsH4(t *testing.T) {
	const a, b, k = 2.5, 4.0, 1.5
	mu, s2 := a/b, a/(b*b)
	vw := s2*(1+1/k) + mu*mu/k
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 400000
	var s, ss float64
	for i := 0; i < n; i++ {
		l := gammaDraw(rng, a, b) * gammaDraw(rng, k, k)
		s += l
		ss += l * l
	}
	if mv := ss/n - (s/n)*(s/n); math.Abs(mv/vw-1) > 0.03 {
		t.Errorf("H4: Monte Carlo variance %g, formula %g", mv, vw)
	}
	whole := estimators.GammaPrior{Shape: mu * mu / vw, Rate: mu / vw}
	got := Lasting(whole, k)
	if math.Abs(got.Shape/a-1) > 1e-9 || math.Abs(got.Rate/b-1) > 1e-9 {
		t.Errorf("Lasting(%g) = %+v, want shape %g rate %g", k, got, a, b)
	}
	if Lasting(whole, math.Inf(1)) != whole {
		t.Error("k = ∞ changed the prior")
	}
	// bursts alone explain more than the whole variance: the floor (CV 32 %)
	if f := Lasting(estimators.GammaPrior{Shape: 4, Rate: 4}, 0.5); math.Abs(f.Shape-estimators.MaxShape) > 1e-9 || math.Abs(Mean(f)-1) > 1e-12 {
		t.Errorf("floor: %+v", f)
	}
}

// BurstPool (eq. H5) recovers a dispersion shared by many small sites,
// each of whose own 1/k̂ is noisy, and gives no bursts (k̄ = ∞ or nearly)
// when there are none.
func TestBurstPoolRecoversK(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []float64{math.Inf(1), 2} {
		var pool BurstPool
		var spread moments1
		for site := 0; site < 400; site++ {
			shape := 1 + 3*rng.Float64()
			rate := shape / (0.5 + 4*rng.Float64()) // site mean 0.5–4.5 per period
			var ds DispersionStats
			for i := 0; i < 30; i++ {
				th := gammaDraw(rng, shape, rate)
				u := func() float64 {
					if math.IsInf(k, 1) {
						return 1
					}
					return gammaDraw(rng, k, k)
				}
				ds.Add(estimators.Evidence{X: poissonDraw(rng, th*u()), E: 1}, estimators.Evidence{X: poissonDraw(rng, th*u()), E: 1})
			}
			if v, ok := ds.InvK(); ok {
				spread.add(v)
			}
			pool.Add(ds)
		}
		got := 1 / pool.K()
		// 400 sites: the pooled 1/k̂ has a standard error about the sites'
		// spread / 20 (one site's 1/k̂ spreads by more than 0.1 here)
		se := spread.sd() / 20
		if want := 1 / k; math.Abs(got-want) > 4*se || spread.sd() < 0.1 {
			t.Errorf("k = %g: pooled 1/k %g (standard error %g), one site's 1/k̂ spreads %g", k, got, se, spread.sd())
		}
	}
	var empty BurstPool
	if !math.IsInf(empty.K(), 1) {
		t.Error("an empty pool has bursts")
	}
}

type moments1 struct{ n, s, ss float64 }

func (m *moments1) add(x float64) { m.n++; m.s += x; m.ss += x * x }
func (m moments1) sd() float64 {
	mu := m.s / m.n
	return math.Sqrt((m.ss/m.n - mu*mu) * m.n / (m.n - 1))
}
