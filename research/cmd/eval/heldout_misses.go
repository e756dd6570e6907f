package main

import (
	"fmt"

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
	r8, b, bse := "—", "—", "—"
	if s, ok := all.Site(); ok {
		r8 = f3(s.D)
	}
	if f, se, ok := estimators.EndSpacingFactor(all.B, all.BD, all.BV); ok {
		b, bse = f3(f), f3(se)
	}
	return rows, []string{name, f3(dsim), f3(sumR / float64(nR)), r8, b, bse}
}

// heldOutMissesReport writes the two tables of hoMisses.
func heldOutMissesReport(r *Report, rows, factors [][]string) {
	r.P("**Where the published interval misses** (renewal worlds, as the aggregator publishes): the share of objects whose λ_p " +
		"lies above the interval (the interval too low: a quiet window) and below it (too high: a window inside a burst), by the " +
		"objects' evidence — the pooled estimate under the site's prior for fewer than 5 changes, the rule's own estimator " +
		"otherwise — and X, the changed intervals seen; with the mean published factor D (R11, widened by R17 and R18).")
	r.Table([]string{"world", "objects", "n", "λ_p above the interval", "λ_p below the interval", "coverage", "mean published D"}, rows)
	r.P("**The factor each window needs, and what its spacings show.** D simulated is the finite-window factor Var(X)/(n·p̄(1 − p̄)) " +
		"over the world's objects (D1), the factor that calibrates the interval (the calibration table's coverage with it); the mean " +
		"of the objects' R̂ (R4, internal and end spacings), R8 over all objects as one site, and B̄ (R16: the end spacing S_X = n + 1 − s_X, " +
		"a backward recurrence time, against its exact mean under independent flags, estimators/dependence_back.go) over all " +
		"objects, with its standard error under independent flags. R̂ sees only the gaps that fit inside the window; S_X lands in a " +
		"gap with probability proportional to its length (R13), so it samples the long gaps R̂ misses, up to the window's length: " +
		"a window with X ≤ 1 says nothing (given X = 1, S_0 and S_X have the same law and sum to n + 1), and a quiet window (X = 0) " +
		"is left out of both.")
	r.Table([]string{"world", "D simulated (finite window)", "mean R̂ (R4)", "R8, all objects", "B̄ (R16), all objects", "se₀(B̄)"}, factors)
}
