package main

import (
	"math"

	"github.com/changerate/changerate/estimators"
)

// The sib candidates' hyper-parameters, chosen on a training pair of
// object sets (php/doc-en directories of one half, simulated sites of
// another stream) by the rule of hierBest: the fewest of the target's
// checks failed on the training sets, then the lowest worse ratio (< 5
// changes) of the two; ties to the earlier variant. The search is greedy,
// in three stages, each starting from the previous stage's choice:
//
//	A. the span: 1 … hierYears windows before the observed one, with or
//	   without the observed window, with or without the three-level mean
//	   (leave-one-out, no drift);
//	B. with or without the drift in the prediction;
//	C. the point estimate: the posterior's median or its quantile q ∈
//	   sibQuantiles.
//
// (The protocol's truth begins 3 years before the observed year, so a
// longer history would read the truth.)

// sibQuantiles are stage C's point quantiles (0: the median).
var sibQuantiles = []float64{0, 0.55, 0.6, 0.65, 0.7}

// sibStep is one variant tried on the training sets.
type sibStep struct {
	stage    string
	v        sibVariant
	php, sim *pooledScore
}

// sibSearch scores variants on a training pair; the simulated scores can
// be shared between searches (the halves swapped keep the simulated
// training sites).
type sibSearch struct {
	cfg      *estimators.Config
	php, sim [][]pooledObj
	simCache map[sibVariant]*pooledScore
	steps    []sibStep
}

func newSibSearch(cfg *estimators.Config, php, sim [][]pooledObj, simCache map[sibVariant]*pooledScore) *sibSearch {
	return &sibSearch{cfg: cfg, php: php, sim: sim, simCache: simCache}
}

// try scores v on the training pair (recorded as a step of stage).
func (s *sibSearch) try(stage string, v sibVariant) sibStep {
	ss := s.simCache[v]
	if ss == nil {
		ss = sibScore(s.sim, s.cfg, v).pooledScore
		s.simCache[v] = ss
	}
	st := sibStep{stage, v, sibScore(s.php, s.cfg, v).pooledScore, ss}
	s.steps = append(s.steps, st)
	return st
}

// trainKey is hierBest's order of a variant on the training sets: the
// failed checks, then the worse ratio (< 5 changes).
func trainKey(php, sim *pooledScore) (int, float64) {
	n := 0
	for _, c := range append(pooledChecks(php), pooledChecks(sim)...) {
		if !c.ok() {
			n++
		}
	}
	return n, math.Max(ratio0(php), ratio0(sim))
}

// best is the variant of vs that the rule prefers.
func (s *sibSearch) best(stage string, vs []sibVariant) sibVariant {
	bv, bf, br := vs[0], math.MaxInt, math.Inf(1)
	for _, v := range vs {
		st := s.try(stage, v)
		if f, r := trainKey(st.php, st.sim); f < bf || (f == bf && r < br) {
			bv, bf, br = v, f, r
		}
	}
	return bv
}

// choose runs stages A–C: median is stage B's choice (the posterior
// median), final stage C's.
func (s *sibSearch) choose() (median, final sibVariant) {
	var a []sibVariant
	for years := 1; years <= hierYears; years++ {
		for _, noObs := range []bool{false, true} {
			for _, three := range []bool{false, true} {
				a = append(a, sibVariant{years: years, noObs: noObs, three: three, loo: true})
			}
		}
	}
	v := s.best("A", a)
	d := v
	d.drift = true
	median = s.best("B", []sibVariant{v, d})
	var c []sibVariant
	for _, q := range sibQuantiles {
		x := median
		x.q = q
		c = append(c, x)
	}
	return median, s.best("C", c)
}

// trainScores is the training pair's scores of v (scored when not tried).
func (s *sibSearch) trainScores(v sibVariant) (php, sim *pooledScore) {
	for _, st := range s.steps {
		if st.v == v {
			return st.php, st.sim
		}
	}
	st := s.try("", v)
	return st.php, st.sim
}

// sibCandidates evaluates the sib candidates on the splits of d: sib
// itself (3 windows before the observed one and the observed one,
// leave-one-out) and without leave-one-out, the training split's choice
// with the median and with its point quantile, and that choice without
// leave-one-out. The halves swapped repeat the choice on the php test
// half (and the simulated training sites) and score it on the training
// half; a fixed variant's swap is its training score. The variants
// without leave-one-out are comparisons (hierBest skips them): their
// prior holds the page's own history, which the deployment case (a page
// with one year of history) does not have.
func sibCandidates(cfg *estimators.Config, d hierData) ([]hierResult, *sibSearch) {
	simCache := map[sibVariant]*pooledScore{}
	train := newSibSearch(cfg, d.phpTrain, d.simTrain, simCache)
	median, final := train.choose()
	swap := newSibSearch(cfg, d.phpTest, d.simTrain, simCache)
	swapMedian, swapFinal := swap.choose()
	own := final
	own.loo = false
	type cand struct {
		name     string
		v, swapV sibVariant
	}
	plain := sibVariant{years: hierYears, loo: true}
	plainOwn := plain
	plainOwn.loo = false
	cs := []cand{{"sib (siblings' multi-year totals, leave-one-out)", plain, plain},
		{"sib, own span in the prior (not leave-one-out)", plainOwn, plainOwn}}
	if median != plain {
		cs = append(cs, cand{"sib, variant chosen on the training split (posterior median)", median, swapMedian})
	}
	if final != median {
		cs = append(cs, cand{"sib, variant and point quantile chosen on the training split", final, swapFinal})
	}
	if own != plainOwn {
		cs = append(cs, cand{"sib, the chosen variant with its own span in the prior (not leave-one-out)", own, own})
	}
	var rs []hierResult
	for _, c := range cs {
		v := c.v
		tp, ts := train.trainScores(v)
		r := hierResult{name: c.name, sib: &v, drift: v.drift,
			trainPHP: map[float64]*pooledScore{0: tp}, trainSim: map[float64]*pooledScore{0: ts}}
		for i, sets := range [][][]pooledObj{d.phpTest, d.simTest} {
			run := sibScore(sets, cfg, v)
			r.fallback[i].sites, r.fallback[i].objs = run.fallbackSites, run.fallbackObjs
			if i == 0 {
				r.testPHP = run.pooledScore
			} else {
				r.testSim = run.pooledScore
			}
		}
		sv := c.swapV
		r.swapSib = &sv
		r.swapPHP = sibScore(d.phpTrain, cfg, sv).pooledScore
		r.phpChecks, r.simCheck = pooledChecks(r.testPHP), pooledChecks(r.testSim)
		rs = append(rs, r)
	}
	return rs, train
}
