package plan

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// gammaPDF is the density of Gamma(a, b) at x.
func gammaPDF(a, b, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return math.Exp(a*math.Log(b) + (a-1)*math.Log(x) - b*x - lg)
}

// quadExpected is E[F(λ, f)] over λ ~ Gamma(a, a/mean) by the midpoint
// rule on ln λ (200,000 cells over 80 e-folds around the mean): the
// closed form's independent check.
func quadExpected(mean, a, f float64) float64 {
	b := a / mean
	const n = 200000
	lo, hi := math.Log(mean)-60, math.Log(mean)+20
	h := (hi - lo) / n
	s := 0.0
	for k := 0; k < n; k++ {
		l := math.Exp(lo + (float64(k)+0.5)*h)
		s += Freshness(l, f) * gammaPDF(a, b, l) * l * h
	}
	return s
}

// The closed form E[F] = f·β·J(α, τ/β) against numerical integration of
// CGM's F over the Gamma posterior, for shapes below, at and above 1.
func TestExpectedFreshnessQuadrature(t *testing.T) {
	for _, c := range []struct{ mean, shape, f float64 }{
		{1, 0.3, 1}, {1, 1, 1}, {1, 1, 0.2}, {2, 5, 1}, {0.5, 0.7, 3}, {1, 40, 0.5}, {3, 1.0000001, 2},
	} {
		got, want := ExpectedFreshness(c.mean, c.shape, c.f), quadExpected(c.mean, c.shape, c.f)
		// tolerance: the quadrature's error (midpoint rule, 2.5e-4 per
		// cell in ln λ; the tails beyond the grid < 1e-8)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("E[F](mean %g, shape %g, f %g) = %.9f, quadrature %.9f", c.mean, c.shape, c.f, got, want)
		}
	}
}

// As the shape grows at a fixed mean, the posterior concentrates and the
// expected freshness and its slope tend to CGM's F and ∂F/∂f (the
// difference is O(1/α): α = 10⁸ leaves < 10⁻⁷).
func TestExpectedFreshnessPoissonLimit(t *testing.T) {
	for _, lam := range []float64{0.1, 1, 7} {
		for _, f := range []float64{0.05, 1, 20} {
			if d := ExpectedFreshness(lam, 1e8, f) - Freshness(lam, f); math.Abs(d) > 1e-7 {
				t.Errorf("λ %g f %g: E[F] − F = %g", lam, f, d)
			}
			if d := expectedSlope(lam, 1e8, f) - freshnessSlope(lam, f); math.Abs(d) > 1e-7*freshnessSlope(lam, f)+1e-12 {
				t.Errorf("λ %g f %g: slope %g, CGM's %g", lam, f, expectedSlope(lam, 1e8, f), freshnessSlope(lam, f))
			}
		}
	}
	// and CGM's worked example is recovered with near-certain rates
	pages := make([]Page, 5)
	for i := range pages {
		pages[i] = Page{Rate: float64(i + 1), Weight: 1, Shape: 1e8}
	}
	a, err := Allocate(pages, AllocConfig{Policy: PolicyFreshness, Budget: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{1.15, 1.36, 1.35, 1.14, 0} {
		if math.Abs(a.Rate[i]-w) > 0.005+1e-9 {
			t.Errorf("f[%d] = %.4f, want CGM's %.2f (printed to 2 decimals)", i, a.Rate[i], w)
		}
	}
}

// The slope is the derivative of the expected freshness (central
// differences, relative step 10⁻⁵: error O(10⁻¹⁰) relative), and its
// value at f → 0 is E[1/λ] = β/(α − 1) for α > 1.
func TestExpectedSlope(t *testing.T) {
	for _, c := range []struct{ mean, shape, f float64 }{{1, 0.5, 1}, {1, 1, 0.3}, {2, 3, 2}, {0.1, 20, 0.05}, {1, 0.9, 1e4}} {
		h := c.f * 1e-5
		num := (ExpectedFreshness(c.mean, c.shape, c.f+h) - ExpectedFreshness(c.mean, c.shape, c.f-h)) / (2 * h)
		if got := expectedSlope(c.mean, c.shape, c.f); math.Abs(got-num) > 1e-6*math.Abs(num)+1e-12 {
			t.Errorf("%+v: slope %.10g, numerical %.10g", c, got, num)
		}
	}
	if got, want := expectedSlope(2, 3, 0), (3.0/2)/(3-1); got != want {
		t.Errorf("slope at f=0: %g, want β/(α−1) = %g", got, want)
	}
	if !math.IsInf(expectedSlope(2, 1, 0), 1) {
		t.Errorf("shape 1: the slope at f=0 must be infinite")
	}
}

// KKT with uncertain rates: the conditions of checkKKT with the expected
// slope, on random instances mixing known and uncertain rates; a page
// whose posterior has shape ≤ 1 always gets a visit.
func TestAllocatePosteriorKKT(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 33))
	for trial := 0; trial < 40; trial++ {
		pages := randomPages(rng, 5+rng.IntN(150), 1+rng.IntN(5))
		for i := range pages {
			if rng.IntN(4) != 0 {
				pages[i].Shape = math.Exp(rng.NormFloat64() * 1.5)
			}
		}
		cfg := AllocConfig{Policy: PolicyFreshness, Budget: math.Exp(rng.NormFloat64() * 2)}
		if trial%2 == 1 {
			cfg.HostCap = cfg.Budget / float64(1+rng.IntN(4))
		}
		if trial%3 == 1 {
			cfg.MaxRate = cfg.Budget / float64(1+rng.IntN(20))
		}
		a, err := Allocate(pages, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkKKT(t, pages, cfg, a)
		capped := map[string]bool{}
		for _, c := range a.Capped {
			capped[c.Host] = true
		}
		for i, p := range pages {
			if p.uncertain() && p.Shape <= 1 && p.Weight > 0 && a.Rate[i] == 0 && !capped[p.Host] {
				t.Errorf("trial %d page %d: shape %g ≤ 1 but no visit", trial, i, p.Shape)
			}
		}
	}
}

// The allocation maximises the expected freshness: moving budget between
// two pages never raises it.
func TestPosteriorNoImprovingMove(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	pages := randomPages(rng, 60, 1)
	for i := range pages {
		pages[i].Shape = math.Exp(rng.NormFloat64())
	}
	a, err := Allocate(pages, AllocConfig{Policy: PolicyFreshness, Budget: 20})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(f []float64) float64 {
		s := 0.0
		for i, p := range pages {
			s += p.Weight * p.expected(f[i])
		}
		return s
	}
	best := obj(a.Rate)
	for k := 0; k < 2000; k++ {
		i, j := rng.IntN(len(pages)), rng.IntN(len(pages))
		eps := math.Min(a.Rate[i], 1e-3)
		if i == j || eps == 0 {
			continue
		}
		f := append([]float64(nil), a.Rate...)
		f[i] -= eps
		f[j] += eps
		if v := obj(f); v > best+1e-12*math.Abs(best) {
			t.Fatalf("moving %g from page %d to %d raises the objective %.12g -> %.12g", eps, i, j, best, v)
		}
	}
}

// GammaFromInterval recovers a Gamma from its own equal-tailed interval,
// and reads an interval from 0 as the flat prior's exponential posterior.
func TestGammaFromInterval(t *testing.T) {
	for _, c := range []struct{ a, b float64 }{{0.4, 2}, {1, 1}, {3, 0.01}, {50, 7}, {2000, 1e4}} {
		lo := mathext.GammaIncRegInv(c.a, 0.025) / c.b
		hi := mathext.GammaIncRegInv(c.a, 0.975) / c.b
		mean, shape, ok := GammaFromInterval(lo, hi, 0.95)
		if !ok || math.Abs(shape/c.a-1) > 1e-6 || math.Abs(mean/(c.a/c.b)-1) > 1e-6 {
			t.Errorf("Gamma(%g, %g): got mean %g shape %g ok %v, want %g %g", c.a, c.b, mean, shape, ok, c.a/c.b, c.a)
		}
	}
	// no change in exposure U: the Poisson upper bound −ln(0.025)/U is
	// the 97.5 % quantile of Gamma(1, U)
	U := 1000.0
	mean, shape, ok := GammaFromInterval(0, -math.Log(0.025)/U, 0.95)
	if !ok || shape != 1 || math.Abs(mean-1/U) > 1e-12 {
		t.Errorf("zero estimate: mean %g shape %g ok %v, want 1/U = %g, 1", mean, shape, ok, 1/U)
	}
	for _, bad := range [][3]float64{{0, 0, 0.95}, {2, 1, 0.95}, {0, math.Inf(1), 0.95}, {1, 2, 1}} {
		if _, _, ok := GammaFromInterval(bad[0], bad[1], bad[2]); ok {
			t.Errorf("GammaFromInterval%v: want not ok", bad)
		}
	}
}
