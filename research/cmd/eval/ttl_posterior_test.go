package main

import (
	"math"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// poissonG is G(L) for a known rate λ: ∫₀ᴸ s λe^{−λs} ds + (1 − e^{−λL})/r
// = (1 − e^{−λL}(1 + λL))/λ + (1 − e^{−λL})/r.
func poissonG(lambda, l, perSec float64) float64 {
	e := math.Exp(-lambda * l)
	return (1-e*(1+lambda*l))/lambda + (1-e)/perSec
}

// The posterior rule's lifetime gives exactly the survival 1 − pStale
// under the posterior predictive.
func TestPostTTLSurvival(t *testing.T) {
	for _, c := range []struct{ k, r, p float64 }{{0.8, 7e7, 0.005}, {3, 1e6, 0.1}, {50, 86400, 0.5}} {
		l := postTTL(c.k, c.r, c.p)
		if got := math.Pow(1+l/c.r, -c.k); math.Abs(got-(1-c.p)) > 1e-12 {
			t.Errorf("k %g R %g p %g: survival %.15f, want %g (tolerance 1e-12)", c.k, c.r, c.p, got, 1-c.p)
		}
	}
}

// G under the posterior predictive against a direct quadrature of its
// definition, and against the known-rate closed form as k → ∞ at a fixed
// mean (the Gamma concentrates on λ = k/R).
func TestLomaxG(t *testing.T) {
	day := 86400.0
	perSec := 1 / day
	for _, c := range []struct{ k, r, l float64 }{{0.8, 100 * day, 3 * day}, {1, 30 * day, 10 * day}, {2.5, 5 * day, 40 * day}} {
		// ∫₀ᴸ s f(s) ds with f = (k/R)(1 + s/R)^{−k−1}, midpoint rule, 10⁶ panels.
		n := 1000000
		h := c.l / float64(n)
		integ := 0.0
		for i := 0; i < n; i++ {
			s := (float64(i) + 0.5) * h
			integ += s * c.k / c.r * math.Pow(1+s/c.r, -c.k-1) * h
		}
		want := integ + (1-math.Pow(1+c.l/c.r, -c.k))/perSec
		if got := lomaxG(c.l, c.k, c.r, perSec); math.Abs(got-want) > 1e-6*want {
			t.Errorf("k %g: G = %g, quadrature %g (relative tolerance 1e-6)", c.k, got, want)
		}
	}
	lambda := 1 / (20 * day)
	k := 1e7
	for _, l := range []float64{day, 10 * day, 100 * day} {
		want := poissonG(lambda, l, perSec)
		if got := lomaxG(l, k, k/lambda, perSec); math.Abs(got-want) > 1e-5*want {
			t.Errorf("L %g d: Gamma(10⁷) G = %g, Poisson %g (relative tolerance 1e-5: the posterior's spread, 1/√k)", l/day, got, want)
		}
	}
}

// optTTL solves G(L) = θ, and has the two limits derived above: F(L) = rθ
// when rL ≪ 1, and λL²/2 = θ for a Poisson page requested often.
func TestOptTTLLimits(t *testing.T) {
	day := 86400.0
	k := 1e7
	lambda := 1 / (100 * day)
	r := k / lambda
	for _, c := range []struct{ perDay, theta float64 }{{1, 0.05 * day}, {100, 0.01 * day}, {0.01, 1 * day}} {
		perSec := c.perDay / day
		l := optTTL(k, r, perSec, c.theta)
		if g := lomaxG(l, k, r, perSec); math.Abs(g-c.theta) > 1e-5*c.theta {
			t.Errorf("%g/day θ %g d: G(L) = %g, want θ (relative tolerance 1e-5, the bisection's)", c.perDay, c.theta/day, g)
		}
	}
	// Requested often: λL²/2 = θ up to the F(L)/r term and the λL cubic term.
	perSec := 1000 / day
	theta := 0.02 * day
	l := optTTL(k, r, perSec, theta)
	if want := math.Sqrt(2 * theta / lambda); math.Abs(l-want) > 0.05*want {
		t.Errorf("rL ≫ 1: L = %g d, want √(2θ/λ) = %g d (tolerance 5 %%: λL = %.2f, 1/(rL) = %.3f)", l/day, want/day, lambda*l, 1/(perSec*l))
	}
	// Requested rarely: F(L) = rθ.
	perSec = 0.001 / day
	theta = 10 * day
	l = optTTL(k, r, perSec, theta)
	if got, want := -math.Expm1(-lambda*l), perSec*theta; math.Abs(got-want) > 0.01*want {
		t.Errorf("rL ≪ 1: F(L) = %g, want rθ = %g (tolerance 1 %%: rL = %.4f)", got, want, perSec*l)
	}
}

// burstG with a background rate only is the Poisson closed form; with a
// burst, against the posterior predictive's closed form (a Lomax with
// shape α and scale β + a is the Gamma-mixed Poisson lomaxG computes).
func TestBurstG(t *testing.T) {
	day := 86400.0
	perSec := 1 / day
	lambda := 1 / (30 * day)
	m := estimators.BurstModel{Base: lambda}
	for _, l := range []float64{0.5 * day, 5 * day, 60 * day} {
		want := poissonG(lambda, l, perSec)
		if got := burstG(m, 10*day, l, perSec); math.Abs(got-want) > 1e-6*want {
			t.Errorf("background only, L %g d: %g, want %g (relative tolerance 1e-6, Simpson's on 32 panels)", l/day, got, want)
		}
	}
	b := estimators.BurstModel{Shape: 0.7, Scale: 3 * day}
	for _, age := range []float64{0, 5 * day, 500 * day} {
		for _, l := range []float64{day, 30 * day} {
			want := lomaxG(l, 0.7, 3*day+age, perSec)
			if got := burstG(b, age, l, perSec); math.Abs(got-want) > 1e-5*want {
				t.Errorf("burst only, age %g d, L %g d: %g, want %g (relative tolerance 1e-5)", age/day, l/day, got, want)
			}
		}
	}
}
