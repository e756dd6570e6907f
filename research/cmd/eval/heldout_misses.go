package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
)

// Where the published interval misses in the renewal worlds (issue 31,
// calibration): the side of each miss (the target above the interval —
// the interval too low — or below it), by the objects' evidence (the
// pooled estimate for fewer than PooledMaxChanges changes, the rule's
// own estimator otherwise; by the number of changed intervals X), and the
// spacing factors against the one the window needs.

// hoMissGroups are the object groups of hoMisses, in table order.
var hoMissGroups = []string{"pooled, X = 0", "pooled, X = 1–4", "own, X = 5–9", "own, X = 10–19", "own, X ≥ 20"}

func hoMissGroup(pooled bool, x int64) int {
	switch {
	case pooled && x == 0:
		return 0
	case pooled:
		return 1
	case x < 10:
		return 2
	case x < 20:
		return 3
	}
	return 4
}

// hoMisses returns one row per group of a renewal world: objects, the
// share whose target lies above the interval, below it, and the mean
// published factor, for what the aggregator publishes (as heldOutSection
// computes it); and the world's factor row: the finite-window factor the
// simulation shows (D1), the mean object's R̂ (R4), (R8) and B̄ (R16) over
// all objects.
func hoMisses(name string, cs []*estimators.Change, site []int, pools []estimators.FlagPool,
	priors map[int]estimators.GammaPrior, lp, dsim float64, cfg *estimators.Config) (rows [][]string, factor []string) {
	type acc struct {
		n, above, below int
		sumD            float64
	}
	groups := make([]acc, len(hoMissGroups))
	var out estimators.Estimates
	var sumR float64
	var nR int
	for i, c := range cs {
		if r, _, ok := c.FlagDispersion(); ok {
			sumR += r
			nR++
		}
		best, ok := c.EstimateIn(c.Span(), cfg, &pools[site[i]], &out)
		if !ok || !best.HasCI {
			continue
		}
		D := c.SiteFlagDependence(&pools[site[i]], cfg)
		agg, pooled := best, false
		if prior, ok := priors[site[i]]; ok && c.Changes() < estimators.PooledMaxChanges {
			if e, ok := c.PooledEstimateIn(prior, c.Span(), cfg, nil); ok && e.HasCI {
				agg, pooled = c.PooledDependentIn(e, prior, D, cfg, nil), true
			}
		}
		g := &groups[hoMissGroup(pooled, c.Changes())]
		g.n++
		g.sumD += D
		switch {
		case lp > agg.Hi:
			g.above++
		case lp < agg.Lo:
			g.below++
		}
	}
	for k, g := range groups {
		if g.n == 0 {
			continue
		}
		n := float64(g.n)
		rows = append(rows, []string{name, hoMissGroups[k], fmt.Sprint(g.n), pct(float64(g.above) / n), pct(float64(g.below) / n),
			pct(1 - float64(g.above+g.below)/n), f3(g.sumD / n)})
	}
	all := sitePools(cs, make([]int, len(cs)), cfg)[0]
	r8, b, bse, db := "—", "—", "—", "—"
	if s, ok := all.Site(); ok {
		r8 = f3(s.D)
	}
	if f, se, ok := estimators.EndSpacingFactor(all.B, all.BD, all.BV); ok {
		b, bse = f3(f), f3(se)
	}
	// (R19b) over all objects as one site: the mean of 1 + e_i·σ̂²/μ̂.
	var sumB float64
	var nB int
	for _, c := range cs {
		if f, ok := c.BetweenFactor(all.Excess); ok {
			sumB += f
			nB++
		}
	}
	if nB > 0 {
		db = f3(sumB / float64(nB))
	}
	return rows, []string{name, f3(dsim), f3(sumR / float64(nR)), r8, b, bse, db}
}

// hoLattice is the coverage of λ_p by the published estimator's own
// interval on (D4) with one factor D shared by every object, over D on a
// grid of 400 log-spaced points in [1/n, 1], as steps: the ranges of D
// that give one coverage (a nearly periodic world's counts take a few
// values, so the coverage moves in steps of their shares), and the
// shares of the counts X.
func hoLattice(cs []*estimators.Change, lp float64, cfg *estimators.Config) (steps []string, counts map[int64]int, n int) {
	var out estimators.Estimates
	type obj struct {
		c   *estimators.Change
		own estimators.Estimate
	}
	var objs []obj
	counts = map[int64]int{}
	for _, c := range cs {
		best, ok := c.EstimateIn(c.Span(), cfg, nil, &out)
		if !ok || !best.HasCI || !c.Regular(cfg) {
			continue
		}
		own, _ := out.Get(best.Key)
		objs = append(objs, obj{c, own})
		counts[c.Changes()]++
	}
	if len(objs) == 0 {
		return nil, counts, 0
	}
	N := float64(cs[0].Intervals())
	const points = 400
	prev, from := -1.0, 0.0
	var last float64
	for k := 0; k <= points; k++ {
		D := math.Exp(math.Log(1/N) * (1 - float64(k)/points))
		cov := 0
		for _, o := range objs {
			if e := o.c.EffectiveInterval(o.own, D, cfg); e.Lo <= lp && lp <= e.Hi {
				cov++
			}
		}
		f := float64(cov) / float64(len(objs))
		if f != prev {
			if prev >= 0 {
				steps = append(steps, fmt.Sprintf("D %.3f–%.3f: %s", from, last, pct(prev)))
			}
			prev, from = f, D
		}
		last = D
	}
	steps = append(steps, fmt.Sprintf("D %.3f–%.3f: %s", from, last, pct(prev)))
	return steps, counts, len(objs)
}

// heldOutMissesReport writes the two tables of hoMisses.
func heldOutMissesReport(r *Report, rows, factors [][]string) {
	r.P("**Where the published interval misses** (renewal worlds, as the aggregator publishes): the share of objects whose λ_p " +
		"lies above the interval (the interval too low: a quiet window) and below it (too high: a window inside a burst), by the " +
		"objects' evidence — the pooled estimate under the site's prior for fewer than 5 changes, the rule's own estimator " +
		"otherwise — and X, the changed intervals seen; with the mean published factor D (R11, widened by R17–R19).")
	r.Table([]string{"world", "objects", "n", "λ_p above the interval", "λ_p below the interval", "coverage", "mean published D"}, rows)
	r.P("**The factor each window needs, and what its spacings show.** D simulated is the finite-window factor Var(X)/(n·p̄(1 − p̄)) " +
		"over the world's objects (D1), the factor that calibrates the interval (the calibration table's coverage with it); the mean " +
		"of the objects' R̂ (R4, internal and end spacings), R8 over all objects as one site, and B̄ (R16: the end spacing S_X = n + 1 − s_X, " +
		"a backward recurrence time, against its exact mean under independent flags, estimators/dependence_back.go) over all " +
		"objects, with its standard error under independent flags. R̂ sees only the gaps that fit inside the window; S_X lands in a " +
		"gap with probability proportional to its length (R13), so it samples the long gaps R̂ misses, up to the window's length: " +
		"a window with X ≤ 1 says nothing (given X = 1, S_0 and S_X have the same law and sum to n + 1), and a quiet window (X = 0) " +
		"is left out of both.")
	r.P("D_B (R19, estimators/dependence_between.go) is the between-object factor 1 + e_i·σ̂²/μ̂ over all objects as one site " +
		"(its mean over the objects; σ̂², μ̂ the moments of the site's gamma prior, P2, before its floor; e_i the object's evidence " +
		"exposure): the spread of the counts between windows, which sees the gaps longer than the window because different " +
		"windows fall in bursts and in lulls; an upper bound of the factor where the pages' own rates differ too, so it widens " +
		"only where the site's end spacings already reject independent flags (R17's test); — where σ̂² ≤ 0 (counts less spread " +
		"than Poisson counts: nearly periodic flags), where R19 does not apply (it only widens).")
	r.Table([]string{"world", "D simulated (finite window)", "mean R̂ (R4)", "R8, all objects", "B̄ (R16), all objects", "se₀(B̄)", "D_B (R19), all objects"}, factors)
}
