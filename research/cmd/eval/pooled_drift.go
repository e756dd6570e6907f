package main

import (
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
)

// The drift in the prediction and the predictive check of the candidates
// whose posterior is not conjugate (pooled_hier.go): the next period's
// rate θ·e^η, η ~ N(0, τ²), from the posterior of θ.

// predictiveCoversNB is predictiveCovers for the candidates whose
// posterior is not conjugate: the posterior of the period's rate θ is taken
// as the gamma with the estimate's median and upper credible bound
// (gammaFromQuantiles); the truth windows' rate is θ·e^η, η ~ N(0, tau2)
// (the site's drift; 0: none), taken over driftNodes equiprobable η; given
// it, the truth count over T, made of T/span periods with a burst
// multiplier each (dispersion k per period; +Inf: none), has mean
// m = T·E[θ] and variance
//
//	m + T²·Var[θ] + E[θ²]·T·span/k,
//
// matched by a negative binomial. ok is false without an interval.
func predictiveCoversNB(est estimators.Estimate, k, tau2 float64, count int, T, span, v float64, cfg *estimators.Config, shapes shapeMemo) (covers, ok bool) {
	if !est.HasCI || !(est.Rate > 0) || !(est.Hi > est.Rate) || !(T > 0) {
		return false, false
	}
	pHi := 1 - (1-cfg.Level)/2
	a, b, ok := gammaFromQuantiles(est.Rate, est.Hi, pHi, shapes)
	if !ok {
		return false, false
	}
	etas := driftNodes(tau2)
	var lo, hi float64
	for _, eta := range etas {
		l, h := nbCDFs(a, b*math.Exp(-eta), k, count, T, span)
		lo += l / float64(len(etas))
		hi += h / float64(len(etas))
	}
	u := lo + v*(hi-lo)
	return u >= 0.025 && u <= 0.975, true
}

// nbCDFs are P(K ≤ count−1) and P(K ≤ count) of the truth count K of
// predictiveCoversNB given θ ~ Gamma(a, b).
func nbCDFs(a, b, k float64, count int, T, span float64) (lo, hi float64) {
	mean, vth := a/b, a/(b*b)
	m := T * mean
	variance := m + T*T*vth
	if !math.IsInf(k, 1) && k > 0 && span > 0 {
		variance += (vth + mean*mean) * T * span / k
	}
	r := m * m / (variance - m) // NB(r, p): mean r(1−p)/p = m
	p := r / (r + m)
	cdf := func(k int) float64 {
		if k < 0 {
			return 0
		}
		return mathext.RegIncBeta(r, float64(k)+1, p)
	}
	return cdf(count - 1), cdf(count)
}

// driftNodes are equiprobable nodes of N(0, tau2) (one node, 0, when
// tau2 is 0).
func driftNodes(tau2 float64) []float64 {
	if !(tau2 > 0) {
		return []float64{0}
	}
	const m = 7
	out := make([]float64, m)
	for i := range out {
		out[i] = math.Sqrt(tau2) * math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/m-1)
	}
	return out
}

// driftWiden is the estimate of the next period's rate θ·e^η, η ~ N(0,
// tau2), from the estimate of θ (its posterior taken as the gamma of
// gammaFromQuantiles): the median (or the point quantile pointQ when in
// (0, 1)) and equal-tailed quantiles of the mixture over driftNodes, by
// bisection in log λ.
func driftWiden(est estimators.Estimate, tau2, pointQ float64, cfg *estimators.Config, shapes shapeMemo) (estimators.Estimate, bool) {
	pLo, pHi := (1-cfg.Level)/2, 1-(1-cfg.Level)/2
	a, b, ok := gammaFromQuantiles(est.Rate, est.Hi, pHi, shapes)
	if !ok {
		return est, false
	}
	etas := driftNodes(tau2)
	cdf := func(x float64) float64 {
		c := 0.0
		for _, eta := range etas {
			c += mathext.GammaIncReg(a, b*x*math.Exp(-eta))
		}
		return c / float64(len(etas))
	}
	q := func(p float64) float64 {
		// the mixture's quantiles lie within 4τ (beyond every node) of
		// the gamma's, which lie within the estimate's interval ± 1
		tau := math.Sqrt(tau2)
		lo, hi := math.Log(est.Lo)-4*tau-1, math.Log(est.Hi)+4*tau+1
		if !(est.Lo > 0) {
			lo = math.Log(est.Rate) - 40
		}
		for i := 0; i < 26; i++ {
			mid := (lo + hi) / 2
			if cdf(math.Exp(mid)) < p {
				lo = mid
			} else {
				hi = mid
			}
		}
		return math.Exp((lo + hi) / 2)
	}
	out := est
	if !(pointQ > 0 && pointQ < 1) {
		pointQ = 0.5
	}
	out.Rate, out.Lo, out.Hi = q(pointQ), q(pLo), q(pHi)
	return out, true
}

// gammaFromQuantiles is the Gamma(a, b) whose median is med and whose p
// quantile is hi (hi > med, p > ½): the ratio of the two quantiles falls
// with the shape; log a is found by regula falsi with the Illinois
// modification (Dowell & Jarratt 1971) on the log of the ratio, which is
// smooth and monotone in log a, to the precision of 36 bisections of the
// bracket (18.4/2³⁶) in about a quarter of their evaluations.
//
// The shape depends on the ratio hi/med and p alone, and a gamma
// posterior's ratio on its shape alone, so estimates of one shape share
// it: shapes (nil: none) keeps each (ratio, p) found, exactly as found.
func gammaFromQuantiles(med, hi, p float64, shapes shapeMemo) (a, b float64, ok bool) {
	want := math.Log(hi / med)
	key := [2]uint64{math.Float64bits(want), math.Float64bits(p)}
	a, hit := shapes[key]
	if !hit {
		a, ok = shapeFromRatio(want, p)
		if !ok {
			a = 0
		}
		if shapes != nil {
			shapes[key] = a
		}
	}
	if a == 0 {
		return 0, 0, false
	}
	return a, mathext.GammaIncRegInv(a, 0.5) / med, true
}

// shapeMemo memoizes shapeFromRatio for one goroutine: (log ratio, p) as
// bits → the shape (0: none).
type shapeMemo map[[2]uint64]float64

// shapeFromRatio is gammaFromQuantiles's shape: the a at which
// log(Q(a, p)/Q(a, ½)) = want.
func shapeFromRatio(want, p float64) (float64, bool) {
	f := func(x float64) float64 {
		a := math.Exp(x)
		return math.Log(mathext.GammaIncRegInv(a, p)/mathext.GammaIncRegInv(a, 0.5)) - want
	}
	lo, up := math.Log(1e-3), math.Log(1e5)
	flo, fup := f(lo), f(up)
	if !(fup < 0) || !(flo > 0) {
		return 0, false
	}
	const tol = 18.4 / (1 << 36)
	x, side := lo, 0
	for i := 0; i < 100 && up-lo > tol; i++ {
		x = (lo*fup - up*flo) / (fup - flo)
		if !(x > lo && x < up) { // rounding at a tiny bracket: bisect
			x = (lo + up) / 2
		}
		fx := f(x)
		switch {
		case fx == 0:
			lo, up = x, x
		case fx > 0:
			lo, flo = x, fx
			if side == 1 {
				fup /= 2
			}
			side = 1
		default:
			up, fup = x, fx
			if side == -1 {
				flo /= 2
			}
			side = -1
		}
		if math.Abs(fx) < 1e-13 {
			break
		}
	}
	return math.Exp(x), true
}
