package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/research/pooled"
)

// Siblings' long-run rates: a site prior with the spread of multi-year
// rates (issue 16, item 4).
//
// The oracle bound (pooled_bound.go) needs the truth's level and its
// spread; the truth is a rate over 4 years. A prior fitted on one year's
// counts, or on page-years as separate objects (hist), measures the spread
// of one-year rates, which a directory's campaigns (one commit touching
// many of its pages in one year) make large: the fitted shape falls below
// 1 and a silent page's posterior median far below the prior's mean.
//
// sib fits the same moment estimator (PoolStats) on the site's pages with
// each page ONE object whose evidence is its whole history window crawled
// as one: the observed window and the `years` windows before it laid end
// to end (pooledObj.span), so the moments are those of multi-year rates.
// The object's own likelihood is its observed window only, as for every
// estimator of the protocol. With leave-one-out the object's own span is
// removed from its prior's sums (PoolStats.Remove, O(1)): the estimate
// borrows only from its siblings (the deployment case: a page with one
// year of history on a site whose other pages have been crawled for years).
//
// Variants (chosen on the training split only, sibChoose): the history
// length (1 … hierYears windows), the span without the observed window
// (pooledObj.past), the three-level shrink of the mean (eq. H3) and the
// drift in the prediction (siteTau2).

// sibVariant is one sib candidate.
type sibVariant struct {
	years int  // windows before the observed one in the prior's span
	noObs bool // the span without the observed window
	loo   bool // the object's own span left out of its prior
	three bool // the prior's mean shrunk towards its group's level (eq. H3)
	drift bool // the drift in the prediction (siteTau2)
	// q is the posterior's quantile scored as the point estimate (0: the
	// median, as published; pooledScore.pointQ).
	q float64
}

func (v sibVariant) String() string {
	p := []string{fmt.Sprintf("%d years before", v.years)}
	if v.years == 1 {
		p[0] = "1 year before"
	}
	if v.noObs {
		p[0] += " (observed year out)"
	} else {
		p[0] += " + observed"
	}
	if v.loo {
		p = append(p, "leave-one-out")
	} else {
		p = append(p, "own span in")
	}
	if v.three {
		p = append(p, "three-level")
	}
	if v.drift {
		p = append(p, "drift in the prediction")
	}
	if v.q > 0 && v.q != 0.5 {
		p = append(p, fmt.Sprintf("point quantile %.2f", v.q))
	}
	return strings.Join(p, ", ")
}

// laidEvidence is the evidence of a weekly crawl of the changes ev inside
// the windows ws (years from start) laid end to end from start (laidEnd);
// the zero Evidence (skipped by PoolStats) without data.
func laidEvidence(ev []float64, start float64, ws []yearWin, cfg *estimators.Config) estimators.Evidence {
	const day = 86400.0
	lev, span := laidEnd(ev, start, ws)
	x, ok := halfEvidence(lev, sim.Regular{Interval: 7 * day}.Times(nil, start, start+span, nil), false, cfg)
	if !ok {
		return estimators.Evidence{}
	}
	return x
}

// phpSpans sets the page's span and past evidence for years of history
// before the observed year (start, start+1 y].
func phpSpans(o *pooledObj, ev []float64, start float64, years int, cfg *estimators.Config) {
	for h := 1; h <= years; h++ {
		o.span = append(o.span, laidEvidence(ev, start, []yearWin{{-float64(h), 1}}, cfg))
		o.past = append(o.past, laidEvidence(ev, start, []yearWin{{-float64(h), 0}}, cfg))
	}
}

// simSpans sets a simulated object's span and past evidence: evs[h],
// vts[h] are the changes and visits of the window h back (0: observed),
// each on [0, D]; the windows are laid end to end, oldest first (changes
// after D cut, a visit that repeats the previous one's time dropped).
func simSpans(o *pooledObj, evs, vts [][]float64, D float64, lm bool, cfg *estimators.Config) {
	lay := func(from, to int) estimators.Evidence {
		var ev, vt []float64
		off := 0.0
		for h := to; h >= from; h-- {
			for _, t := range evs[h] {
				if t <= D {
					ev = append(ev, off+t)
				}
			}
			for _, t := range vts[h] {
				if len(vt) == 0 || off+t > vt[len(vt)-1] {
					vt = append(vt, off+t)
				}
			}
			off += D
		}
		x, ok := halfEvidence(ev, vt, lm, cfg)
		if !ok {
			return estimators.Evidence{}
		}
		return x
	}
	for h := 1; h < len(evs); h++ {
		o.span = append(o.span, lay(0, h))
		o.past = append(o.past, lay(1, h))
	}
}

// evidence is the object's evidence in the variant's prior (ok false when
// it is not in the site's prior population or has no such span).
func (v sibVariant) evidence(o *pooledObj) (estimators.Evidence, bool) {
	if !o.inPrior() || v.years < 1 || v.years > len(o.span) {
		return estimators.Evidence{}, false
	}
	if v.noObs {
		return o.past[v.years-1], true
	}
	return o.span[v.years-1], true
}

// sibStats are the site's sums over its prior population's spans.
func sibStats(objs []pooledObj, v sibVariant) estimators.PoolStats {
	var ps estimators.PoolStats
	for i := range objs {
		if ev, ok := v.evidence(&objs[i]); ok {
			ps.Add(ev, 1)
		}
	}
	return ps
}

// without is the site's sums ps (sibStats of objs) without the object
// objs[i]'s span: leave-one-out in O(1).
func (v sibVariant) without(ps estimators.PoolStats, objs []pooledObj, i int) estimators.PoolStats {
	if ev, ok := v.evidence(&objs[i]); ok {
		ps.Remove(ev, 1)
	}
	return ps
}

// sibSitePrior is the site prior fitted on the sums ps, with the level and
// its variance of eq. H3 (the sums' Poisson noise 1/ΣX and the periods'
// deviations, τ²/2 each, averaged over the periods of the span).
func sibSitePrior(ps estimators.PoolStats, v sibVariant, tau2 float64, group int) sitePrior {
	p, ok := ps.Prior()
	sp := sitePrior{prior: p, ok: ok, group: group}
	if ok {
		periods := float64(v.years)
		if !v.noObs {
			periods++
		}
		sp.level, sp.v = math.Log(pooled.Mean(p)), 1/ps.X+tau2/2/periods
	}
	return sp
}

// sibRun is a variant's score with the sites and objects that fell back to
// the observed-window prior (the published one) because the variant gave
// none.
type sibRun struct {
	*pooledScore
	v                           sibVariant
	fallbackSites, fallbackObjs int
}

// sibScore scores the sets with the variant's priors.
func sibScore(sets [][]pooledObj, cfg *estimators.Config, v sibVariant) sibRun {
	var tau func([]pooledObj) float64
	if v.drift {
		tau = siteTau2
	}
	return sibScoreWith(sets, cfg, v, tau)
}

// sibScoreWith is sibScore with the drift's τ² of tau2Of (nil: none).
func sibScoreWith(sets [][]pooledObj, cfg *estimators.Config, v sibVariant, tau2Of func([]pooledObj) float64) sibRun {
	type site struct {
		ps   estimators.PoolStats
		sp   sitePrior
		tau2 float64
	}
	sites := map[*pooledObj]site{}
	var fitted []sitePrior
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		st := site{ps: sibStats(objs, v), tau2: siteTau2(objs)}
		st.sp = sibSitePrior(st.ps, v, st.tau2, siteGroup(objs))
		sites[&objs[0]] = st
		fitted = append(fitted, st.sp)
	}
	groups := map[int]groupLevel{}
	if v.three {
		groups = groupLevels(fitted)
	}
	// final is the prior of a fitted sitePrior: shrunk to its group's
	// level for three.
	final := func(sp sitePrior) estimators.GammaPrior {
		if g, ok := groups[sp.group]; ok && v.three {
			return g.shrink(sp.prior, sp.level, sp.v)
		}
		return sp.prior
	}
	run := sibRun{pooledScore: newPooledScore(), v: v}
	s := run.pooledScore
	s.priorScored, s.tau2Of, s.pointQ = true, tau2Of, v.q
	s.priorOf = func(objs []pooledObj) (estimators.GammaPrior, bool) {
		if sp := sites[&objs[0]].sp; sp.ok {
			return final(sp), true
		}
		run.fallbackSites++
		return observedPrior(objs)
	}
	if v.loo {
		s.objPrior = func(objs []pooledObj, i int, _ estimators.GammaPrior) estimators.GammaPrior {
			st := sites[&objs[0]]
			if sp := sibSitePrior(v.without(st.ps, objs, i), v, st.tau2, st.sp.group); sp.ok {
				return final(sp)
			}
			run.fallbackObjs++
			p, _ := observedPrior(objs) // addSite scores only sites that have it
			return p
		}
	}
	for _, objs := range sets {
		if len(objs) > 0 {
			s.addSite(objs, cfg)
		}
	}
	return run
}
