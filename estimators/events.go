package estimators

import "math"

// Complete change histories.
//
// A source that records every change of an object at its time (a
// version-control log; ingest's changes-tsv) observes the change process
// itself, not samples of it. With the baseline at the first event t₀ and
// N changes after it (the state's X), observed up to the as-of time
// t_end — the latest event time the pipeline has seen (the input's or the
// partition's high watermark), up to which no further change of the object
// happened — the likelihood of a Poisson process of rate λ observed
// continuously over the exposure T = t_end − t₀ is
//
//	L(λ) = λ^N e^{−λT},   T = t_end − t₀ ≥ t_last − t₀              (E1)
//
// The exposure does not end at the object's own last change t_last: the
// quiet time after it is observed too, and ending T there turns a short
// burst of changes years ago into a rate of hundreds a year for ever (on
// php/doc-en's next year the pages seen not to change in the training
// year got 75–103 times the Poisson deviance of one global rate; with
// T to the end of the log 1.18–1.66 times, docs/eval/NEXTYEAR.md). The
// caller passes t_end (Change.Estimate's asOf); an as-of before t_last
// (or none) is t_last.
//
// whose maximum is N/T, the naive estimator, exact here: CGM Thm 4.1's bias
// (1−e^{−r})/r comes from changes hidden inside one visit interval, and a
// complete history hides none. The existence-of-change estimators
// (cgm_improved, bayes_beta, cgm_irregular_mle, malcolm_nolastmod) read
// every event as "a change in this visit interval"; with X = n they
// saturate (cgm_improved's r̂ = log(2n+1) per interval, several times N/T
// on the php-doc history), so they are not computed for such an object.
//
// Kolobov et al. (NeurIPS 2019) estimate the rate of a complete
// observation history by (N + ½)/(T + ½), the mean of the posterior of
// (E1) under a Gamma(½, ½) prior:
//
//	λ | N, T ~ Gamma(N + ½, T + τ₀)                                 (E2)
//	λ̂ = (N + ½)/(T + τ₀)                                            (E3)
//
// with τ₀ = Config.EventPriorExposure: ½ of the time unit in which the
// prior is stated. We state it in days (τ₀ = 43,200 s): the prior
// Gamma(½, ½ day) is a Jeffreys-like shape with a mean of one change a
// day, so it moves an estimate by less than 2 % once T ≥ 25 days and by
// half a change over T when nothing changed (no zero rate for a page
// watched for a short time). The published interval is the equal-tailed
// credible interval of (E2) at Config.Level:
//
//	[G⁻¹(p_lo; N+½), G⁻¹(p_hi; N+½)] / (T + τ₀)                     (E4)
//
// G⁻¹ the quantile of the unit-rate Gamma distribution. (E3) has
// relative bias ½/N − τ₀/T + O(1/N²) and variance λ/T (Poisson), the
// Cramér–Rao bound of (E1): no estimator from visits of the same object
// can do better, since visit data are a function of the event times.

// EventPriorShape is the shape of the Gamma prior of (E2): ½.
const EventPriorShape = 0.5

// exposure is T of (E1): the time from the baseline to asOf (seconds), or
// to the latest event when asOf is not after it (or not finite).
func (c *Change) exposure(asOf float64) float64 {
	T := c.Span()
	if e := asOf - seconds(c.first); e > T && !math.IsInf(e, 0) {
		T = e
	}
	return T
}

// poissonEventsEst is (E3) with the interval (E4) over the exposure to
// asOf; defined for n ≥ 1 and T > 0 on a complete history.
func (c *Change) poissonEventsEst(cfg *Config, asOf float64, withCI bool, m *quantileMemo) (Estimate, bool) {
	if _, _, ok := c.visitBase(); !ok || !c.Complete() {
		return Estimate{}, false
	}
	T := c.exposure(asOf)
	a, b := float64(c.changes)+EventPriorShape, T+cfg.EventPriorExposure
	e := Estimate{Key: KeyPoissonEvents, Rate: a / b}
	if withCI {
		pLo, pHi := cfg.tails()
		e.Lo, e.Hi, e.HasCI = m.gamma(a, pLo, 1-pLo)/b, m.gamma(a, pHi, 1-pHi)/b, true
	}
	return e, true
}

// completeEstimate is estimate for a complete history as of asOf: naive
// (N/T, the MLE of (E1), with the exposure T to asOf), poisson_events and
// the Matloff estimators of any snapshots; the best estimate is
// poisson_events once n ≥ MinIntervals.
func (c *Change) completeEstimate(cfg *Config, asOf float64, out *Estimates, mq *quantileMemo) (Estimate, bool) {
	out.Reset()
	if _, _, ok := c.visitBase(); ok {
		T := c.exposure(asOf)
		e := Estimate{Key: KeyNaive, Rate: float64(c.changes) / T}
		pLo, pHi := cfg.tails()
		lo, hi := garwood(float64(c.changes), pLo, pHi, mq)
		e.Lo, e.Hi, e.HasCI = lo/T, hi/T, true
		out.add(e)
	}
	best, ok := c.poissonEventsEst(cfg, asOf, true, mq)
	if ok {
		out.add(best)
	}
	c.mat.estimates(cfg, out)
	return sane(best, ok && c.Intervals() >= int64(cfg.MinIntervals))
}
