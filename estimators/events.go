package estimators

// Complete change histories.
//
// A source that records every change of an object at its time (a
// version-control log; ingest's changes-tsv) observes the change process
// itself, not samples of it. With the baseline at the first event and N
// changes after it in the span T (the state's X and T), the likelihood of
// a Poisson process of rate λ observed continuously is
//
//	L(λ) = λ^N e^{−λT}                                              (E1)
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

// poissonEventsEst is (E3) with the interval (E4); defined for n ≥ 1 and
// T > 0 on a complete history.
func (c *Change) poissonEventsEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	_, T, ok := c.visitBase()
	if !ok || !c.Complete() {
		return Estimate{}, false
	}
	a, b := float64(c.changes)+EventPriorShape, T+cfg.EventPriorExposure
	e := Estimate{Key: KeyPoissonEvents, Rate: a / b}
	if withCI {
		pLo, pHi := cfg.tails()
		e.Lo, e.Hi, e.HasCI = m.gamma(a, pLo, 1-pLo)/b, m.gamma(a, pHi, 1-pHi)/b, true
	}
	return e, true
}

// completeEstimate is estimate for a complete history: naive (the MLE of
// (E1)), poisson_events and the Matloff estimators of any snapshots; the
// best estimate is poisson_events once n ≥ MinIntervals.
func (c *Change) completeEstimate(cfg *Config, out *Estimates, mq *quantileMemo) (Estimate, bool) {
	out.Reset()
	if e, ok := c.naiveEst(cfg, true, mq); ok {
		out.add(e)
	}
	best, ok := c.poissonEventsEst(cfg, true, mq)
	if ok {
		out.add(best)
	}
	c.mat.estimates(cfg, out)
	return sane(best, ok && c.Intervals() >= int64(cfg.MinIntervals))
}
