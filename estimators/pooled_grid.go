package estimators

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// pooledGrid is the number of grid points of the exact posterior.
const pooledGrid = 160

// gridLogPosterior is PooledPosterior before sane, with the caller's
// quantile memo m (nil: none) for the grid's range.
func gridLogPosterior(prior GammaPrior, ev Evidence, hiMin float64, logPost func(l float64) float64, cfg *Config, m *quantileMemo) (Estimate, bool) {
	lo, hi, ok := pooledGridRange(prior, ev, m)
	if !ok {
		return Estimate{}, false
	}
	return gridOn(lo, math.Max(hi, hiMin), logPost, cfg)
}

// gridOn is the pooled estimate of logPost on pooledGrid log-spaced
// points from lo to hi.
func gridOn(lo, hi float64, logPost func(l float64) float64, cfg *Config) (Estimate, bool) {
	var lp, ex [pooledGrid]float64
	step := math.Log(hi/lo) / (pooledGrid - 1)
	top := math.Inf(-1)
	for j := range lp {
		ex[j] = math.Exp(float64(j) * step)
		v := logPost(lo * ex[j])
		lp[j] = v
		top = math.Max(top, v)
	}
	return gridPosteriorRaw(lp[:], ex[:], top, lo, hi, step, cfg)
}

// pooledGridRange is the grid of the exact posterior: a factor 10 beyond
// the central 1 − 2·10⁻⁹ of the conjugate approximation Gamma(α + X,
// β + E), which the evidence matches at the likelihood's maximum, and, for
// floored evidence (the posterior is the prior truncated near Floor),
// from Floor/30 to the prior's upper 10⁻⁹ quantile. The range follows the
// posterior, not the prior: with a prior of shape α < 1 the prior's lower
// quantiles underflow to 0 (α = 0.25: q(10⁻⁷) ≈ 10⁻²⁸/β) while the
// posterior of an object with changes has shape α + X ≥ 1.
//
// The two tail quantiles are solved by gammaTail, not by the inverse
// incomplete gamma function to full precision (mathext.GammaIncRegInv,
// which ends in a bisection to machine precision): the grid only needs
// its ends to bracket the posterior, and a range within 10⁻¹⁰ of the old
// one leaves the estimate within about 10⁻¹¹ (TestPooledGridRangeTails).
// m is the caller's memo of both (a hit returns what a miss computes);
// the inverse is used where gammaTail cannot solve and for the lower quantile of a shape below 1, where the inverse
// returns 0 (a ≤ 0.5 at 10⁻⁹: it solves Q = 1 − 10⁻⁹, which has lost
// most of its digits) and the range falls back to hi·10⁻¹² below: kept
// as it was, since the lower end set by the true quantile would span 21
// decades at a = 0.5 instead of 12 and move the interval by ~0.5 %.
func pooledGridRange(prior GammaPrior, ev Evidence, m *quantileMemo) (lo, hi float64, ok bool) {
	q := func(a, b float64, upper bool) float64 {
		if upper || a >= 1 {
			if x, ok := m.gammaTail(a, upper); ok {
				return x / b
			}
		}
		p := 1e-9
		if upper {
			p = 1 - 1e-9
		}
		return m.gammaIncRegInv(a, p) / b
	}
	a, b := prior.Shape+ev.X, prior.Rate+ev.E
	lo, hi = q(a, b, false)/10, q(a, b, true)*10
	if ev.Floor > 0 {
		lo = math.Min(lo, ev.Floor/30)
		hi = math.Max(hi, math.Max(ev.Floor, q(prior.Shape, prior.Rate, true))*10)
	}
	if !(lo > 0) { // GammaIncRegInv underflows for a shape far below 1
		lo = hi * 1e-12
	}
	return lo, hi, lo > 0 && hi > lo && !math.IsInf(hi, 0)
}

// gammaTail returns the 10⁻⁹ (upper: 1 − 10⁻⁹) quantile of the standard
// Gamma(a) to a relative 10⁻¹⁰, and false where it cannot (the caller
// then inverts exactly). Newton's method on t = log x for
//
//	g(t) = log P(a, eᵗ) − log 10⁻⁹     (upper: log Q(a, eᵗ) − log 10⁻⁹),
//
// g′(t) = ±eᵗ·f(eᵗ)/P (or /Q), f the Gamma(a) density. The density of log X,
// exp(a·t − eᵗ)/Γ(a), is log-concave, so its CDF and survival function are
// log-concave too (Prékopa): g is concave and monotone, and Newton's
// iterates from any start reach the root from one side after the first
// step — from below for the lower quantile, from above for the upper — so
// a truncated solve still brackets the posterior (wider, not narrower).
// Start: Wilson–Hilferty, x = a·(1 − 1/(9a) ± z·√(1/(9a)))³ with z =
// Φ⁻¹(1 − 10⁻⁹); where it is not positive (lower tail, a ≲ 0.4), the small-x
// limit P(a, x) ≈ xᵃ/Γ(a + 1).
func gammaTail(a float64, upper bool) (float64, bool) {
	const z, logP, tol = 5.9978070150076865, -20.72326583694641, 1e-10 // Φ⁻¹(1 − 10⁻⁹), log 10⁻⁹
	lg, _ := math.Lgamma(a)
	d := 1 / (9 * a)
	y := 1 - d - z*math.Sqrt(d)
	if upper {
		y = 1 - d + z*math.Sqrt(d)
	}
	var t float64
	if y > 0 {
		t = math.Log(a) + 3*math.Log(y)
	} else {
		lg1, _ := math.Lgamma(a + 1)
		t = (logP + lg1) / a
	}
	for i := 0; i < 30; i++ {
		x := math.Exp(t)
		var tail float64
		if upper {
			tail = mathext.GammaIncRegComp(a, x)
		} else {
			tail = mathext.GammaIncReg(a, x)
		}
		// log of x·f(x) / tail, the derivative of log tail in t
		lslope := a*t - x - lg - math.Log(tail)
		if !(tail > 0) || math.IsInf(lslope, 0) || math.IsNaN(lslope) || x == 0 || math.IsInf(x, 0) {
			return 0, false
		}
		step := (math.Log(tail) - logP) / math.Exp(lslope)
		if upper {
			step = -step
		}
		t -= step
		if math.Abs(step) < tol {
			x = math.Exp(t)
			return x, x > 0 && !math.IsInf(x, 0)
		}
	}
	return 0, false
}

// gridPosteriorRaw is the pooled estimate from a log posterior lp
// evaluated on the log-spaced grid lo·ex[j], ex[j] = e^{j·step} (top = max
// lp), before sane: the posterior mean (P1) and the equal-tailed credible
// interval of cfg, by the midpoint rule in log λ. The caller's ex (the
// exponentials it evaluated lp at) spares one exponential per point.
func gridPosteriorRaw(lp, ex []float64, top, lo, hi, step float64, cfg *Config) (Estimate, bool) {
	if math.IsInf(top, 0) || math.IsNaN(top) {
		return Estimate{}, false
	}
	for j := range lp {
		lp[j] = math.Exp(lp[j] - top)
	}
	return gridSummary(lp, ex, lo, hi, step, cfg), true
}

// gridSummary is gridPosteriorRaw from the weights w[j] ∝ e^{lp[j]}
// (finite, not all 0): the mean Σ w_j·λ_j / Σ w_j and the quantiles read
// off the cumulative weights, linear within a cell.
func gridSummary(w, ex []float64, lo, hi, step float64, cfg *Config) Estimate {
	total, first := 0.0, 0.0
	for j, v := range w {
		total += v
		first += v * lo * ex[j]
	}
	quant := func(p float64) float64 {
		target, acc := p*total, 0.0
		for j, v := range w {
			if acc+v >= target {
				f := (target - acc) / v // position within cell j
				return lo * math.Exp((float64(j)-0.5+f)*step)
			}
			acc += v
		}
		return hi
	}
	pLo, pHi := cfg.tails()
	return Estimate{Key: KeyPooled, Rate: first / total, Lo: quant(pLo), Hi: quant(pHi), HasCI: true}
}

// gridChanges is gridOn for the existence-of-change posterior of
// PooledEstimate: on the same pooledGrid points λ_j = lo·e^{j·h}, h =
// log(hi/lo)/(pooledGrid − 1), the log posterior per unit of log λ is
//
//	ℓ(λ_j) = c_j + Σ_i w_i·log(1 − e^{−λ_j t_i}),                        (P3)
//	c_j = α·(log lo + j·h) − (β + U)·λ_j
//
// (the prior's log density plus the log grid's Jacobian, α log λ − βλ, and
// the log likelihood of CGM App. C over the changed-interval buckets t_i
// with counts w_i, U the unchanged time), and the grid's weights are
// e^{ℓ_j − K} for any constant K (the mean and quantiles are ratios of
// their sums). The counts w_i are integers, so the likelihood is a
// product of integer powers:
//
//	e^{ℓ_j − K} = e^{c_j − K} · Π_i (1 − e^{−λ_j t_i})^{w_i}.               (P4)
//
// gridOn spends per point a closure call, a logarithm of λ_j, an
// exponential for λ_j, a logarithm per bucket and the weight's
// exponential; (P4) takes one exponential and one expm1 per bucket:
//
//   - log λ_j = log lo + j·h, and λ_j = lo·ρ^j, ρ = e^h, by repeated
//     multiplication (a relative rounding error of at most one unit of
//     2⁻⁵³ per step: below 2·10⁻¹⁴ after 159 steps);
//   - the powers by repeated squaring, a relative rounding error of at
//     most 2·w_i units of 2⁻⁵³, as w_i·log(·) has in (P3);
//   - 1 − e^{−x} is 1 to the last bit for x > 37 (e^{−37} < 2⁻⁵³), where
//     the expm1 is skipped, as its logarithm, 0, adds nothing in (P3).
//
// K is ℓ at the conjugate approximation's mode per unit of log λ, λ* =
// (α + X)/(β + E) (Evidence), where the weight is 1. The product (P4)
// (gridChangesProduct) is used when it can neither overflow nor lose the
// posterior to underflow: every c_j − K ≤ 300 (the likelihood factor is
// at most 1, so every weight is below e³⁰⁰; where that factor leaves the
// normal numbers, below 2⁻¹⁰²² ≈ 2.2·10⁻³⁰⁸, or e^{c_j − K} does, the
// weight is below e³⁰⁰·2.2·10⁻³⁰⁸ < 10⁻¹⁷⁷) and the largest weight is at
// least 10⁻¹⁰⁰, so whatever underflow loses or rounds is below 10⁻⁷⁷ of
// it. Otherwise, or for a count that is no integer below 2³², the log
// form (P3) decides, as gridOn does. Either way the weights are gridOn's
// up to rounding, so the mean and interval are too
// (TestGridChangesMatchesGridOn: 10⁻¹¹).
func gridChanges(lo, hi float64, prior GammaPrior, ev Evidence, ts, ws []float64, u float64, cfg *Config) (Estimate, bool) {
	var w, ex [pooledGrid]float64
	rho := math.Exp(math.Log(hi/lo) / (pooledGrid - 1))
	e := 1.0
	for j := range ex {
		ex[j] = e
		e *= rho
	}
	if est, ok := gridChangesProduct(&w, &ex, lo, hi, prior, ev, ts, ws, u, cfg); ok {
		return est, true
	}
	return gridChangesLog(&w, &ex, lo, hi, prior, ts, ws, u, cfg)
}

// gridChangesLog is gridChanges by the log form (P3) with the grid's
// ex[j] = ρ^j.
func gridChangesLog(w, ex *[pooledGrid]float64, lo, hi float64, prior GammaPrior, ts, ws []float64, u float64, cfg *Config) (Estimate, bool) {
	step := math.Log(hi/lo) / (pooledGrid - 1)
	logLo := math.Log(lo)
	a, b := prior.Shape, prior.Rate+u
	ws = ws[:len(ts)]
	top := math.Inf(-1)
	for j := range w {
		l := lo * ex[j]
		v := a*(logLo+float64(j)*step) - b*l
		for i, t := range ts {
			v += ws[i] * math.Log(-math.Expm1(-l*t))
		}
		w[j] = v
		if v > top || v != v { // math.Max: NaN sticks, +Inf wins
			top = v
		}
	}
	return gridPosteriorRaw(w[:], ex[:], top, lo, hi, step, cfg)
}

// gridChangesProduct is gridChanges by (P4) with the grid's ex[j] =
// ρ^j; ok is false where (P4) does not apply (gridChanges).
func gridChangesProduct(w, ex *[pooledGrid]float64, lo, hi float64, prior GammaPrior, ev Evidence, ts, ws []float64, u float64, cfg *Config) (Estimate, bool) {
	k, ok := changesScale(prior, ev, ts, ws, u)
	if !ok {
		return Estimate{}, false
	}
	step := math.Log(hi/lo) / (pooledGrid - 1)
	logLo := math.Log(lo)
	a, b := prior.Shape, prior.Rate+u
	ws = ws[:len(ts)]
	big := 0.0
	for j := range w {
		l := lo * ex[j]
		c := a*(logLo+float64(j)*step) - b*l - k
		if !(c <= 300) {
			return Estimate{}, false
		}
		v := math.Exp(c)
		for i, t := range ts {
			if x := l * t; !(x > 37) {
				v *= powInt(-math.Expm1(-x), uint32(ws[i]))
			}
		}
		if v != v {
			return Estimate{}, false
		}
		w[j] = v
		if v > big {
			big = v
		}
	}
	if !(big >= 1e-100) {
		return Estimate{}, false
	}
	return gridSummary(w[:], ex[:], lo, hi, step, cfg), true
}

// changesScale is K of gridChanges, ℓ (P3) at λ* = (α + X)/(β + E); ok
// is false when it is not finite or a count is no integer in [0, 2³²).
func changesScale(prior GammaPrior, ev Evidence, ts, ws []float64, u float64) (float64, bool) {
	for _, c := range ws {
		if !(c >= 0 && c < 1<<32 && c == math.Trunc(c)) {
			return 0, false
		}
	}
	l := (prior.Shape + ev.X) / (prior.Rate + ev.E)
	k := prior.Shape*math.Log(l) - (prior.Rate+u)*l
	for i, t := range ts {
		k += ws[i] * math.Log(-math.Expm1(-l*t))
	}
	return k, !math.IsInf(k, 0) && !math.IsNaN(k)
}

// powInt is x^n by repeated squaring.
func powInt(x float64, n uint32) float64 {
	r := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			r *= x
		}
		x *= x
	}
	return r
}
