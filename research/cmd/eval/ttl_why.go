package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
)

// ourFamilies are our TTL rules, in the tables' column order.
var ourFamilies = []struct{ family, label string }{
	{ageFamily, "age rule"},
	{ourFamily, "Poisson TTL"},
	{postFamily, "posterior rule"},
	{optFamily, "load-optimal, posterior"},
	{optAgeFamily, "load-optimal, age model"},
	{optAgeInFamily, "diagnostic: load-optimal age, fitted in sample"},
}

// isOurs reports whether family is one of our rules.
func isOurs(family string) bool {
	for _, f := range ourFamilies {
		if f.family == family {
			return true
		}
	}
	return false
}

// ttlWhereFamily lists, per rate, family's stale hits against Squid's
// default at the default's origin load.
func ttlWhereFamily(res [][]ttlPoint, family string) []string {
	var parts []string
	for k, rate := range ttlRates {
		for _, p := range res[k] {
			if p.family != squidFamily || p.param != 3 {
				continue
			}
			y := familyStaleAt(res[k], p.origin, family)
			parts = append(parts, fmt.Sprintf("%.2f against %.2f at %g requests a day", y, p.stale, rate))
		}
	}
	return parts
}

// ttlNewShare lists, per rate, the stale hits on pages unchanged in the
// warm-up year under the posterior rule and under Squid's default, at the
// default's origin load.
func ttlNewShare(res [][]ttlPoint) []string {
	var parts []string
	for k, rate := range ttlRates {
		for _, p := range res[k] {
			if p.family != squidFamily || p.param != 3 {
				continue
			}
			y := familyAt(res[k], p.origin, postFamily, func(q ttlPoint) float64 { return q.staleNew })
			all := familyStaleAt(res[k], p.origin, postFamily)
			parts = append(parts, fmt.Sprintf("at %g requests a day %.2f of the posterior rule's against %.2f of Squid's per 1,000 requests (on the other pages %.2f against %.2f)",
				rate, y, p.staleNew, all-y, p.stale-p.staleNew))
		}
	}
	return parts
}

// bulkSentence describes the site-wide commits of the history: the
// share of the scored year's changes (over all pages, not only the
// simulated ones) made at a time when at least bulkFiles pages changed,
// and the scored year's changes against the warm-up year's.
func bulkSentence(pages map[string][]float64, w *loopWorld) string {
	const bulkFiles = 20
	at := map[float64]int{}
	warm, scored := 0, 0
	for _, v := range pages {
		for _, t := range v {
			switch {
			case t > w.S && t <= w.T1:
				at[t]++
				scored++
			case t > w.T0 && t <= w.S:
				warm++
			}
		}
	}
	bulk := 0
	for _, n := range at {
		if n >= bulkFiles {
			bulk += n
		}
	}
	if scored == 0 || warm == 0 {
		return "the history has no change in one of its two years"
	}
	return fmt.Sprintf("the scored year has %.1f times the warm-up year's changes, %.0f %% of them in commits that changed at least %d pages at once",
		float64(scored)/float64(warm), 100*float64(bulk)/float64(scored), bulkFiles)
}

// ttlWhere lists the (rate, default heuristic) pairs where our curve is
// below (below true) or above the heuristic's default point.
func ttlWhere(res [][]ttlPoint, below bool) []string {
	var parts []string
	for k, rate := range ttlRates {
		for _, p := range res[k] {
			if !(p.family == squidFamily && p.param == 3 || p.family == rfcFamily && p.param == 0.1) {
				continue
			}
			y := ourStaleAt(res[k], p.origin)
			if math.IsNaN(y) || (y <= p.stale) != below {
				continue
			}
			name := "Squid's default (20 %, max 3 d)"
			if p.family == rfcFamily {
				name = "RFC 9111's 10 %"
			}
			parts = append(parts, fmt.Sprintf("%s at %g requests a day (%.2f against %.2f)", name, rate, y, p.stale))
		}
	}
	return parts
}

// burstiness returns the share of changes in the two years that follow
// the page's previous change (in the years or before) within d, and the
// share a Poisson process at each page's two-year rate would give,
// 1 − e^{−λd} averaged over the same changes.
func (w *loopWorld) burstiness(d float64) (observed, poisson float64) {
	n := 0.0
	for i, v := range w.ev {
		for k := 1; k < len(v); k++ {
			n++
			if v[k]-v[k-1] <= d {
				observed++
			}
			poisson += -math.Expm1(-w.truth[i] * d)
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	return observed / n, poisson / n
}

// ttlCause says, for each failed comparison, where our curve is above.
func ttlCause(res [][]ttlPoint) string {
	var parts []string
	for k, rate := range ttlRates {
		for _, p := range res[k] {
			if isOurs(p.family) {
				continue
			}
			y := ourStaleAt(res[k], p.origin)
			switch {
			case math.IsNaN(y):
				parts = append(parts, fmt.Sprintf("%g/day %s %g: its origin load %.1f is outside our curve", rate, p.family, p.param, p.origin))
			case y > p.stale && (p.param == 3 && p.family == squidFamily || p.param == 0.1 && p.family == rfcFamily):
				parts = append(parts, fmt.Sprintf("%g/day %s %g: ours %.2f stale hits against %.2f at %.1f origin requests per 1,000", rate, p.family, p.param, y, p.stale, p.origin))
			}
		}
	}
	return joinSemi(parts)
}

// ageLifetimes lists m's lifetimes at pStale p for a few ages.
func ageLifetimes(m estimators.BurstModel, p float64) string {
	var parts []string
	for _, a := range []float64{0, 1, 10, 100, 1000} {
		l, _ := m.TTL(a*loopDay, p)
		parts = append(parts, fmt.Sprintf("%.2g d at age %g d", l/loopDay, a))
	}
	return joinSemi(parts)
}
