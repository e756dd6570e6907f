package pooled

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// With an infinite dispersion K the over-dispersed posterior is Pooled's;
// with a very large K it is close to it (the grid's resolution).
func TestNBPoissonLimit(t *testing.T) {
	cfg := mustCfg(t)
	g := estimators.GammaPrior{Shape: 1.5, Rate: 3e5}
	for _, ev := range []estimators.Evidence{{X: 0, E: 2e5}, {X: 2, E: 4e5}, {X: 7, E: 1e6}} {
		want, ok := estimators.Pooled(g, ev, cfg)
		if !ok {
			t.Fatal("pooled")
		}
		got, ok := NB(NBPrior{g, math.Inf(1)}, ev, 2, cfg)
		if !ok || got != want {
			t.Fatalf("K = ∞: %+v, want %+v", got, want)
		}
		got, ok = NB(NBPrior{g, 1e9}, ev, 2, cfg)
		if !ok || math.Abs(got.Rate/want.Rate-1) > 0.02 || math.Abs(got.Hi/want.Hi-1) > 0.02 {
			t.Fatalf("K = 1e9: %+v, want %+v", got, want)
		}
	}
}

// The moment fit recovers a known population with bursts: λ ~ Gamma(2,
// 2e5), each half's count Poisson(λ·u·e) with u ~ Gamma(k, k), k = 1.5; and
// with the fitted prior the intervals cover the true rates at about 95 %.
func TestDispersionPriorAndCoverage(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const shape, rate, k = 2.0, 2e5, 1.5
	type obj struct{ lam, x, e float64 }
	var ds DispersionStats
	var objs []obj
	for i := 0; i < 20000; i++ {
		lam := gammaDraw(rng, shape, rate)
		e := 1e5 * (1 + 4*rng.Float64())
		xa := poissonDraw(rng, lam*gammaDraw(rng, k, k)*e/2)
		xb := poissonDraw(rng, lam*gammaDraw(rng, k, k)*e/2)
		ds.Add(estimators.Evidence{X: xa, E: e / 2}, estimators.Evidence{X: xb, E: e / 2})
		objs = append(objs, obj{lam, xa + xb, e})
	}
	p, ok := ds.Prior()
	if !ok {
		t.Fatal("no prior")
	}
	if math.Abs(p.Shape/shape-1) > 0.15 || math.Abs(p.Rate/rate-1) > 0.15 || math.Abs(p.K/k-1) > 0.25 {
		t.Fatalf("fitted %+v, want shape %v rate %v K %v", p, shape, rate, k)
	}
	cov, n := 0, 0
	for _, o := range objs[:3000] {
		est, ok := NB(p, estimators.Evidence{X: o.x, E: o.e}, 2, cfg)
		if !ok {
			t.Fatal("estimate")
		}
		n++
		if est.Lo <= o.lam && o.lam <= est.Hi {
			cov++
		}
	}
	if c := float64(cov) / float64(n); c < 0.93 || c > 0.97 {
		t.Fatalf("coverage %.3f", c)
	}
}
