// Package estimators implements the change-rate and access-rate estimators
// of Cho & Garcia-Molina, "Estimating Frequency of Change" (CGM, ACM TOIT
// 2003), Matloff, "Estimation of Internet File-Access/Modification Rates
// from Indirect Data" (ACM TOMACS 2005) and Malcolm & Armitage, "Bandwidth
// Efficient Web Object Change Interval Estimation" (M&A), with confidence
// intervals, a best-estimate rule and visit schedules.
//
// The package is pure: no I/O, no clock, no goroutines, no package-level
// mutable state. Times are float64 seconds since the Unix epoch, durations
// are seconds and rates are per second. Per object, Change and Access keep a
// fixed-size state that is updated in O(1) without allocation; Estimate and
// NextVisit do not allocate either (an Estimates list allocates its memo of
// interval quantiles once, on first use: quantiles depend only on counts,
// so a reused list computes each one once; see quantile.go for how they
// are solved). The state keeps times and interval sums
// as whole milliseconds (the resolution of every log format; input times are
// rounded to it), so the sums are exact. AppendBinaryAt/DecodeBinaryAt give
// a compact, lossless encoding (decode(encode(s)) == s field by field) of a
// few dozen bytes, with times relative to a caller's reference time;
// version-1 states (float64 seconds) are still decoded.
//
// # Estimators
//
// Notation: n visit intervals (visits after the baseline), X of them with a
// detected change, X̄ = n − X, T the span from the baseline to the latest
// visit, f = n/T the mean visit frequency, r = λ/f, t_ci the changed and t_uj
// the unchanged intervals, U = Σ t_uj. An estimator that is undefined
// (too few observations, singularity) is absent from the output, never 0,
// Inf or NaN; a rate of 0 is reported only when 0 is the estimate (for
// example no change in a positive span).
//
//	key                 estimate                                              95% interval
//	naive               X/T (CGM §4.1)                                         Garwood exact Poisson interval of X, divided by T
//	cgm_improved        r̂ = −log((X̄+0.5)/(n+0.5)), λ̂ = r̂f (§4.2, App. B)        Clopper–Pearson for θ = 1−e^{−r}, mapped by −f·log(1−θ); none at X = n (unbounded)
//	bayes_beta          θ̂ = (X+α)/(n+α+β), λ̂ = −f log(1−θ̂) (App. B)             equal-tailed Beta(X+α, n−X+β) posterior interval, mapped likewise
//	cgm_irregular_mle   root of Σ t_ci/(e^{λt_ci}−1) = U (eq. 2, App. C)          Wald on log λ with the observed information Σ t²e^{λt}/(e^{λt}−1)² (none when wider than one event's Garwood interval, best.go B5); X = 0: λ̂ = 0, upper bound −ln(0.025)/U
//	cgm_lastmod         X'/T, X' = (X−1) − X/(N log(1−X/N)) (Fig. 10, 13)         Garwood interval of X over exposure T (the Fig. 10 likelihood is exactly λ^X e^{−λT})
//	matloff_count       λ̌ = −(1/τ) ln(1 − M_n/n) (eq. 3)                           λ̌ ± z·SE, SE of eq. 14, clipped at 0; none when M_n = 0
//	matloff_lastmod     λ̂: r(λ̂) = W̄, r(t) = τ/(1−e^{−tτ}) − 1/t (eq. 5, 6)       λ̂ ± z·SE, SE of eq. 15 (= 1/sqrt(m·r'(λ̂))), clipped at 0
//	matloff_max         max(λ̌, λ̂) (§6.2, §8) over those defined                  the interval of the larger one
//	matloff_kernel      b̂(0) = #(0,h)/(nh), h = τ/10 (eq. 27)                     Garwood interval of #(0,h), divided by nh
//	malcolm_lastmod     visits/Σ ages (inverse of the eq. 2 mean age)          none: ages at successive visits share one change, not independent
//	malcolm_nolastmod   1/avgChgInterval' of eq. 3                             none
//	poisson_events      (N+½)/(T+τ₀) on a complete history (events.go, E3;      equal-tailed Gamma(N+½, T+τ₀) posterior interval (E4)
//	                    Kolobov et al. 2019); naive is then N/T exactly
//	pooled              beyond the papers: mean of the Gamma(α+x, β+e) posterior    equal-tailed posterior (credible) interval
//	                    under a site prior fitted by moments (pooled.go; the
//	                    aggregator adds it from the site's stored prior and
//	                    publishes it below PooledMaxChanges changes,
//	                    aggregate/siteprior.go; Change.Estimate does not); for
//	                    a complete history in a population with a trend,
//	                    Gamma(α+N, βρ+e^g) on the trend-weighted exposure
//	                    (trend.go T7), published whatever N
//	poisson_trend       beyond the papers: (N+½)/(e^g+τ₀), (E3) on the           equal-tailed Gamma(N+½, e^g+τ₀) interval (E4)
//	                    trend-weighted exposure (trend.go T6), where the
//	                    population has a trend and no prior
//
// Details and edge cases:
//   - naive and cgm_improved/bayes_beta need n ≥ 1 and T > 0; cgm_improved
//     is defined at X = n (that is the point of the +0.5, App. B).
//   - cgm_irregular_mle keeps the changed intervals in 128 log-spaced
//     buckets (4 per octave, 1/16 s to 8.5 years), each standing for its
//     geometric centre, all scaled so that their total equals the exact
//     Σ t_ci; U is exact. It is singular (absent) when U = 0. On the same
//     data the bucketed root differs from the exact root (IrregularMLE) by
//     0.24% on average and at most 3.4% (few changes with λt ≫ 1), always
//     less than a tenth of its own standard error (TestIrregularBucketError).
//   - cgm_lastmod uses the intervals whose closing visit carried
//     Last-Modified; T_i = Time − LastModified, the interval counts as
//     changed when T_i < I_i. X' = 0 at X = 0 (footnote 5), X' = N−1 at
//     X = N; it needs N ≥ 2 (the App. D correction is undefined at N = 1).
//     Its bias is below 2% for every r already at N = 2 (Fig. 12; exact
//     integration gives at most 1.44%, at r ≈ 0.7; also checked by
//     simulation).
//   - matloff_lastmod is 0 when W̄ ≤ τ/2 (§3.2.3) and absent when W̄ ≥ τ;
//     the root is bracketed in (0, 1/(1−W̄/τ))/τ and refined by Newton with
//     bisection. matloff_count is absent when M_n = n.
//   - Access "naive" is (N−1)/(t − first access), t = max(asOf, last
//     access), with the Garwood interval: direct data is a complete history,
//     for which the count over the exposure is the Poisson MLE.
//
// # Regular or irregular visits
//
// Visits are regular when the coefficient of variation of the visit
// intervals, sqrt(ΣI²/n − Ī²)/Ī, is at most Config.RegularCV (0.2). With
// irregular intervals I the regular estimators with f = 1/Ī estimate
// −log E[e^{−λI}]·f ≤ λ (Jensen), a relative bias of about r·CV²/2: under
// 3% at CV = 0.2 and r = 1.5, the revisit ratio the schedules aim for.
// Passive monitoring (proxy revalidations) has CV ≈ 1 and is irregular.
//
// # The best estimate
//
// A complete history (every accepted visit a Visit.Complete change event,
// events.go) publishes naive and poisson_events only, and poisson_events
// is its best estimate: the visit-based estimators below assume at most
// one change seen per visit interval and do not apply. Otherwise
// Change.Estimate names one best estimate, in this order:
//
//  1. Visits (n ≥ MinIntervals): the estimator of the lowest expected
//     error for the object's design (best.go, equations B1–B7): the mean
//     |log(λ̂/λ)|, capped at log G, computed from each estimator's own
//     sampling distribution (exact binomial sums for naive, cgm_improved
//     and bayes_beta; the Fig. 10 exposure's moments for cgm_lastmod),
//     with the count's variance scaled by the flags' variance factor D of
//     the published interval (B7), and averaged over the posterior
//     quantiles of r. Regular visits compare
//     naive, cgm_improved, bayes_beta and (with Last-Modified on at least
//     MinLastModFraction of the intervals) cgm_lastmod; irregular visits
//     take cgm_lastmod with Last-Modified (its likelihood is exact for any
//     visit times, §5), else cgm_irregular_mle (§4.3).
//  2. Conditioning (B5): an estimate whose interval is wider than the
//     Garwood interval of one Poisson event (ratio ≈ 220 at 95 %), or
//     unbounded, is not named while a candidate with a narrower interval
//     exists: three visits nine years apart with one change gave
//     cgm_irregular_mle the interval [1.8e-42, 1.0e+27] /s.
//  3. matloff_count when only Matloff snapshots were seen (at least
//     MinIntervals periods) and λ̌τ < 3, else matloff_lastmod: Matloff §6.1
//     finds λ̌ better for small λτ and λ̂ for large λτ, crossing near
//     λτ ≈ 3 (Fig. 2; research/cmd/eval reproduces 2.9). The paper's general advice
//     max(λ̌, λ̂) (§6.2, §8), still published as matloff_max, over-estimated
//     the real NASA access rates at small τ in docs/eval/REPORT.md (error
//     1.54 against 0.011 for λ̌ at τ = 0.5 min), while this rule was the
//     best or close to the best at every τ.
//
// With fewer observations there is no best estimate (ok=false).
//
// The best estimate's interval on regular visits (naive, cgm_improved,
// bayes_beta) is its estimator's interval recomputed on the effective
// sample n/D̂, X/D̂, with D̂ = (1+ρ̂)/(1−ρ̂) the lag-1 variance factor of the
// change flags (dependence.go, D1–D4; ρ̂ from the count of adjacent
// changed intervals in the state), bounded to [1, n]: bursty changes
// correlate the flags of successive visits and the binomial interval is
// too narrow. Widened only; the point estimate and the intervals listed
// in Estimates are the estimators' own.
//
// Evaluation (TestBestRuleEvaluation, 4000 seeded objects per regime):
// the published estimate's mean capped |log(est/true)| (the rule's loss)
// must be within 3 % of the lowest of the single paper estimators defined
// in every run, in every regime of the grid (regular/irregular visits,
// with or without Last-Modified, r from 0.1 to 3, n from 20 to 90,
// including issue 31's daily-polled Last-Modified world at r = 0.3–1 that
// no rule was derived from); the test fails otherwise. Measured (mean
// capped |log|, median |log|):
//
//	regular, no LM, r=1.5, n=30   bayes_beta 0.175, 0.168 (lowest 0.175)
//	regular, no LM, r=0.3, n=30   bayes_beta 0.273, 0.222 (lowest)
//	regular, LM, r=3, n=20        cgm_lastmod 0.182, 0.154 (lowest: malcolm_lastmod 0.182)
//	regular, LM, r=0.5, n=20      bayes_beta 0.274, 0.267 (lowest; naive's median 0.223)
//	regular, LM, r=0.6, n=90      cgm_lastmod 94 %: 0.126, 0.105 (the old rule's naive: 0.462, 0.457)
//	irregular, no LM, r=1.5, n=60 cgm_irregular_mle 0.161, 0.134 (lowest)
//	irregular, LM, r=1.5, n=30    cgm_lastmod 0.189, 0.160 (lowest)
//
// Known cost of (B5): at r = 3 with n = 10 regular visits (X = n in 60 %
// of runs, where cgm_improved's interval is unbounded) the rule names
// bayes_beta: mean capped |log| 0.321 against 0.216 for cgm_improved alone.
//
// Outside this grid, at r = 0.1 (a few changes in 30–90 visits), the
// lowest single estimator is up to 20 % better than the rule (checked by
// hand, not enforced); objects with so few changes are where the pooled
// estimate (Pooled) can replace the single-object rule in the aggregator.
// (The rule it replaces, issue 31, had thresholds fitted to this grid:
// naive while cgm_lastmod's r̂ < 1, bayes_beta below 10 changes.)
//
// On real data (research/estimatorseval's TestPHPDocHistoryEvaluation:
// 136 PHP-manual pages with ≥ 4 change days in 2016–2017, truth = change
// days per second as in CGM §6.3, read from ../shared/data when present) the best estimate is closer to the
// truth than naive for weekly and monthly crawlers (mean |log(est/true)|
// weekly 0.29 vs 0.29, monthly 0.47 vs 0.50, monthly with Last-Modified
// 0.38 vs 0.50; medians 0.88/0.86, 0.80/0.68, 0.80/0.68). The changes are
// bursty (several change days within one visit interval), so every
// existence-of-change estimator reads low; bayes_beta's prior happens to
// offset that at these small counts (mean |log| 0.21 weekly), and
// cgm_lastmod has the best median (1.02 weekly) but a wider spread, since
// bursts make the ages short. The rule is not tuned to this one data set.
// Access.Estimate names naive (direct data, at least MinIntervals accesses
// after the first), else the snapshot rule of item 4.
//
// # Schedules
//
// Change.NextVisit implements M&A Listing 1 (Last-Modified present; Table 3
// defaults: MAX_CHANGES 100, TARGET_INTERVAL 1 day, MAX_RATIO 5) and
// Listing 2 (no Last-Modified; Table 4: MAX_CHANGES 100, SOFT_MAX_INTERVAL
// 2 days, MAX_RATIO 3, MIN_INTERVAL 10 min), then CGM Example 4 (interval =
// 1.5/λ̂, where σ/r is smallest). Allocate splits a visit budget with
// f ∝ √λ (CGM §6.4). TTL gives the cache lifetime with a target
// probability of serving stale content, −ln(1−p)/λ.
package estimators
