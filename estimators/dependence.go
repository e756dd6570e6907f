package estimators

import "math"

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
// States of encoding version 3 kept the count C of adjacent interval
// pairs that both changed, from which
//
//	ρ̂ = (C/(n − 1) − p̂²) / (p̂(1 − p̂)) + 1/n,   p̂ = X/n               (D3)
//
// (E[C] = (n − 1)·(p² + ρ·p(1−p)); the 1/n removes the bias of p̂²);
// such a state is carried over into the spacing statistics below with
// the factor (D2) of its ρ̂ (encoding.go, importSpacings).
//
// The lag-1 factor misses dependence that reaches further back (bursty
// changes: ρ_2 > ρ_1²) and was only ever used to widen. The factor of
// every lag comes from the renewal structure of the flags. Let s_1 < … <
// s_X be the changed intervals and G_j = s_{j+1} − s_j the gaps between
// them, in intervals. When the gaps are independent with mean μ = 1/p and
// variance σ² (a renewal sequence of changed intervals), X is
// asymptotically normal with Var(X) ~ n·σ²/μ³ (Cox, Renewal Theory, 1962,
// §3.3; Feller, An Introduction to Probability Theory II, §XI.5; the
// regenerative method of Crane & Iglehart, Oper. Res. 23, 1975, with one
// change per cycle), so that
//
//	D = (σ²/μ³)/(p(1−p)) = σ²/(μ(μ − 1)).                                (R1)
//
// Independent flags have geometric gaps, σ² = (1−p)/p² = μ(μ − 1): D = 1.
// The two-state Markov chain is a renewal sequence (each changed interval
// regenerates it) with G = 1 with probability a = P(1|1) and 1 +
// Geometric(b = P(1|0)) otherwise: μ − 1 = (1−a)/b, σ² = (1−a)(1+a−b)/b²,
// and (R1) is (1 + a − b)/(1 − a + b) = (D2) with ρ = a − b. So (R1)
// contains the lag-1 factor and equals 1 + 2·Σ_h ρ_h for every renewal
// sequence of flags; it is < 1 for nearly periodic changes (gaps less
// variable than geometric) and > 1 for bursty ones. (A continuous-time
// renewal process seen at regular visits is a renewal sequence only
// approximately: the time of the latest change within a changed interval
// carries over to the next gap.)
//
// The spacings. With the baseline as position 0 and n + 1 as a sentinel,
// the X + 1 spacings S_0 = s_1, S_j = G_j (0 < j < X), S_X = n + 1 − s_X
// are ≥ 1 and sum to n + 1. The state keeps run = n − s_X (intervals since
// the latest changed one; n without a change) and the sum of the squared
// closed spacings Q_c = Σ_{j<X} S_j², so that
//
//	Q = Σ_{j=0}^{X} S_j² = Q_c + (run + 1)².                              (R2)
//
// Under independent flags, given X, the changed intervals are a uniformly
// random X-subset of {1, …, n}, and T_j = S_j − 1 are uniform over the
// compositions of M = n − X into K = X + 1 non-negative parts: a
// Dirichlet-multinomial(M; 1, …, 1) vector (Bose–Einstein statistics,
// Feller I §II.5; Johnson, Kotz & Balakrishnan, Discrete Multivariate
// Distributions, 1997, ch. 35), whose factorial moments are
// E[Π_j T_j^{(a_j)}] = M^{(A)}·Π_j a_j! / K^{[A]}, A = Σ a_j, with the
// falling M^{(A)} = M(M−1)…(M−A+1) and the rising K^{[A]} = K(K+1)…
// (K+A−1). The spread of the spacings, V = Q − (n + 1)²/K = Σ_j (S_j −
// S̄)², has the exact mean under independent flags
//
//	E₀[V] = K·Var₀(T_j) = M·(n + 1)·X / (K·(K + 1)),                     (R3)
//
// and the estimate of D is the spread relative to it,
//
//	R̂ = V / E₀[V],                                                      (R4)
//
// unbiased for 1 under independent flags at every n and 1 ≤ X < n (the
// small-count bias of the plug-in σ̂²/(μ̂(μ̂ − 1)), whose denominator
// E[μ̂²] = μ² + σ²/K overstates, is not there), and consistent for (R1)
// under a renewal: V/K → σ² and E₀[V]/K → μ(μ − 1) at μ = (n + 1)/K. The
// two end spacings are censored gaps (a forward and a backward recurrence
// time): they are kept, so that a short window of a bursty object, whose
// long gaps are cut by its ends (a long gap rarely fits inside the
// window), still shows its long quiet stretches; under independent flags
// they are exchangeable with the others, and (R3) holds exactly.
//
// The noise of R̂ under independent flags — the Poisson model every
// estimator is exact for — follows from the same moments. With e_a =
// E₀[T_j^{(a)}] = a!·M^{(a)}/K^{[a]}, E₀[T_i^{(2)}T_j^{(2)}] = e_4/6 (i ≠
// j), (T^{(2)})² = T^{(4)} + 4T^{(3)} + 2T^{(2)}, and Q = Σ_j T_j^{(2)} +
// 3M + K,
//
//	Var₀(Q) = K·(e_4 + 4e_3 + 2e_2) + K(K − 1)·e_4/6 − K²·e_2²,
//	se₀(R̂) = √Var₀(Q) / E₀[V],                                          (R5)
//
// exact; as n and X grow at fixed p, se₀² → 4/K (the delta method on the
// geometric gaps' central moments σ² = q/p², μ₃ = q(1+q)/p³, μ₄ =
// q(1+7q+q²)/p⁴, q = 1 − p, gives Var(σ̂²/(μ̂(μ̂−1))) ≈ 4/K at every p).
// TestSpacingNullMoments checks (R3) and (R5) against enumeration.
//
// The published factor. A bursty object's R̂ is used as it is: widening
// is the safe side of the interval (under independent flags R̂ is
// independent of X given n — the arrangement of the changes is uniform
// whatever their number — so a widening that is noise raises the coverage
// and never lowers it). Narrowing is not: R̂ < 1 narrows the interval, and
// under independent flags R̂ falls below 1 − z·se₀ with probability about
// 1 − Φ(z). So the interval is narrowed only where R̂ says so beyond its
// own noise: a one-sided test of D ≥ 1 at level 1 − Level. R̂ is a
// ratio of sums of squares and skewed to the right (its lower tail is
// short), so its null distribution is taken as a scaled chi-square with
// the same mean and variance, R̂ ~ χ²_ν/ν with ν = 2/se₀² (Satterthwaite,
// Biometrics Bull. 2, 1946), whose lower quantile is, by the cube-root
// approximation of Wilson & Hilferty (PNAS 17, 1931),
//
//	q₀ = (1 − 2/(9ν) − z·√(2/(9ν)))³ = (1 − se₀²/9 − z·se₀/3)³,
//
// z = Φ⁻¹(Level) (1.645 at 95 %; q₀ = 0 where the base is negative), and
// q₀ = 0 where ν > X. The latter because the approximation must not
// make the lower tail thinner than it is: near 0, R̂ is small only when
// all K = X + 1 spacings are nearly equal, and with the spacings uniform
// on their simplex (the continuous limit of R3) P₀(R̂ < ε) ∝ ε^{(K−1)/2}
// (the volume of a ball of radius √ε in K − 1 dimensions), against
// ε^{ν/2} for χ²_ν/ν: the quantile is conservative when ν ≤ K − 1 = X.
// (As n and X grow ν → K/2; the condition excludes X ≤ 2, and states
// whose spread is fixed by n and X, se₀ = 0.) Then
//
//	D = R̂    if R̂ ≥ 1, or R̂ < q₀,
//	D = 1    otherwise.                                                  (R6)
//
// A world of independent flags is then narrowed in about 1 − Level of
// its objects (TestNarrowingNull: at most that, by enumeration of every
// arrangement of the changes). se₀ is the standard error under
// independent flags; for nearly periodic gaps the spread of R̂ is smaller
// and se₀ overstates it, so (R6) narrows less often than it could, and
// where it narrows R̂ overstates D (the two end spacings, partial gaps,
// are more variable than the periodic ones between): conservative both
// ways. D is bounded to [1/n, n]: the effective sample holds at least one
// interval and at most n².
//
// The lag-1 count is not kept beside (R2): both are consistent for the
// Markov chain, and (R1) for every renewal sequence; the pair count has
// the lower noise (se ≈ 2/√n against 2/√K, K = X + 1) on the one model
// that (R1) already covers, and would cost a byte in every state (the
// mixed class of aggregate's size test is at its 256-byte bound with R2
// alone: run and Q_c are packed into the bucket bits, encoding.go).
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
// has the same probability p under the Poisson model, so (R4) measures
// the dependence of the changes. On irregular visits p_i = 1 − e^{−λt_i}
// varies with the interval t_i, and visit intervals that are themselves
// serially correlated (a proxy's bursts of requests) correlate the flags
// without any dependence of the changes: given the visit times the
// Poisson flags are independent, and cgm_irregular_mle's likelihood (CGM
// eq. 2) is exact; its interval is kept.
//
// What D does not capture: dependence between successive gaps (a renewal
// is assumed; clustered bursts of bursts); gaps longer than the visits
// seen (R̂ reads the spacings inside the n intervals, so for heavy-tailed
// gaps it falls short of the count's factor until n is long against them:
// the pooled R̂ of docs/eval/HELDOUT.md; a site's end spacings, R13–R17
// in dependence_back.go, recover part of it); and the rate λ itself where
// regular visits identify only the per-interval change probability
// (several changes in one interval count once): see docs/eval/HELDOUT.md.

// maxSpacingIntervals bounds the intervals over which the spacing
// statistics are kept: Q ≤ (n + 1)² stays exact in an int64. Past it
// (68 years of visits every second) run and Q are zero and D = 1.
const maxSpacingIntervals = 1<<31 - 1

// spacingVisit updates run and Q_c (R2) for one more interval.
func (c *Change) spacingVisit(changed bool) {
	if c.Intervals() > maxSpacingIntervals {
		c.run, c.sq = 0, 0
		return
	}
	if changed {
		s := c.run + 1
		c.sq += s * s
		c.run = 0
	} else {
		c.run++
	}
}

// spacingsKept reports whether run and Q_c describe the state's flags.
func (c *Change) spacingsKept() bool { return c.Intervals() <= maxSpacingIntervals }

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

// spacingNull returns E₀[V] (R3) and √Var₀(Q) (R5) for n intervals with
// x changed, 1 ≤ x < n.
func spacingNull(n, x int64) (ev, sdq float64) {
	M, K := float64(n-x), float64(x+1)
	ev = M * float64(n+1) * float64(x) / (K * (K + 1))
	e2 := 2 * M * (M - 1) / (K * (K + 1))
	e3 := 6 * M * (M - 1) * (M - 2) / (K * (K + 1) * (K + 2))
	e4 := 24 * M * (M - 1) * (M - 2) * (M - 3) / (K * (K + 1) * (K + 2) * (K + 3))
	v := K*(e4+4*e3+2*e2) + K*(K-1)*e4/6 - K*K*e2*e2
	return ev, math.Sqrt(max(v, 0))
}

// SpacingDispersion is R̂ (R4) of n intervals with x changed whose X + 1
// spacings have Σ S_j² = q (R2), and its standard error under independent
// flags se₀ (R5); ok=false where it is not defined (x = 0 or x = n: no
// spread to compare).
func SpacingDispersion(n, x, q int64) (r, se float64, ok bool) {
	if x <= 0 || x >= n {
		return 0, 0, false
	}
	ev, sdq := spacingNull(n, x)
	N1 := float64(n + 1)
	v := float64(q) - N1*N1/float64(x+1)
	return v / ev, sdq / ev, true
}

// spacingSq is Q (R2); ok=false when the statistics are not kept.
func (c *Change) spacingSq() (int64, bool) {
	if !c.spacingsKept() {
		return 0, false
	}
	return c.sq + (c.run+1)*(c.run+1), true
}

// FlagDispersion is R̂ (R4) and se₀ (R5) of c's change flags.
func (c *Change) FlagDispersion() (r, se float64, ok bool) {
	q, ok := c.spacingSq()
	if !ok {
		return 0, 0, false
	}
	return SpacingDispersion(c.Intervals(), c.changes, q)
}

// FlagSpread is the numerator and the denominator of R̂ (R4), V and
// E₀[V] (R3), for pooling over objects: Σ V / Σ E₀[V] over a population
// whose flags share one law estimates its D with the noise of all their
// spacings (a site's factor, dependence_pool.go R8).
func (c *Change) FlagSpread() (v, ev float64, ok bool) {
	q, ok := c.spacingSq()
	n, x := c.Intervals(), c.changes
	if !ok || x <= 0 || x >= n {
		return 0, 0, false
	}
	ev, _ = spacingNull(n, x)
	N1 := float64(n + 1)
	return float64(q) - N1*N1/float64(x+1), ev, true
}

// FlagDependence is the published factor D (R6) of c's flags at cfg's
// level, bounded to [1/n, n]; 1 where R̂ is not defined.
func (c *Change) FlagDependence(cfg *Config) float64 {
	r, se, ok := c.FlagDispersion()
	if !ok {
		return 1
	}
	N := float64(c.Intervals())
	D := r
	if r < 1 && r >= narrowingQuantile(c.changes, se, cfg.zOneSided()) {
		D = 1
	}
	return min(max(D, 1/N), N)
}

// narrowingQuantile is q₀ of (R6) for x changes: the lower quantile of
// R̂ under independent flags, from its standard error se₀ and the normal
// quantile z; 0 (never narrow) where ν = 2/se₀² > x.
func narrowingQuantile(x int64, se, z float64) float64 {
	q := nullQuantile(se, -z)
	if q <= 0 || !(2 <= float64(x)*se*se) {
		return 0
	}
	return q
}

// nullQuantile is the Wilson–Hilferty quantile of R̂ ~ χ²_ν/ν (ν = 2/se₀²)
// at the normal quantile z: (1 − se₀²/9 + z·se₀/3)³; z < 0 gives the
// lower quantile q₀ of (R6), z > 0 the upper q₁ of (R18).
func nullQuantile(se, z float64) float64 {
	b := 1 - se*se/9 + z*se/3
	return b * b * b
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
