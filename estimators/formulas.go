package estimators

import "math"

// This file holds the closed-form formulas of the papers as pure functions
// of the sufficient statistics. They are exported so that evaluation code
// can compute the exact analytic curves (CGM eq. 1, App. D) with the very
// code that produces the estimates.

// ImprovedRatio is CGM §4.2's estimator of the frequency ratio r = λ/f from
// X detected changes in n regular visits:
//
//	r̂ = −log((X̄ + 0.5)/(n + 0.5)),  X̄ = n − X.
//
// It is defined for n ≥ 1, 0 ≤ X ≤ n (no singularity at X = n, App. B).
func ImprovedRatio(n, x int64) float64 {
	return -math.Log1p(-float64(x) / (float64(n) + 0.5))
}

// BayesTheta is the posterior mean of θ = 1 − e^{−r} under a
// Beta(α, β) prior after X changes in n visits (CGM App. B):
// θ̂ = (X + α)/(n + α + β).
func BayesTheta(n, x int64, alpha, beta float64) float64 {
	return (float64(x) + alpha) / (float64(n) + alpha + beta)
}

// LastModXPrime is X' of CGM Fig. 13, the bias-corrected change count of the
// last-modified estimator:
//
//	X' = (X − 1) − X/(N log(1 − X/N)),
//
// with the limits X' = 0 at X = 0 (footnote 5) and X' = N − 1 at X = N
// (log(0) = −∞). The estimate is X'/T (App. D).
func LastModXPrime(n, x int64) float64 {
	switch {
	case x <= 0 || n <= 0:
		return 0
	case x >= n:
		return float64(n - 1)
	}
	X, N := float64(x), float64(n)
	return (X - 1) - X/(N*math.Log1p(-X/N))
}

// matloffR1 is Matloff's r(t) (eq. 6) with τ = 1: r1(x) = 1/(1−e^{−x}) − 1/x,
// the mean of the last-event time W/τ in a non-empty period when x = λτ.
// r1(0) = 1/2, r1(∞) = 1, strictly increasing (§3.2.3).
func matloffR1(x float64) float64 {
	if x < 1e-3 {
		x2 := x * x
		return 0.5 + x/12 - x*x2/720 + x*x2*x2/30240
	}
	return 1/(-math.Expm1(-x)) - 1/x
}

// matloffR1Prime is dr1/dx = 1/x² − 1/(4 sinh²(x/2)); it is also Var(W/τ)
// under the density of eq. 4 (W is the sufficient statistic of an
// exponential family, so Var W = dE[W]/dλ), which is how eq. 15 simplifies.
func matloffR1Prime(x float64) float64 {
	if x < 1e-3 {
		x2 := x * x
		return 1.0/12 - x2/240 + x2*x2/6048
	}
	s := math.Sinh(x / 2)
	return 1/(x*x) - 1/(4*s*s)
}

// MatloffSolve solves eq. 5, r(λ̂) = W̄, for the conditional MLE λ̂ given the
// mean last-event time wbar and period tau. It returns 0 when W̄ ≤ τ/2
// (§3.2.3: the MLE is then 0) and ok=false when W̄ ≥ τ (no finite root) or
// the arguments are not finite and positive. The root is bracketed in
// [0, 1/(1−w)]/τ (r1(x) > 1 − 1/x) and found by Newton steps safeguarded by
// bisection, to a relative tolerance of 1e-13.
func MatloffSolve(wbar, tau float64) (lambda float64, ok bool) {
	if !posFinite(tau) || math.IsNaN(wbar) || wbar < 0 {
		return 0, false
	}
	w := wbar / tau
	if w <= 0.5 {
		return 0, true
	}
	if w >= 1 {
		return 0, false
	}
	lo, hi := 0.0, 1/(1-w)
	x := 12 * (w - 0.5) // root of the linearisation r1 ≈ 1/2 + x/12
	if x <= lo || x >= hi {
		x = (lo + hi) / 2
	}
	for i := 0; i < 200; i++ {
		f := matloffR1(x) - w
		if f > 0 {
			hi = x
		} else {
			lo = x
		}
		d := matloffR1Prime(x)
		nx := x - f/d
		if !(nx > lo && nx < hi) || d <= 0 {
			nx = (lo + hi) / 2
		}
		if math.Abs(nx-x) <= 1e-13*nx || hi-lo <= 1e-15*hi {
			x = nx
			break
		}
		x = nx
	}
	return x / tau, true
}

// MatloffLastModSE is eq. 15 for the conditional MLE from m non-empty
// periods: SE(λ̂) = sqrt(Var̂ W̄)/r'(λ̂) = 1/sqrt(m·r'(λ̂)), where
// r'(λ) = τ²·r1'(λτ) equals Var(W) (see matloffR1Prime). At λ̂ = 0 it is
// √12/(τ√m).
func MatloffLastModSE(lambda, tau float64, m int64) float64 {
	return 1 / math.Sqrt(float64(m)*tau*tau*matloffR1Prime(lambda*tau))
}

// MatloffCount is eq. 3, λ̌ = −(1/τ) ln(1 − M/n), with its standard error
// eq. 14, SE = (1/τ)·sqrt(p̌/((1−p̌)n)). ok=false when M = n (λ̌ = ∞) or
// n = 0.
func MatloffCount(n, m int64, tau float64) (lambda, se float64, ok bool) {
	if n <= 0 || m < 0 || m >= n || !posFinite(tau) {
		return 0, 0, false
	}
	p := float64(m) / float64(n)
	return -math.Log1p(-p) / tau, math.Sqrt(p/((1-p)*float64(n))) / tau, true
}

// MalcolmNoLastModRate is Malcolm & Armitage eq. 3 inverted to a rate:
//
//	avgDetectionInterval = (P − U)/X,
//	avgChgInterval'      = avgDetectionInterval / log(P/U),
//
// and rate = 1/avgChgInterval' (the paper: "avgChgInterval' can be inverted
// to obtain an unbiased estimate of the average rate of change"). P is the
// sampling period, U the total unchanged time, X the detected changes. It
// also returns the bias-corrected interval avgChgInterval =
// I'/(1 + I'/P). ok=false when X = 0 or U = 0 (log(P/0) = ∞).
func MalcolmNoLastModRate(p, u float64, x int64) (rate, interval float64, ok bool) {
	if x <= 0 || !(u > 0) || !(p > u) {
		return 0, 0, false
	}
	det := (p - u) / float64(x)
	ip := det / math.Log(p/u)
	return 1 / ip, ip / (1 + ip/p), true
}

// garwood returns the exact Poisson (Garwood) interval for the mean of a
// Poisson count k: [Γ⁻¹(k; lo), Γ⁻¹(k+1; hi)] in terms of the Gamma
// quantiles, i.e. [χ²_{2k}(lo)/2, χ²_{2k+2}(hi)/2]. With k = 0 the lower
// bound is 0. m (may be nil) remembers recent quantiles.
func garwood(k float64, pLo, pHi float64, m *quantileMemo) (lo, hi float64) {
	if k > 0 {
		lo = m.gamma(k, pLo, 1-pLo)
	}
	hi = m.gamma(k+1, pHi, 1-pHi)
	return lo, hi
}

// clopperPearson is the exact binomial interval for θ from x successes in
// n trials: [B(lo; x, n−x+1), B(hi; x+1, n−x)], with 0 at x = 0 and 1 at
// x = n.
func clopperPearson(n, x int64, pLo, pHi float64, m *quantileMemo) (lo, hi float64) {
	X, N := float64(x), float64(n)
	if x > 0 {
		lo = m.beta(X, N-X+1, pLo)
	}
	hi = 1
	if x < n {
		hi = m.beta(X+1, N-X, pHi)
	}
	return lo, hi
}

// thetaToRatio maps θ = 1 − e^{−r} to r = −log(1 − θ).
func thetaToRatio(theta float64) float64 { return -math.Log1p(-theta) }
