package estimators

import "math"

// The site's between-object factor (issue 31, calibration of bursty
// flags at r ≪ 1). Beyond the papers.
//
// Why (R17) falls short. The end spacing samples the gaps by their length
// only up to the window: S_X ≤ n. Where most gaps are longer than the
// window, most windows hold one change or none (Weibull gaps of shape ½
// at one change per ten intervals, n = 60: 14 % of the windows see no
// change, most others one), and such a window has no spacing to show
// them (given X = 1, S_0 and S_X have one law and sum to n + 1; X = 0
// enters no sum of R7 or R15). B̄ over all such objects is 1.61 against
// the count's factor Var(X)/(n·p(1 − p)) = 2.81 (docs/eval/HELDOUT.md).
//
// What sees the long gaps is the spread of the counts between windows: a
// window that falls in a burst holds many changes, one that falls in a
// lull none. Given the rate λ_w at which its window's stretch of the
// process runs (its phase in the bursts and lulls around it), an
// object's flags are nearer independent; over the windows of a site, by
// the law of total variance, in the evidence's Poisson units of pooled.go
// (x_i ≈ λ̂_i·e_i, x_i/e_i's sampling variance λ/e_i),
//
//	Var(x_i) = μ·e_i + σ²·e_i²,   σ² = Var(λ_w) over the site's windows,    (R19a)
//
// the gamma–Poisson (negative-binomial) variance law whose σ² the site's
// prior already fits by moments over the same objects' evidence (P2,
// pooled.go: Clayton & Kaldor's exposure-weighted estimator, all objects
// of the site, those without a change included). The variance of an
// object's estimate about the site's long-run rate μ over the variance
// its evidence claims, μ/e_i, is then
//
//	D_B,i = 1 + e_i·σ̂²/μ̂,                                                  (R19b)
//
// (D1)'s factor of the count read through the site's windows instead of
// through one window's spacings. It grows with the exposure as the
// negative-binomial's does: a fluctuation of the local rate adds to the
// count in proportion to the window's length, its sampling noise only in
// proportion to the root.
//
// What σ̂² also holds. Pages of one site whose long-run rates differ
// spread their counts as well, and one window per page cannot tell that
// spread from gaps longer than the window (a page in a long lull and a
// slow page show the same window). The interval's target is each page's
// own long-run rate, so the rates' spread is no variance the interval
// must cover: E_i[Var(x_i | λ_i)] ≤ Var(x_i) (law of total variance,
// the between-page term ≥ 0), and D_B,i is an upper bound of the factor
// the site's objects need, equal to it where they share one long-run
// rate. It therefore enters only on the safe side, and only on a site
// whose own end spacings already reject independent flags — (R17)'s
// one-sided test of D ≤ 1 at level 1 − Level (FlagSite.Back > 0):
//
//	D = max(D_R18, 1 + e_i·σ̂²/μ̂)   if B̄ > 1 + z·se₀(B̄) (R17),
//	D = D_R18                       otherwise,                            (R19)
//
// bounded to [1/n, n] as (R6). Under independent flags a site passes the
// test with probability about 1 − Level whatever its pages' rates, so at
// most that share of sites is widened by R19, never narrowed; a nearly
// periodic site (B̄ < 1) never is. On a bursty site whose pages also
// differ in rate R19 publishes wider intervals than the flags need, by
// the between-page term: the cost of a bound where the two cannot be
// told apart.
//
// e_i, the object's evidence exposure (pooled.go), is on regular visits
// in closed form: the existence-of-change likelihood X·log(1 − e^{−λt}) −
// λ(n − X)t (CGM App. C with every t_i = t = T/n) has its root at
// 1 − e^{−λ̂t} = θ̂ = X/n and information I = X·t²(1 − θ̂)/θ̂², so
//
//	e_i = λ̂·I = T·(1 − θ̂)·(−ln(1 − θ̂))/θ̂   (X ≥ 1),   e_i = T   (X = 0),
//
// the exposure of PoolStats' evidence for the object (Change.Evidence;
// TestBetweenExposure), without its root-finding. At X = n the likelihood
// has no root (Evidence.Floor) and R19 is not applied.
//
// σ̂² is (P2) before the prior's floor (MaxShape): a site whose objects
// look identical has σ̂² ≈ 0 and D_B ≈ 1, not the floor's coefficient of
// variation of 32 %. Its expectation under (R19a) with fixed exposures is
// σ²·(1 − Σe_i²/E²) — (P2)'s numerator has expectation σ²·(E − Σe_i²/E),
// its denominator is E — low by about 1/N for N objects of like exposure
// (TestExcessMoments); 0 under Poisson counts of one rate.

// ExcessAt is σ̂²/μ̂ of (R19b), the site's between-object excess per
// second of exposure, from the moments of (P2) as of t (PriorAt's t)
// without the prior's floor: 0 where σ̂² ≤ 0; ok false where the site
// has no prior.
func (p PoolStats) ExcessAt(t float64) (float64, bool) {
	mu, s2, ok := p.momentsAt(t)
	if !ok || !(mu > 0) || math.IsInf(mu, 0) || math.IsNaN(s2) || math.IsInf(s2, 0) {
		return 0, false
	}
	return max(s2, 0) / mu, true
}

// WithExcess is p with Excess set from the site's prior sums s as of t
// (ExcessAt; 0 where the site has no prior).
func (p FlagPool) WithExcess(s *PoolStats, t float64) FlagPool {
	p.Excess = 0
	if s != nil {
		if x, ok := s.ExcessAt(t); ok {
			p.Excess = x
		}
	}
	return p
}

// betweenExposure is e_i of (R19): the evidence exposure of c's regular
// visits, in seconds; ok false at X = n or without visits.
func (c *Change) betweenExposure() (float64, bool) {
	n, T, ok := c.visitBase()
	if !ok || c.changes >= n {
		return 0, false
	}
	if c.changes == 0 {
		return T, true
	}
	th := float64(c.changes) / float64(n)
	return T * (1 - th) * -math.Log1p(-th) / th, true
}

// BetweenFactor is D_B,i = 1 + e_i·excess of (R19b) for c's regular
// visits (research/cmd/eval reports it); ok false where excess ≤ 0 or
// e_i is not defined.
func (c *Change) BetweenFactor(excess float64) (float64, bool) {
	if !(excess > 0) || math.IsInf(excess, 0) {
		return 0, false
	}
	e, ok := c.betweenExposure()
	if !ok {
		return 0, false
	}
	return 1 + e*excess, true
}
