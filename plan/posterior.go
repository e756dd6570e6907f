package plan

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// Planning under the posterior of λ (issue 33).
//
// A rate is known only through its estimate. When page i's rate has the
// posterior λ ~ Gamma(α, β) (shape α, rate β, mean α/β), the freshness a
// visit rate f buys is the expectation of CGM's F(λ, f) over that
// posterior, not F at a point estimate. With τ = 1/f,
//
//	F(λ, f) = f ∫₀^τ e^{−λs} ds,   E[e^{−λs}] = (1 + s/β)^{−α},
//
// so
//
//	E[F](f) = f·I(τ),  I(τ) = ∫₀^τ (1 + s/β)^{−α} ds
//	        = β(1 − (1 + τ/β)^{1−α})/(α − 1)   (α ≠ 1),
//	        = β ln(1 + τ/β)                     (α = 1).
//
// The expected freshness is concave in f (a mixture of concave functions),
// and its slope is
//
//	∂E[F]/∂f = h(τ) = I(τ) − τ(1 + τ/β)^{−α},
//
// increasing in τ from 0 to I(∞) = β/(α − 1) = E[1/λ] for α > 1 and to ∞
// for α ≤ 1. The Lagrangian's condition w·h(τ) = μ therefore generalises
// CGM's: a page is worth no visit when w·E[1/λ] ≤ μ (for a known rate,
// w/λ ≤ μ), and a page whose posterior has shape α ≤ 1 — one whose
// evidence cannot exclude rates near 0 but leaves a heavy tail — always
// gets a visit. As α → ∞ at a fixed mean the posterior concentrates and
// h(τ) → g(λτ)/λ, CGM's slope (freshnessSlope).

// ExpectedFreshness is E[F(λ, f)] for λ ~ Gamma(shape, shape/mean): the
// expected time-averaged freshness of a page visited every 1/f whose rate
// has that posterior. shape ≤ 0 or +Inf means a known rate (Freshness).
func ExpectedFreshness(mean, shape, f float64) float64 {
	if !(shape > 0) || math.IsInf(shape, 1) {
		return Freshness(mean, f)
	}
	switch {
	case !(mean > 0):
		return 1
	case !(f > 0):
		return 0
	}
	beta := shape / mean
	return f * beta * gammaJ(shape, 1/(f*beta))
}

// gammaJ is J(α, u) = ∫₀^u (1 + s)^{−α} ds = I(τ)/β at u = τ/β.
func gammaJ(a, u float64) float64 {
	l := math.Log1p(u)
	if c := 1 - a; c != 0 {
		return math.Expm1(c*l) / c
	}
	return l
}

// gammaSlope is h(τ)/β at u = τ/β: J(α, u) − u(1 + u)^{−α}, by its series
// αu²/2 − α(α+1)u³/3 + α(α+1)(α+2)u⁴/8 where the difference cancels.
func gammaSlope(a, u float64) float64 {
	if (a+3)*u < 1e-3 {
		return a * u * u * (0.5 - (a+1)*u/3 + (a+1)*(a+2)*u*u/8)
	}
	return gammaJ(a, u) - u*math.Exp(-a*math.Log1p(u))
}

// expectedSlope is ∂E[F]/∂f at f for λ ~ Gamma(shape, shape/mean).
func expectedSlope(mean, shape, f float64) float64 {
	beta := shape / mean
	if !(f > 0) {
		if shape > 1 {
			return beta / (shape - 1)
		}
		return math.Inf(1)
	}
	return beta * gammaSlope(shape, 1/(f*beta))
}

// expectedResponse solves w·h(τ) = ν for f = 1/τ (0 when the page is not
// worth a visit): a safeguarded Newton iteration on ln u, u = τ/β, with
// d(h/β)/d ln u = αu²(1 + u)^{−α−1}.
func expectedResponse(mean, shape, w, nu float64) float64 {
	beta := shape / mean
	c := nu / (w * beta) // target of gammaSlope
	if shape > 1 && c >= 1/(shape-1) {
		return 0
	}
	// Start from the known-rate answer at the mean: λτ = ginv(ν·mean/w).
	x := 1.0
	if k := nu * mean / w; k < 1 {
		x = ginv(k)
	} else {
		x = 10 * k
	}
	lu := math.Log(x / shape)
	if u := math.Sqrt(2 * c / shape); (shape+1)*u < 0.5 {
		lu = math.Log(u) // h/β ≈ αu²/2 for small u
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	for i := 0; i < 200; i++ {
		u := math.Exp(lu)
		d := gammaSlope(shape, u) - c
		if d < 0 {
			lo = lu
		} else {
			hi = lu
		}
		der := shape * u * u * math.Exp(-(shape+1)*math.Log1p(u))
		nl := lu - d/der
		if !(nl > lo && nl < hi) {
			switch {
			case math.IsInf(hi, 1):
				nl = lu + 2
			case math.IsInf(lo, -1):
				nl = lu - 2
			default:
				nl = (lo + hi) / 2
			}
		}
		if math.Abs(nl-lu) <= 1e-13 || hi-lo <= 1e-13 {
			lu = nl
			break
		}
		lu = nl
	}
	return 1 / (beta * math.Exp(lu))
}

// GammaFromInterval is the Gamma posterior matched to an estimate's
// equal-tailed credible (or confidence) interval [lo, hi] at level (0.95
// for the published 95 % intervals): the shape α whose quantile ratio
// Q(α, 1−t)/Q(α, t) equals hi/lo (t = (1−level)/2; the ratio falls from ∞
// to 1 as α grows, so α is found by bisection), and the rate β that puts
// the geometric middle of its interval at √(lo·hi). An interval with
// lo = 0 — no change seen, the estimate 0 and hi the rate the visits
// cannot exclude — is the exponential posterior (α = 1) of a flat prior
// after an exposure U: hi = −ln(t)/U, so β = −ln(t)/hi. It returns the
// posterior's mean α/β and shape α; ok is false without a usable
// interval (hi not finite and > lo).
func GammaFromInterval(lo, hi, level float64) (mean, shape float64, ok bool) {
	if !(hi > 0) || math.IsInf(hi, 1) || !(lo >= 0) || !(lo < hi) || !(level > 0 && level < 1) {
		return 0, 0, false
	}
	t := (1 - level) / 2
	if lo == 0 {
		beta := -math.Log(t) / hi
		return 1 / beta, 1, true
	}
	want := math.Log(hi / lo)
	// d(ln α) = ln(Q(α, 1−t)/Q(α, t)) − ln(hi/lo) falls as α grows: the
	// Illinois variant of regula falsi on ln α keeps a bracket.
	d := func(la float64) float64 {
		a := math.Exp(la)
		return math.Log(gammaQuantile(a, 1-t)/gammaQuantile(a, t)) - want
	}
	la, lb := math.Log(0.05), math.Log(1e6)
	da, db := d(la), d(lb)
	if db >= 0 {
		return math.Sqrt(lo * hi), math.Inf(1), true // narrower than any Gamma we resolve: a known rate
	}
	if !(da > 0) {
		return 0, 0, false // wider than Gamma(0.05)'s (whose 2.5 % quantile is ~10⁻³²): not resolved
	}
	side := 0
	for i := 0; i < 100 && lb-la > 1e-10; i++ {
		m := (la*db - lb*da) / (db - da)
		if !(m > la && m < lb) || math.IsInf(da, 1) { // Q(α, t) underflows to 0 for α ≲ 0.1
			m = (la + lb) / 2
		}
		dm := d(m)
		if math.Abs(dm) < 1e-12 {
			la, lb = m, m
			break
		}
		if dm > 0 {
			la, da = m, dm
			if side == 1 {
				db /= 2
			}
			side = 1
		} else {
			lb, db = m, dm
			if side == -1 {
				da /= 2
			}
			side = -1
		}
	}
	a := math.Exp((la + lb) / 2)
	beta := math.Sqrt(gammaQuantile(a, t) * gammaQuantile(a, 1-t) / (lo * hi))
	return a / beta, a, true
}

// gammaQuantile is the p-quantile of Gamma(a, 1).
func gammaQuantile(a, p float64) float64 { return mathext.GammaIncRegInv(a, p) }
