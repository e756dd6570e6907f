package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/changerate/changerate/estimators"
)

// Site priors over time: choosing the decay w on the training split and
// scoring every candidate on the test split (the candidates' priors are in
// pooled_hier.go, the section's text in pooled_hier_report.go).

// ratio0, ratio1: pooled's median |log| over the best single paper
// estimator's, with fewer than 5 / 5 or more changes.
func ratio0(s *pooledScore) float64 {
	return quantile(s.errs[0]["pooled"], 0.5) / secondOf(s.bestSingle(0))
}

func ratio1(s *pooledScore) float64 {
	return quantile(s.errs[1]["pooled"], 0.5) / secondOf(s.bestSingle(1))
}

// hierCoverage is the coverage the target judges: of the truth count by
// the predictive interval when the truth is a count, of the truth rate
// otherwise.
func hierCoverage(s *pooledScore, g int) float64 {
	if s.predN[0]+s.predN[1] > 0 {
		return s.predCoverage(g)
	}
	return s.coverage(g)
}

// hierCoverageN is the number of intervals hierCoverage is measured on.
func hierCoverageN(s *pooledScore, g int) int {
	if s.predN[0]+s.predN[1] > 0 {
		return s.predN[g]
	}
	return s.ciN[g]
}

// coverageOK says whether hierCoverage of group g lies in the target's
// band for its number of intervals (coverageBand).
func coverageOK(s *pooledScore, g int) bool {
	return coverageCheck("", hierCoverage(s, g), hierCoverageN(s, g), "").ok()
}

// hierChoose is the decay of the training split: the w whose worse data
// set (the larger ratio0 of php and simulated) is best; ties to the
// smaller w.
func hierChoose(php, sim map[float64]*pooledScore) float64 {
	best, bv := hierDecays[0], math.Inf(1)
	for _, w := range hierDecays {
		if v := math.Max(ratio0(php[w]), ratio0(sim[w])); v < bv {
			best, bv = w, v
		}
	}
	return best
}

// hierResult is one candidate's evaluation.
type hierResult struct {
	name                string
	kind                hierKind
	w                   float64
	trainPHP, trainSim  map[float64]*pooledScore
	testPHP, testSim    *pooledScore
	phpChecks, simCheck []check
	// swapW, swapPHP: the halves swapped (w chosen on the test half and
	// the simulated training sites, scored on the training half): how much
	// the php ratio moves with the half it is measured on.
	swapW   float64
	swapPHP *pooledScore
	// drift: the estimate is of the next period's rate under the site's
	// drift (hierScoreDrift), w that of the candidate without it.
	drift bool
	// sib, when set, is a sib candidate's variant (pooled_sib.go): its
	// hyper-parameters replace w (trainPHP and trainSim hold one score,
	// at 0); swapSib is the variant the halves swapped chose.
	sib, swapSib *sibVariant
	// fallback: the sib candidate's test sites and objects that got the
	// observed-year prior (php, simulated).
	fallback [2]struct{ sites, objs int }
}

// param is the candidate's chosen hyper-parameter (w, or sib's variant).
func (r hierResult) param() string {
	if r.sib != nil {
		return r.sib.String()
	}
	return fmt.Sprintf("w = %g", r.w)
}

// swapParam is param of the halves swapped.
func (r hierResult) swapParam() string {
	if r.swapSib != nil {
		return r.swapSib.String()
	}
	return fmt.Sprintf("w = %g", r.swapW)
}

// scoreWith scores sets with the candidate at its chosen hyper-parameter
// and the drift's τ² of tau2Of (nil: none).
func (r hierResult) scoreWith(sets [][]pooledObj, cfg *estimators.Config, tau2Of func([]pooledObj) float64) *pooledScore {
	if r.sib != nil {
		return sibScoreWith(sets, cfg, *r.sib, tau2Of).pooledScore
	}
	return hierScoreWith(sets, cfg, r.kind, r.w, tau2Of)
}

// hierCandidates evaluates every candidate: w chosen on the training
// split, scores on the test split.
// base is the published pooled (hist, w = 0) on the php test split.
// d holds the splits' objects.
func hierCandidates(e *Env, cfg *estimators.Config, pages map[string][]float64) (rs []hierResult, base *pooledScore, d hierData) {
	trainPR, testPR := hierPHP, hierPHP
	trainPR.half, testPR.half = 1, 2
	phpTrain := phpObjSets(e, pages, cfg, trainPR)
	phpTest := phpObjSets(e, pages, cfg, testPR)
	simTrain := simSiteObjs(e, cfg, e.reps(150, 40), 0.3, 1.2, 3600000, hierYears)
	simTest := simSiteObjs(e, cfg, e.reps(300, 60), 0.3, 1.2, 1600000, hierYears)
	d = hierData{phpTrain, phpTest, simTrain, simTest}
	base = hierScore(phpTest, cfg, hierHist, 0)
	for _, k := range hierKinds {
		r := hierResult{name: k.name, kind: k.kind, trainPHP: map[float64]*pooledScore{}, trainSim: map[float64]*pooledScore{}}
		for _, w := range hierDecays {
			r.trainPHP[w] = hierScore(phpTrain, cfg, k.kind, w)
			r.trainSim[w] = hierScore(simTrain, cfg, k.kind, w)
		}
		r.w = hierChoose(r.trainPHP, r.trainSim)
		other := map[float64]*pooledScore{}
		for _, w := range hierDecays {
			other[w] = hierScore(phpTest, cfg, k.kind, w)
		}
		r.swapW = hierChoose(other, r.trainSim)
		r.swapPHP = r.trainPHP[r.swapW]
		r.testPHP = hierScore(phpTest, cfg, k.kind, r.w)
		r.testSim = hierScore(simTest, cfg, k.kind, r.w)
		r.phpChecks, r.simCheck = pooledChecks(r.testPHP), pooledChecks(r.testSim)
		rs = append(rs, r)
	}
	// The drift in the prediction, on top of each candidate with the
	// candidate's w (no new hyper-parameter).
	for _, b := range append([]hierResult(nil), rs...) {
		if b.kind == hierDrift {
			continue
		}
		d := hierResult{name: b.name + " + drift in the prediction", kind: b.kind, w: b.w, drift: true,
			trainPHP: map[float64]*pooledScore{b.w: hierScoreDrift(phpTrain, cfg, b.kind, b.w)},
			trainSim: map[float64]*pooledScore{b.w: hierScoreDrift(simTrain, cfg, b.kind, b.w)},
			swapW:    b.swapW, swapPHP: hierScoreDrift(phpTrain, cfg, b.kind, b.swapW)}
		d.testPHP = hierScoreDrift(phpTest, cfg, b.kind, b.w)
		d.testSim = hierScoreDrift(simTest, cfg, b.kind, b.w)
		d.phpChecks, d.simCheck = pooledChecks(d.testPHP), pooledChecks(d.testSim)
		rs = append(rs, d)
	}
	return rs, base, d
}

// hierData are the objects of the training and test splits.
type hierData struct {
	phpTrain, phpTest, simTrain, simTest [][]pooledObj
}

// hierMeets says whether every check of both data sets passes.
func (r hierResult) meets() bool {
	for _, c := range append(append([]check(nil), r.phpChecks...), r.simCheck...) {
		if !c.ok() {
			return false
		}
	}
	return true
}

// hierBest is the candidate the training split prefers (sib without
// leave-one-out is a comparison, not a candidate): the fewest failed
// checks of its chosen w on the training sets (php/doc-en and simulated),
// then the lowest worse ratio0 there.
func hierBest(rs []hierResult) int {
	bi, bf, bv := 0, math.MaxInt, math.Inf(1)
	for i, r := range rs {
		if r.sib != nil && !r.sib.loo {
			continue // the page's own history in its prior: a comparison, not the deployment case
		}
		f := r.trainFailed()
		v := math.Max(ratio0(r.trainPHP[r.w]), ratio0(r.trainSim[r.w]))
		if f < bf || (f == bf && v < bv) {
			bi, bf, bv = i, f, v
		}
	}
	return bi
}

// trainFailed is the number of the target's checks that the candidate's
// chosen w fails on the training sets.
func (r hierResult) trainFailed() int {
	n := 0
	for _, c := range append(pooledChecks(r.trainPHP[r.w]), pooledChecks(r.trainSim[r.w])...) {
		if !c.ok() {
			n++
		}
	}
	return n
}

// bestTestScore is the php test score with the lowest ratio0 and its
// candidate's name.
type bestTestScore struct {
	*pooledScore
	name0 string
}

func bestTest(rs []hierResult) bestTestScore {
	b := bestTestScore{}
	for _, x := range rs {
		if b.pooledScore == nil || ratio0(x.testPHP) < ratio0(b.pooledScore) {
			b = bestTestScore{x.testPHP, x.name}
		}
	}
	return b
}

// ratio0Boot is the 5th and 95th percentiles of ratio0 over reps
// bootstrap resamples of the sites (sites drawn with replacement, all
// their objects of group 0 kept): the ratio's sampling spread when the
// sites, not the pages, are the independent units.
func ratio0Boot(s *pooledScore, reps int, seed uint64) (lo, hi float64) {
	bySite := map[int][]int{}
	for i, si := range s.site0 {
		bySite[si] = append(bySite[si], i)
	}
	var ids []int
	for si := range bySite {
		ids = append(ids, si)
	}
	sort.Ints(ids)
	if len(ids) == 0 {
		return math.NaN(), math.NaN()
	}
	rng := rand.New(rand.NewPCG(seed, 16))
	var rs []float64
	for r := 0; r < reps; r++ {
		b := newPooledScore()
		for range ids {
			for _, i := range bySite[ids[rng.IntN(len(ids))]] {
				for k, v := range s.errs[0] {
					b.errs[0][k] = append(b.errs[0][k], v[i])
				}
			}
		}
		rs = append(rs, ratio0(b))
	}
	return quantile(rs, 0.05), quantile(rs, 0.95)
}

func bootString(s *pooledScore, seed uint64) string {
	lo, hi := ratio0Boot(s, 400, seed)
	return "[" + f3(lo) + ", " + f3(hi) + "]"
}

// mergeScores pools the per-object errors and predictive coverage counts
// of a and b (two disjoint sets of sites), b's sites numbered after a's.
func mergeScores(a, b *pooledScore) *pooledScore {
	m := newPooledScore()
	for _, s := range []*pooledScore{a, b} {
		off := m.sites
		for g := range m.errs {
			m.n[g] += s.n[g]
			m.predN[g] += s.predN[g]
			m.predCov[g] += s.predCov[g]
			m.cov[g] += s.cov[g]
			m.ciN[g] += s.ciN[g]
			for k, v := range s.errs[g] {
				m.errs[g][k] = append(m.errs[g][k], v...)
			}
		}
		for _, si := range s.site0 {
			m.site0 = append(m.site0, off+si)
		}
		m.sites += s.sites
	}
	return m
}
