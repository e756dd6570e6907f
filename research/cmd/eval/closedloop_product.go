package main

import (
	"math"
	"strconv"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// The default policy's planning pages are the product's: every visit goes
// through the aggregator's own state (aggregate.Object.ApplyAt with the
// site's state, whose prior statistics it folds, aggregate/siteprior.go),
// the page's estimate is the record the aggregator publishes after it
// (aggregate.Object.ChangeEstimateAsOf: the page's best estimate, or, with
// fewer than estimators.PooledMaxChanges changes, the pooled estimate
// under its population's prior and its interval), the candidate is what
// /v1/plan's index lists for that record (query.CandidateOf) and the page
// is what /v1/plan plans on (query.PlanPages): the record's plan
// posterior, the page's evidence counted ω times under the prior, ω the
// site state's choice by its visits' predictive likelihood (estimators/
// tempered.go, aggregate/sitetemper.go). In update mode (the
// aggregator's default) a page's record is published after its visits,
// with the prior as of then, so the loop takes it after every visit; the
// emit interval (10 minutes) is shorter than any revisit here.

// productState is the aggregator's state of the loop's pages.
type productState struct {
	m       aggregate.Model
	site    aggregate.SiteState
	objs    []aggregate.Object
	eff     aggregate.Effects
	scratch estimators.Estimates
	// cand is each page's candidate as of its latest published record
	// (listed false: the index lists none, no rate yet).
	cand   []query.Candidate
	listed []bool
	// changes counts each page's digest changes seen (its digest);
	// pooled marks the pages whose record publishes the pooled estimate.
	changes []int
	pooled  []bool
	// ciLo is each pooled page's published interval's lower bound (its
	// candidate ranks it at 0 when no change was seen).
	ciLo []float64
	// last is the last plan's make-up (a diagnostic).
	last productMix
}

// productMix is what a plan of the product policy was made of: the pages
// planned on the pooled estimate (pooled), those of them planned at their
// rate alone, with no change seen (point), the site prior's shape and
// mean (per day), the mean planning rate (per day) of the pooled pages
// with no change seen, and the pages the plan gave no visit (unvisited).
type productMix struct {
	pages, pooled, point, unvisited int
	priorShape, priorMean           float64
	pointRate                       float64
	// omega is the ω of the plan posteriors (the site state's choice,
	// estimators.TemperChoose), tempered the pages planned on one.
	omega    float64
	tempered int
}

func newProductState(n int) *productState {
	return &productState{m: aggregate.DefaultModel(), objs: make([]aggregate.Object, n),
		cand: make([]query.Candidate, n), listed: make([]bool, n), changes: make([]int, n), pooled: make([]bool, n), ciLo: make([]float64, n)}
}

// observe applies page i's visit at t (changed: its digest differs from
// the previous visit's) and takes its published record.
func (p *productState) observe(name string, i int, t float64, changed bool) {
	if changed {
		p.changes[i]++
	}
	obs := records.Observation{Object: name, Time: time.UnixMilli(int64(math.Round(t * 1e3))).UTC(), Kind: records.KindVisit,
		Status: 200, Digest: "d" + strconv.Itoa(p.changes[i]), Format: "jsonl"}
	p.eff.Reset()
	p.objs[i].ApplyAt(&obs, &p.m, &p.site, &p.eff)
	p.take(name, i)
}

// take takes page i's published record.
func (p *productState) take(name string, i int) {
	rec, ok := p.objs[i].ChangeEstimateAsOf(name, &p.m, &p.site, time.Time{}, &p.scratch)
	p.listed[i], p.pooled[i] = false, false
	if !ok {
		return
	}
	p.cand[i], p.listed[i] = query.CandidateOf(&rec)
	p.pooled[i] = rec.Estimator == estimators.KeyPooled
	if p.pooled[i] && rec.CI95 != nil {
		p.ciLo[i] = rec.CI95[0]
	}
}

// pages is /v1/plan's freshness pages of the listed pages; a page the
// index does not list yet (no estimate) is planned as the other
// posterior policies plan it: at the mean rate of all pages, shape 1.
// With published (the default before the tempered plan) a page is
// planned on its published estimate and interval, not its record's plan
// posterior. With ownInterval (a variant, not what /v1/plan does) a pooled page's
// candidate keeps its published interval's lower bound, so a pooled page
// with no change seen is planned on the Gamma of its interval too.
func (p *productState) pages(st *loopState, ownInterval, published bool) []plan.Page {
	var x, T float64
	for i := range st.est {
		x += float64(st.est[i].Changes())
		T += st.est[i].Span()
	}
	mean := (x + 0.5) / math.Max(T, loopDay)
	var cands []query.Candidate
	var idx []int
	for i, ok := range p.listed {
		if ok {
			c := p.cand[i]
			if published {
				c.HasPlan = false // the published estimate's interval
			}
			if ownInterval && p.pooled[i] && p.ciLo[i] > 0 {
				c.Lo = p.ciLo[i]
			}
			cands = append(cands, c)
			idx = append(idx, i)
		}
	}
	listed := query.PlanPages(cands, query.PlanRequest{Policy: query.PolicyFreshness}, query.PlanConfig{})
	out := make([]plan.Page, len(p.listed))
	for i := range out {
		out[i] = plan.Page{Rate: mean, Shape: 1, Weight: 1}
	}
	p.last = productMix{pages: len(out)}
	p.last.omega, _ = estimators.TemperChoose(&p.site.Temper)
	for k, i := range idx {
		out[i] = listed[k]
		out[i].Weight = 1
		if cands[k].HasPlan {
			p.last.tempered++
		}
		if p.pooled[i] {
			p.last.pooled++
			if out[i].Shape == 0 {
				p.last.point++
				p.last.pointRate += out[i].Rate * loopDay
			}
		}
	}
	if p.last.point > 0 {
		p.last.pointRate /= float64(p.last.point)
	}
	if g, ok := p.site.Pool.Prior(); ok {
		p.last.priorShape, p.last.priorMean = g.Shape, g.Shape/g.Rate*loopDay
	}
	return out
}

// refresh takes every page's record again with the site's current prior:
// what the aggregator publishes with --emit=final at the end of the same
// input (the loop itself keeps each page's record from its latest visit,
// update mode's).
func (p *productState) refresh(names []string) {
	for i, name := range names {
		if !p.objs[i].HasChange() {
			continue
		}
		p.take(name, i)
	}
}
