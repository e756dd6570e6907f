package estimators

// Serial dependence of the change flags (issue 31, calibration).
//
// Every visit estimator reads the flags x_1 … x_n (x_i = 1 when visit
// interval i held a detected change) as independent Bernoulli(p) trials:
// X = Σ x_i ~ Binomial(n, p) (CGM §4). When changes come in bursts, or
// nearly periodically, successive flags are correlated and the count
// varies more (or less) than the binomial says. For stationary flags with
// lag-h autocorrelation ρ_h the variance of the count is exactly
//
//	Var(X) = n·p(1−p)·[1 + 2·Σ_{h=1}^{n−1} (1 − h/n)·ρ_h]                (D1)
//
// and n·Var(X/n) → p(1−p)·Σ_h ρ_h as n → ∞ (Brockwell & Davis, Time
// Series: Theory and Methods, 2nd ed. 1991, §7.1, Theorem 7.1.1). When
// the dependence reaches one interval back — the flags a stationary
// two-state Markov chain, whose lag-h autocorrelation is ρ^h with ρ =
// P(x_{i+1}=1 | x_i=1) − P(x_{i+1}=1 | x_i=0) — the sum is geometric and
// the variance grows by the lag-1 factor of an AR(1) sequence,
//
//	D = Var(X)/(n·p(1−p)) → 1 + 2·Σ_{h≥1} ρ^h = (1 + ρ)/(1 − ρ),         (D2)
//
// the inverse of the effective-sample-size ratio n_eff/n (Bayley &
// Hammersley, J. R. Stat. Soc. Suppl. 8, 1946; the variance of the mean
// of an AR(1) series in Box, Jenkins & Reinsel, Time Series Analysis).
//
// ρ is estimated from the count C of adjacent interval pairs that both
// changed, among the m − 1 adjacent pairs of m intervals (m = n):
// E[C] = (m − 1)·P(x_i = x_{i+1} = 1) = (m − 1)·(p² + ρ·p(1−p)), so with
// p̂ = X/n
//
//	ρ̂ = (C/(m − 1) − p̂²) / (p̂(1 − p̂)) + 1/n                             (D3)
//
// where the 1/n removes the bias of p̂² (E[p̂²] = p² + p(1−p)/n for
// independent flags), so that ρ̂ is unbiased to first order at ρ = 0.
// ρ̂ is not defined when every flag, or none, is set (p̂(1−p̂) = 0: the
// count has no binomial spread to scale) or with fewer than two counted
// intervals; then D = 1. A state stored before the count existed
// (encoding version 1 or 2) starts from C = E, the expectation for
// independent flags (expectedPairs), rather than from a separate base,
// which would cost its bytes in every state: its earlier intervals count
// as independent, and its D̂ is pulled toward 1 by their share.
//
// The published interval is the chosen estimator's own interval
// recomputed on the effective sample — n/D trials with X/D changes, the
// design-effect correction of Kish (Survey Sampling, 1965, §8.2), applied
// to the exact binomial interval as in Korn & Graubard (Survey
// Methodology 24, 1998) — which scales the count's variance by D and
// keeps the estimator's point value:
//
//	naive:         Garwood interval of X/D events, times D/T
//	cgm_improved:  Clopper–Pearson interval of X/D in n/D trials         (D4)
//	bayes_beta:    Beta(X/D + α, (n − X)/D + β) posterior quantiles
//
// (cgm_lastmod and the Matloff estimators read other data and keep their
// intervals.) Only on regular visits (Change.Regular): there every flag
// has the same probability p under the Poisson model, so (D3) measures the
// dependence of the changes. On irregular visits p_i = 1 − e^{−λt_i}
// varies with the interval t_i, and visit intervals that are themselves
// serially correlated (a proxy's bursts of requests) correlate the flags
// without any dependence of the changes: given the visit times the
// Poisson flags are independent, and cgm_irregular_mle's likelihood (CGM
// eq. 2) is exact; its interval is kept. D is bounded to [1, n]: the effective sample holds at least
// one interval, and the interval is widened, never narrowed. Under
// independent flags — the Poisson model every estimator is exact for — ρ̂
// has standard error ≈ 1/√n (Bartlett, J. R. Stat. Soc. Suppl. 8, 1946),
// 0.3 at n = 10: a negative ρ̂ on tens of intervals is mostly noise, and
// narrowing on it would under-cover the model's own world, while negative
// dependence (nearly periodic changes) makes the binomial interval
// conservative, not too narrow.
//
// What D does not capture: dependence beyond the Markov structure (ρ_h
// decaying slower than ρ^h, as for Weibull renewal intervals of shape < 1,
// whose flags' ρ_2 exceeds ρ_1²), and the rate λ itself where regular
// visits identify only the per-interval change probability (several
// changes in one interval count once): see docs/eval/HELDOUT.md.

// FlagCorrelation is ρ̂ (D3) from n intervals with x changed, of which the
// last m were counted with c adjacent changed–changed pairs; ok=false
// where it is not defined.
func FlagCorrelation(n, x, m, c int64) (rho float64, ok bool) {
	if n < 2 || m < 2 || x <= 0 || x >= n || c < 0 {
		return 0, false
	}
	p := float64(x) / float64(n)
	return (float64(c)/float64(m-1)-p*p)/(p*(1-p)) + 1/float64(n), true
}

// VarianceFactor is D = (1 + ρ)/(1 − ρ) (D2), the variance of a flag
// count over the binomial variance for lag-1 correlation ρ ∈ (−1, 1).
func VarianceFactor(rho float64) float64 { return (1 + rho) / (1 - rho) }

// FlagDependence is the factor D (D2) of c's flags with ρ̂ (D3), bounded
// to [1, n]; 1 where ρ̂ is not defined.
func (c *Change) FlagDependence() float64 {
	n := c.Intervals()
	rho, ok := FlagCorrelation(n, c.changes, n, c.pairs)
	if !ok || rho <= 0 {
		return 1
	}
	N := float64(n)
	if rho >= 1 {
		return N
	}
	return min(VarianceFactor(rho), N)
}

// dependentInterval recomputes e's interval on the effective sample of
// (D4) for the estimators of regular visits that read the change flags;
// the others, and D = 1, are returned unchanged.
func (c *Change) dependentInterval(e Estimate, cfg *Config, m *quantileMemo) Estimate {
	if !c.Regular(cfg) {
		return e
	}
	return c.effectiveInterval(e, c.FlagDependence(), cfg, m)
}

// EffectiveInterval is e (naive, cgm_improved or bayes_beta of c's
// visits) with its interval recomputed on the effective sample (D4) for a
// given variance factor D > 0 (FlagDependence gives the published one);
// research/cmd/eval uses it to separate the error of D̂ from the rest.
func (c *Change) EffectiveInterval(e Estimate, D float64, cfg *Config) Estimate {
	if !(D > 0) {
		return e
	}
	return c.effectiveInterval(e, D, cfg, nil)
}

func (c *Change) effectiveInterval(e Estimate, D float64, cfg *Config, m *quantileMemo) Estimate {
	if !e.HasCI || D == 1 {
		return e
	}
	n, T, ok := c.visitBase()
	if !ok {
		return e
	}
	N, X := float64(n), float64(c.changes)
	f := N / T
	pLo, pHi := cfg.tails()
	switch e.Key {
	case KeyNaive:
		lo, hi := garwood(X/D, pLo, pHi, m)
		e.Lo, e.Hi = lo*D/T, hi*D/T
	case KeyCGMImproved:
		// Clopper–Pearson (formulas.go) with non-integer counts.
		lo := 0.0
		if X > 0 {
			lo = m.beta(X/D, (N-X)/D+1, pLo)
		}
		e.Lo, e.Hi = thetaToRatio(lo)*f, thetaToRatio(m.beta(X/D+1, (N-X)/D, pHi))*f
	case KeyBayesBeta:
		a, b := X/D+cfg.BetaAlpha, (N-X)/D+cfg.BetaBeta
		e.Lo, e.Hi = thetaToRatio(m.beta(a, b, pLo))*f, thetaToRatio(m.beta(a, b, pHi))*f
	}
	return e
}
