package estimators

import "math"

// The site's spacing factor: the dependence of the change flags pooled
// over a site's objects (issue 31, calibration). Beyond the papers.
//
// One object's R̂ (R4) rests on its X + 1 spacings: a bursty object quiet
// through most of its window has one or two, or none (X = 0: R̂ is not
// defined and (R6) publishes D = 1). The pages of one site share their
// publishing process, and with it the law of their flags; together they
// hold many spacings. The site keeps, over its objects with regular
// visits whose R̂ is defined and not fixed by n and X (se₀ > 0, R5), the
// sums
//
//	N = Σ 1,  U = Σ u_i,  UR = Σ u_i·R̂_i,  UR2 = Σ u_i·R̂_i²,
//	U2 = Σ u_i²,          u_i = 1/se₀(R̂_i)²                            (R7)
//
// (FlagPool; O(1) state, each object's term replaced at each of its
// visits like the gamma prior's evidence, pooled.go). Under the scaled
// chi-square law of (R6), R̂_i ~ D_i·χ²_ν/ν with ν = 2/se₀_i², R̂_i's
// sampling variance is D_i²·se₀_i²: at a common D the weights u_i are the
// inverse of each R̂_i's variance, and the site's factor is the
// precision-weighted mean
//
//	D̄ = UR/U,                                                           (R8)
//
// the minimum-variance unbiased linear combination of the R̂_i (and the
// maximum-likelihood estimate of a common D under that law: the score
// of Σ_i log-density of D·χ²_ν_i/ν_i is Σ_i (ν_i/2)(R̂_i/D² − 1/D));
// unbiased for 1 under independent flags (each R̂_i is, R4), where
// Var₀(D̄) = 1/U.
//
// Objects of one site need not share one D (pages of different rates or
// kinds), so the spread τ² of the objects' D_i about D̄ is estimated by
// the method of moments of DerSimonian & Laird (Control. Clin. Trials 7,
// 1986): with R̂_i = D_i + ε_i, Var(ε_i) = D̄²·se₀_i², the weighted spread
// Q = Σ u_i (R̂_i − D̄)² = UR2 − UR²/U has the expectation D̄²·(N − 1) +
// τ²·(U − U2/U), so
//
//	τ̂² = max(0, (Q − D̄²·(N − 1)) / (U − U2/U)).                        (R9)
//
// An object's factor is then its posterior mean under the normal model
// D_i ~ (D̄, τ²), R̂_i | D_i ~ (D_i, D̄²·se₀_i²) (Morris, JASA 78, 1983; the
// empirical-Bayes shrinkage of Efron & Morris): its own R̂_i with the
// weight of its precision against the site's spread,
//
//	w_i = τ̂² / (τ̂² + D̄²·se₀_i²),   D̃_i = D̄ + w_i·(R̂_i − D̄),           (R10)
//
// w_i = 0 where τ̂² = 0 or R̂_i is not defined (X = 0 or X = n: the
// object has no spacing of its own and takes its site's factor). A site
// whose objects share one law (τ̂² = 0) gives each of them D̄, with the
// noise of all their spacings; a site of mixed laws leaves each object
// nearer its own R̂.
//
// The published factor. The site's factor enters on the safe side only:
//
//	D = D̃_i                       if D̃_i ≥ 1,
//	D = (R6)'s narrowed R̂_i      if D̃_i < 1 and R̂_i < q₀ (R6),
//	D = 1                         otherwise,                             (R11)
//
// bounded to [1/n, n] as in (R6), then widened by the site's end
// spacings (R17, dependence_back.go), kept at least at an object's own
// R̂ where that rejects D ≤ 1 (R18), and on a site whose end spacings
// reject independence widened to its between-object factor (R19,
// dependence_between.go); the published interval is (D4) on it.
// Widening is the safe side of the interval (R6), and the site's D̄
// widens every object of a bursty site, those without a spacing
// included. A narrowing stays (R6)'s one-sided test on the object's own
// spacings, so that under independent flags an object is narrowed with
// at most (R6)'s probability 1 − Level whatever its site (a second test
// on the site's D̄ would add its own false narrowings), and the site's
// D̄ < 1 narrows no object whose own spacings show no regularity; for
// nearly periodic flags D̄ carries R̂'s upward bias (the end spacings,
// R6) to every object of the site, with no selection of the objects
// whose R̂ is low, and would publish wider intervals than (R6) does
// (docs/eval/HELDOUT.md). A site with fewer than MinPoolObjects objects
// in (R7) — the gamma prior's threshold, pooled.go — is not used: (R6)
// applies.
//
// What the site's factor does not fix: every R̂_i reads spacings inside
// its own window, so for gaps heavier-tailed than the window (bursty
// changes at r ≪ 1) D̄ falls short of the count's D as the single R̂
// does (docs/eval/HELDOUT.md: the pooled R̂ column); pooling removes the
// noise of a few spacings, not that bias. The site's end spacings sample
// the long gaps by their length and widen where they show more than R8
// does (R13–R17, dependence_back.go), up to the window's length.

// FlagPool holds the sums (R7) of a site's spacing factors. The zero
// value is empty; Add and Remove keep it O(1).
type FlagPool struct {
	N, U, UR, UR2, U2 float64
	// B, BD, BV are the backward-recurrence sums (R15,
	// dependence_back.go); Legacy marks sums written before them
	// (site state version 3), which Add and Remove then leave at zero.
	B, BD, BV float64
	Legacy    bool
	// Excess is the site's between-object excess σ̂²/μ̂ of its prior's
	// sums (R19, dependence_between.go; PoolStats.ExcessAt), per second
	// of exposure. It is not one of the sums: Add and Remove leave it,
	// the site state does not encode it; WithExcess sets it where the
	// site's prior sums are held, before estimating.
	Excess float64
}

// FlagTerm is one object's term of (R7): R̂ (R4) and its weight u =
// 1/se₀² (R5).
type FlagTerm struct {
	R, U float64
	// B, BD, BV are the object's backward-recurrence term (R15).
	B, BD, BV float64
}

// FlagTerm returns c's term of its site's FlagPool: ok where the visits
// are regular and R̂ is defined with se₀ > 0 (complete histories have no
// flags).
func (c *Change) FlagTerm(cfg *Config) (FlagTerm, bool) {
	if c.Complete() || !c.Regular(cfg) {
		return FlagTerm{}, false
	}
	r, se, ok := c.FlagDispersion()
	if !ok || !(se > 0) || math.IsNaN(r) || math.IsInf(r, 0) {
		return FlagTerm{}, false
	}
	t := FlagTerm{R: r, U: 1 / (se * se)}
	t.B, t.BD, t.BV, _ = c.backTerm()
	return t, true
}

// Add adds one object's term with weight w (1 for a plain sum).
func (p *FlagPool) Add(t FlagTerm, w float64) {
	p.N += w
	p.U += w * t.U
	p.UR += w * t.U * t.R
	p.UR2 += w * t.U * t.R * t.R
	p.U2 += w * t.U * t.U
	if !p.Legacy {
		p.B += w * t.B
		p.BD += w * t.BD
		p.BV += w * t.BV
	}
}

// Remove undoes Add(t, w).
func (p *FlagPool) Remove(t FlagTerm, w float64) { p.Add(t, -w) }

// Empty reports whether p holds no sums (a legacy pool without them
// included).
func (p *FlagPool) Empty() bool { q := *p; q.Legacy, q.Excess = false, 0; return q == FlagPool{} }

// FlagSite is a site's factor D̄ (R8) and spread τ̂² (R9).
type FlagSite struct {
	D, Tau2 float64
	// Back is the widening factor of (R17), 0 where there is none.
	Back float64
}

// Site returns the site's factor (R8) and spread (R9); ok is false with
// fewer than MinPoolObjects objects or no spread to compare.
func (p *FlagPool) Site() (FlagSite, bool) {
	if p == nil || p.N < MinPoolObjects-0.5 || !(p.U > 0) {
		return FlagSite{}, false
	}
	d := p.UR / p.U
	if !(d > 0) || math.IsInf(d, 0) {
		return FlagSite{}, false
	}
	q := math.Max(p.UR2-p.UR*p.UR/p.U, 0)
	var tau2 float64
	if den := p.U - p.U2/p.U; den > 0 {
		tau2 = math.Max(0, (q-d*d*(p.N-1))/den)
	}
	return FlagSite{D: d, Tau2: tau2}, true
}

// siteWithBack is Site with (R17)'s widening factor at the one-sided z.
func (p *FlagPool) siteWithBack(z float64) (FlagSite, bool) {
	s, ok := p.Site()
	if ok {
		s.Back = p.backWidening(z)
	}
	return s, ok
}

// shrink is D̃ (R10) of an object with the term t (own: R̂ is defined),
// and its weight w.
func (s FlagSite) shrink(t FlagTerm, own bool) (D, w float64) {
	if !own || !(s.Tau2 > 0) {
		return s.D, 0
	}
	w = s.Tau2 / (s.Tau2 + s.D*s.D/t.U)
	return s.D + w*(t.R-s.D), w
}

// SiteFlagDependence is the published factor D (R11, R17–R19) of c's
// flags in a site with the sums p (nil or too few objects: c's own
// factor, R6) and p.Excess (R19; 0: none), at cfg's level, bounded to
// [1/n, n].
func (c *Change) SiteFlagDependence(p *FlagPool, cfg *Config) float64 {
	s, ok := p.siteWithBack(cfg.zOneSided())
	if !ok {
		return c.FlagDependence(cfg)
	}
	N := float64(c.Intervals())
	if !(N >= 1) {
		return 1
	}
	t, own := c.FlagTerm(cfg)
	D, _ := s.shrink(t, own)
	if D < 1 {
		// (R6)'s factor is R̂ where it narrows, 1 or more otherwise.
		D = min(c.FlagDependence(cfg), 1)
	}
	D = max(D, s.Back) // (R17)
	if own && t.R > nullQuantile(1/math.Sqrt(t.U), cfg.zOneSided()) {
		D = max(D, t.R) // (R18)
	}
	if s.Back > 0 {
		if b, ok := c.BetweenFactor(p.Excess); ok {
			D = max(D, b) // (R19)
		}
	}
	return min(max(D, 1/N), N)
}

// The pooled estimate's interval. An object with fewer than
// PooledMaxChanges changes in a site with a prior publishes the pooled
// estimate (pooled.go P1), whose posterior prior(λ)·L(λ) reads the
// object's flags through their likelihood as if independent. With the
// flags' variance factor D the likelihood carries 1/D of the information
// it claims — (D4)'s effective sample, n/D intervals with X/D changes —
// which for the existence-of-change likelihood log L = Σ_i w_i·log(1 −
// e^{−λt_i}) − λU (CGM App. C, over the changed-interval buckets) is the
// power L^{1/D}: every bucket's count w_i and the unchanged time U
// divided by D, which divides the likelihood's curvature, its
// information, by D (a scaled composite likelihood; Varin, Reid & Firth,
// Statistica Sinica 21, 2011). The published interval is the
// equal-tailed interval of
//
//	prior(λ)·L(λ)^{1/D},                                                 (R12)
//
// (the conjugate Gamma(α, β + U/D) without a change, the fitted grid of
// pooled_fit.go otherwise, as PooledEstimate's), and the point the
// pooled estimate's own mean, as (D4) keeps each estimator's point; D is
// SiteFlagDependence's (R11, R17–R19). On a site that R19 widens the
// prior's σ̂² enters both the prior and D: the posterior leans on the
// site more than on the object's window, the safe side where that
// window may sit in a burst or a lull (R19's target is the long-run
// rate). Where the
// evidence is not the flags' (Last-Modified dates, a complete history,
// every interval changed: pooled.go), or the point falls outside the
// recomputed interval, the pooled interval is kept.

// PooledDependentIn is e, c's pooled estimate under prior
// (PooledEstimateIn), with its interval recomputed for the variance
// factor D of c's flags (R12); scratch's quantile memo (nil: none).
func (c *Change) PooledDependentIn(e Estimate, prior GammaPrior, D float64, cfg *Config, scratch *Estimates) Estimate {
	if D == 1 || !(D > 0) || math.IsInf(D, 0) || !e.HasCI || c.Complete() || !c.Regular(cfg) {
		return e
	}
	if c.lmN >= int64(cfg.MinIntervals) && c.hasLastMod(cfg) && c.lmT > 0 {
		return e
	}
	ev, ok := c.Evidence(cfg)
	if !ok || ev.Floor > 0 || ev.Open {
		return e
	}
	ev.X, ev.E = ev.X/D, ev.E/D
	m := scratch.quantiles()
	var t Estimate
	if c.changes == 0 {
		t, ok = pooledConjugate(prior, ev, cfg, m)
	} else {
		var ts, ws [NumBuckets]float64
		k := c.changedBuckets(&ts, &ws)
		for i := range ws[:k] {
			ws[i] /= D
		}
		u := c.unchangedTime() / D
		if t, ok = fitChanges(prior, ev, ts[:k], ws[:k], u, cfg); !ok {
			var lo, hi float64
			if lo, hi, ok = pooledGridRange(prior, ev, m); ok {
				t, ok = gridChanges(lo, hi, prior, ev, ts[:k], ws[:k], u, cfg)
			}
		}
	}
	if !ok || !t.HasCI || !(t.Lo >= 0) || math.IsInf(t.Hi, 0) || !(t.Lo <= e.Rate && e.Rate <= t.Hi) {
		return e
	}
	e.Lo, e.Hi = t.Lo, t.Hi
	return e
}
