package estimators

import (
	"math"
	"math/rand/v2"
	"testing"
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
				d.AddPeriod(PoolStats{N: 1, X: x, E: 1})
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
	d.AddPeriod(PoolStats{X: 5, E: 1})
	d.AddPeriod(PoolStats{X: 0, E: 1}) // breaks the chain
	d.AddPeriod(PoolStats{X: 5, E: 1})
	if d.N != 0 {
		t.Errorf("a period without a change must break the chain: %d pairs", int(d.N))
	}
}

// WithLevelVar matches the moments of θ·e^η (eq. H2), checked by Monte
// Carlo; τ² = 0 leaves the prior unchanged.
func TestWithLevelVarMoments(t *testing.T) {
	g := GammaPrior{Shape: 2, Rate: 4}
	if g.WithLevelVar(0) != g {
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
	w := g.WithLevelVar(tau2)
	if math.Abs(w.Mean()-mean) > 0.01*mean {
		t.Errorf("mean %g, Monte Carlo %g", w.Mean(), mean)
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
	g := GammaPrior{Shape: 0.5, Rate: 2}.WithMean(3)
	if g.Shape != 0.5 || math.Abs(g.Mean()-3) > 1e-12 {
		t.Errorf("WithMean: %+v", g)
	}
}
