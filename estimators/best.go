package estimators

// Small-count corrections of the best-estimate rule. On the
// project's simulated grid (TestBestRuleEvaluation) the corrected paper
// estimators are not the most accurate where few changes were seen: there
// the error of cgm_improved is dominated by its variance, and
//
//   - without Last-Modified, fewer than FewChanges detected changes on
//     regular visits: bayes_beta (CGM App. B, posterior mean of θ under the
//     Beta prior) is the most accurate estimator of the grid (median
//     |log(est/true)| 0.22 against 0.28 for cgm_improved at r = 0.3, n = 30);
//   - with Last-Modified on regular visits, while cgm_lastmod's r̂ = λ̂/f is
//     below NaiveMaxRatio: naive X/T is (0.22 against 0.24 at r = 0.5,
//     n = 20): at small r its bias (1−e^{−r})/r − 1 (Thm 4.1) costs less
//     than the variance the correction adds.
//
// Where an object's site has a fitted prior, the aggregator publishes the
// pooled (empirical-Bayes) estimate instead for objects with fewer than
// PooledMaxChanges changes (see Pooled).
const (
	FewChanges    = 10
	NaiveMaxRatio = 1.0
)

// smallCountBest returns the estimate the rule prefers over cgm_lastmod or
// cgm_improved for a regular object with few changes; ok is false when the
// paper estimators' order applies. pre, when not nil, holds the
// candidates already computed (with their intervals).
func (c *Change) smallCountBest(cfg *Config, withCI bool, pre *visitEstimates) (Estimate, bool) {
	n := c.Intervals()
	if n < int64(cfg.MinIntervals) || !c.Regular(cfg) {
		return Estimate{}, false
	}
	if c.lmN >= int64(cfg.MinIntervals) && c.hasLastMod(cfg) {
		lm, ok := pre.of(visitLastMod, c, cfg, false)
		if T := c.Span(); ok && T > 0 && lm.Rate*T/float64(n) < NaiveMaxRatio {
			return pre.of(visitNaive, c, cfg, withCI)
		}
		return Estimate{}, false
	}
	if c.changes < FewChanges {
		return pre.of(visitBayes, c, cfg, withCI)
	}
	return Estimate{}, false
}
