package forget

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/plan"
)

// (F2) by hand: one changed interval of 10 s at a half-life of 10 s adds
// e^{−κ·5} = 1/√2 change over 10/√2 s; (F1) halves both over the next
// 10 s. At κ = 0 the evidence is the plain count and exposure (the
// stationary conjugate posterior Gamma(α₀ + X, β₀ + E)); at κ = +Inf the
// posterior is the prior.
func TestAgedByHand(t *testing.T) {
	const a0, b0 = 0.5, 100.0
	k := math.Ln2 / 10
	cases := []struct {
		name       string
		kappa, now float64
		visits     []struct {
			t, d float64
			c    bool
		}
		wantX, wantE float64 // the evidence at now
	}{
		{"half-life 10 s, at the visit", k, 10, []struct {
			t, d float64
			c    bool
		}{{10, 10, true}}, 1 / math.Sqrt2, 10 / math.Sqrt2},
		{"half-life 10 s, 10 s later", k, 20, []struct {
			t, d float64
			c    bool
		}{{10, 10, true}}, 0.5 / math.Sqrt2, 5 / math.Sqrt2},
		{"half-life 10 s, two intervals with a gap", k, 40, []struct {
			t, d float64
			c    bool
		}{{10, 10, true}, {40, 10, false}},
			// the first: 1/√2 over 10/√2 at t = 10, ×(1/4) by t = 30 (gap 20 s), ×½ over the second interval; the second adds 10/√2 s
			1 / math.Sqrt2 / 8, 10/math.Sqrt2/8 + 10/math.Sqrt2},
		{"no forgetting", 0, 1000, []struct {
			t, d float64
			c    bool
		}{{10, 10, true}, {40, 30, false}, {100, 60, true}}, 2, 100},
		{"forget at once", math.Inf(1), 100, []struct {
			t, d float64
			c    bool
		}{{10, 10, true}, {100, 90, true}}, 0, 0},
	}
	for _, c := range cases {
		var ag Aged
		for _, v := range c.visits {
			ag.Observe(v.t, v.d, v.c, c.kappa)
		}
		mean, shape := ag.Posterior(a0, b0, c.now, c.kappa)
		// tolerance: a few ulps of the exponentials
		if ws := a0 + c.wantX; math.Abs(shape-ws) > 1e-12*ws {
			t.Errorf("%s: shape %.15g, want α₀ + X = %.15g", c.name, shape, ws)
		}
		if wm := (a0 + c.wantX) / (b0 + c.wantE); math.Abs(mean-wm) > 1e-12*wm {
			t.Errorf("%s: mean %.15g, want (α₀ + X)/(β₀ + E) = %.15g", c.name, mean, wm)
		}
	}
}

// (F1) keeps the evidence's own mean x/e and discounts its precision: the
// excess over the prior of the shape and of the rate shrink by the same
// e^{−κΔt}, so the posterior's variance a/b² moves as the model says.
func TestAgedDiscountKeepsEvidenceMean(t *testing.T) {
	const a0, b0, kappa = 0.3, 5e6, 1 / 3e7
	var ag Aged
	for k := 1; k <= 40; k++ {
		ag.Observe(float64(k)*1e6, 1e6, k%7 == 0, kappa)
	}
	for _, dt := range []float64{0, 1e6, 3e7, 3e8} {
		m, s := ag.Posterior(a0, b0, ag.T+dt, kappa)
		r := s / m
		f := math.Exp(-kappa * dt)
		x, e := s-a0, r-b0
		if math.Abs(x-f*ag.X) > 1e-12*ag.X || math.Abs(e-f*ag.E) > 1e-9*ag.E {
			t.Errorf("Δt %g: excess (%g, %g), want e^{−κΔt}·(X, E) = (%g, %g)", dt, x, e, f*ag.X, f*ag.E)
		}
		if f*ag.E > 0 && math.Abs(x/e-ag.X/ag.E) > 1e-9*ag.X/ag.E {
			t.Errorf("Δt %g: the evidence's mean moved: %g, want %g", dt, x/e, ag.X/ag.E)
		}
		wantVar := (a0 + f*ag.X) / ((b0 + f*ag.E) * (b0 + f*ag.E))
		if v := s / (r * r); math.Abs(v-wantVar) > 1e-9*wantVar {
			t.Errorf("Δt %g: variance %g, want %g", dt, v, wantVar)
		}
	}
}

// (F3) against numerical integration of e^{−λd} over the Gamma density.
func TestLogPredictiveQuadrature(t *testing.T) {
	for _, c := range []struct{ a, b, d float64 }{{1, 10, 3}, {2.5, 4, 1}, {7, 100, 50}, {1.5, 1, 0.01}} {
		const n = 200000
		lo, hi := math.Log(c.a/c.b)-40, math.Log(c.a/c.b)+8
		h := (hi - lo) / n
		q := 0.0
		for k := 0; k < n; k++ {
			l := math.Exp(lo + (float64(k)+0.5)*h)
			q += math.Exp(-l*c.d) * gammaPDF(c.a, c.b, l) * l * h
		}
		// tolerance: the midpoint rule's error on a smooth integrand
		if got := math.Exp(LogPredictive(c.a, c.b, c.d, false)); math.Abs(got-q) > 1e-7 {
			t.Errorf("P(unchanged) Gamma(%g, %g) over %g: %.10f, quadrature %.10f", c.a, c.b, c.d, got, q)
		}
		if got := math.Exp(LogPredictive(c.a, c.b, c.d, true)); math.Abs(got-(1-q)) > 1e-7 {
			t.Errorf("P(changed) Gamma(%g, %g) over %g: %.10f, quadrature %.10f", c.a, c.b, c.d, got, 1-q)
		}
	}
}

// The bank finds what the population does: pages whose rates never move
// (drawn once from Exp, i.e. Gamma(1, ·)) make κ = 0 the most likely of
// {0, 1/(10 periods), +Inf}; pages whose rates are drawn afresh every
// period P make a memory of about that length more likely than none
// (+Inf) and than an endless one (0).
// Seeded; 3,000 pages × 200 visits leave the log likelihoods apart by
// hundreds (printed on failure).
func TestBankRecoversDrift(t *testing.T) {
	const n, visits, d = 3000, 200, 1.0
	const P = 20.0 // a redraw every 20 visits
	kappas := []float64{0, 1 / (10 * P), math.Inf(1)}
	for _, c := range []struct {
		name   string
		redraw bool
		want   int
	}{{"stationary", false, 0}, {"redrawn every period", true, 1}} {
		rng := rand.New(rand.NewPCG(7, 33))
		b, err := NewBank(n, kappas)
		if err != nil {
			t.Fatal(err)
		}
		rate := make([]float64, n)
		draw := func() {
			for i := range rate {
				rate[i] = rng.ExpFloat64() * 0.1 // mean 0.1 a visit: Gamma(1, 10)
			}
		}
		draw()
		for v := 1; v <= visits; v++ {
			if c.redraw && v%int(P) == 0 {
				draw()
			}
			for i := range rate {
				changed := rng.Float64() < -math.Expm1(-rate[i]*d)
				b.Observe(i, float64(v)*d, d, changed, 1, 10) // the population's prior, known
			}
		}
		if got := b.Best(); got != c.want {
			t.Errorf("%s: best κ %g, want %g (log likelihoods %v)", c.name, kappas[got], kappas[c.want], b.LogLik)
		}
		if b.N != n*visits {
			t.Errorf("%s: %d scored, want %d", c.name, b.N, n*visits)
		}
	}
}

// A bank at κ = +Inf plans every page at the prior: the allocation is
// uniform; NewBank rejects empty and negative grids.
func TestBankPagesAndErrors(t *testing.T) {
	b, err := NewBank(3, []float64{math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	b.Observe(0, 10, 10, true, 0.5, 50)
	b.Observe(1, 10, 10, false, 0.5, 50)
	pages := b.Pages(20, 0.5, 50)
	a, err := plan.Allocate(pages, plan.AllocConfig{Policy: plan.PolicyFreshness, Budget: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range a.Rate {
		// tolerance: the price's bisection (relative 1e-13 of the budget)
		if math.Abs(f-0.1) > 1e-9 {
			t.Errorf("page %d: %g visits, want the uniform 0.1", i, f)
		}
	}
	for _, g := range [][]float64{nil, {-1}, {math.NaN()}} {
		if _, err := NewBank(1, g); err == nil {
			t.Errorf("NewBank(%v): no error", g)
		}
	}
}

// gammaPDF is the density of Gamma(a, b) at x.
func gammaPDF(a, b, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return math.Exp(a*math.Log(b) + (a-1)*math.Log(x) - b*x - lg)
}
