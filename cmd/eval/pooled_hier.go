package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
)

// Site priors over time (estimators/pooled_hier.go): can a prior that
// knows the site's history meet the pooled target on php/doc-en without
// breaking it on the simulated sites?
//
// Candidates, each with one hyper-parameter, the decay w of the site's
// history (the observed period weighted 1, the period h back w^h):
//
//   - hist: the gamma prior fitted on the decayed history;
//   - drift: hist's prior inflated by the site's period-to-period variance
//     of log level (eq. H1–H2);
//   - three: hist's prior with its mean shrunk towards the level of all
//     sites of the same periods (eq. H3);
//   - persistent: a page's rate in one period is its lasting rate θ times
//     a burst multiplier of the period (the gamma-Poisson layer of
//     estimators/pooled_nb.go): the site prior is one of lasting rates,
//     its spread the cross-covariance of consecutive periods of the same
//     pages, the bursts' dispersion their excess variance, its mean hist's
//     (or three's: persistent + three-level mean).
//
// w is chosen on a training split (php/doc-en: the directories of one half
// of a hash split, phpHalf; simulated: sites of another random stream) and
// every candidate is reported on the other half (test), under the
// protocol with room for the history before the observed year (hierPHP).

type hierKind int

const (
	hierHist hierKind = iota
	hierDrift
	hierThree
	hierPersistent
	hierPersistentThree
	// hierPersistentCC is persistent with the former spread (the site's
	// own cross-covariance of consecutive periods): not a candidate, the
	// comparison of the fix.
	hierPersistentCC
)

var hierKinds = []struct {
	kind hierKind
	name string
}{{hierHist, "hist (decayed history)"}, {hierDrift, "drift (history + level variance)"}, {hierThree, "three-level (history + shrink to all sites)"},
	{hierPersistent, "persistent (lasting rates + bursts per period)"},
	{hierPersistentThree, "persistent + three-level mean"}}

// hierDecays is the grid of the decay w chosen on the training split.
var hierDecays = []float64{0, 0.25, 0.5, 0.75, 1}

// hierYears is the number of earlier periods the history holds.
const hierYears = 3

// hierPHP is the php/doc-en protocol of the history candidates: phpHonest's
// design (selection, truth and observed windows disjoint) with the truth
// and selection before the observed year moved 3 years earlier, so that
// the hierYears years before the observed one are neither truth nor
// selection. (Under phpHonest itself those years are the truth's and the
// selection's: a history prior would read the truth.)
var hierPHP = phpProtocol{sel: []yearWin{{-6, -5}, {3, 4}}, tru: []yearWin{{-5, -3}, {1, 3}}, histYears: hierYears}

// sitePrior is one site's candidate prior with what the three-level
// candidate needs: the log level, its variance and the site's group.
type sitePrior struct {
	prior estimators.GammaPrior
	ok    bool
	level float64 // log of the decayed mean rate
	v     float64 // its variance (Poisson noise + the periods' deviations)
	group int
}

// hierSitePrior fits the candidate prior (kind, decay w) of one site from
// its prior population (the scored objects with evidence): period 0 is
// the observed window, period h the objects' hist[h−1].
func hierSitePrior(objs []pooledObj, kind hierKind, w float64) sitePrior {
	var periods [hierYears + 1]estimators.PoolStats
	var decayed estimators.PoolStats
	group := 0
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		group = o.group
		periods[0].Add(o.ev, 1)
		decayed.Add(o.ev, 1)
		for h, ev := range o.hist {
			if h >= hierYears {
				break
			}
			periods[h+1].Add(ev, 1)
			if wh := math.Pow(w, float64(h+1)); wh > 0 {
				decayed.Add(ev, wh)
			}
		}
	}
	p, ok := decayed.Prior()
	sp := sitePrior{prior: p, ok: ok, group: group}
	if !ok {
		return sp
	}
	var drift estimators.LevelDrift
	for h := hierYears; h >= 0; h-- {
		drift.AddPeriod(periods[h])
	}
	tau2, _ := drift.Var()
	if kind == hierDrift {
		sp.prior = p.WithLevelVar(tau2)
	}
	// The decayed level's variance: the periods' independent deviations
	// around the site's long-run level (variance τ²/2 each, so that two
	// consecutive periods differ by τ²) and the Poisson noise.
	var sw, sw2, swx, sw2x float64
	for h := 0; h <= hierYears; h++ {
		if !(periods[h].E > 0) {
			continue
		}
		wh := math.Pow(w, float64(h))
		sw += wh
		sw2 += wh * wh
		swx += wh * periods[h].X
		sw2x += wh * wh * periods[h].X
	}
	sp.level = math.Log(p.Mean())
	sp.v = tau2 / 2 * sw2 / (sw * sw)
	if swx > 0 {
		sp.v += sw2x / (swx * swx)
	}
	return sp
}

// hierPriors fits the candidate prior of every site; for three, each
// site's mean is shrunk towards its group's level (eq. H3) with the
// groups' spread of long-run levels ω² = var(ℓ_s) − mean(v_s) (clipped
// at 0), by moments over the group's sites.
func hierPriors(sets [][]pooledObj, kind hierKind, w float64) map[*pooledObj]sitePrior {
	out := map[*pooledObj]sitePrior{}
	type acc struct{ n, s, s2, v float64 }
	groups := map[int]*acc{}
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		sp := hierSitePrior(objs, kind, w)
		out[&objs[0]] = sp
		if sp.ok {
			a := groups[sp.group]
			if a == nil {
				a = &acc{}
				groups[sp.group] = a
			}
			a.n++
			a.s += sp.level
			a.s2 += sp.level * sp.level
			a.v += sp.v
		}
	}
	if kind != hierThree {
		return out
	}
	for k, sp := range out {
		a := groups[sp.group]
		if !sp.ok || a == nil || a.n < 2 {
			continue
		}
		lg := a.s / a.n
		omega2 := math.Max(0, (a.s2-a.n*lg*lg)/(a.n-1)-a.v/a.n)
		sp.prior = sp.prior.WithMean(math.Exp(estimators.ShrinkLevel(sp.level, sp.v, lg, omega2)))
		out[k] = sp
	}
	return out
}

// periodPairs are the moments of consecutive periods of the same objects
// of the site's prior population (estimators.DispersionStats over the
// pairs (period h+1, period h)).
func periodPairs(objs []pooledObj) estimators.DispersionStats {
	var ds estimators.DispersionStats
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		prev := o.ev
		for h, ev := range o.hist {
			if h >= hierYears {
				break
			}
			if ev.E > 0 && prev.E > 0 {
				ds.Add(ev, prev)
			}
			prev = ev
		}
	}
	return ds
}

// inPrior says whether the object feeds its site's candidate prior: the
// scored objects with evidence, or every object with evidence when
// priorAll is set (allPages).
func (o *pooledObj) inPrior() bool { return o.evOK && (o.scored || o.priorAll) }

// allPages is a copy of sets whose every object with evidence feeds the
// candidate priors (as an aggregator sees a site: all its pages), the
// scored objects unchanged.
func allPages(sets [][]pooledObj) [][]pooledObj {
	out := make([][]pooledObj, len(sets))
	for i, objs := range sets {
		if objs == nil {
			continue
		}
		out[i] = append([]pooledObj(nil), objs...)
		for j := range out[i] {
			out[i][j].priorAll = true
		}
	}
	return out
}

// siteGroup is the group (calendar) of the site's prior population.
func siteGroup(objs []pooledObj) int {
	for _, o := range objs {
		if o.inPrior() {
			return o.group
		}
	}
	return 0
}

// persistentPrior is the persistent candidate's site prior: the lasting
// rates' gamma from the whole periods' moments of the decayed history
// (hist with w) net of the bursts (eq. H4, GammaPrior.Lasting) with the
// dispersion k per period pooled over the group's sites (eq. H5), its mean
// moved to mean when mean > 0 (three-level). ok is false when the site
// has no consecutive periods' moments (the same sites as before the fix).
func persistentPrior(objs []pooledObj, w, mean, k float64) (estimators.NBPrior, bool) {
	if _, ok := periodPairs(objs).Prior(); !ok {
		return estimators.NBPrior{}, false
	}
	sp := hierSitePrior(objs, hierHist, w)
	if !sp.ok {
		return estimators.NBPrior{}, false
	}
	g := sp.prior.Lasting(k)
	if mean > 0 {
		g = g.WithMean(mean)
	}
	return estimators.NBPrior{GammaPrior: g, K: k}, true
}

// persistentPriorCC is the former persistent prior (the comparison of
// the fix): the lasting rates' spread and the dispersion from the site's
// own cross-covariance of consecutive periods (periodPairs), the mean
// hist's (or mean when mean > 0).
func persistentPriorCC(objs []pooledObj, w, mean float64) (estimators.NBPrior, bool) {
	nb, ok := periodPairs(objs).Prior()
	if !ok {
		return nb, false
	}
	if mean > 0 {
		nb.GammaPrior = nb.GammaPrior.WithMean(mean)
	} else if sp := hierSitePrior(objs, hierHist, w); sp.ok {
		nb.GammaPrior = nb.GammaPrior.WithMean(sp.prior.Mean())
	}
	return nb, true
}

// burstPools is eq. H5's pooled dispersion of every group of the sets.
func burstPools(sets [][]pooledObj) map[int]float64 {
	pools := map[int]*estimators.BurstPool{}
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		g := siteGroup(objs)
		if pools[g] == nil {
			pools[g] = &estimators.BurstPool{}
		}
		pools[g].Add(periodPairs(objs))
	}
	out := map[int]float64{}
	for g, p := range pools {
		out[g] = p.K()
	}
	return out
}

// siteDrift is the site's LevelDrift (eq. H1) over its prior
// population's periods.
func siteDrift(objs []pooledObj) estimators.LevelDrift {
	var periods [hierYears + 1]estimators.PoolStats
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		periods[0].Add(o.ev, 1)
		for h, ev := range o.hist {
			if h < hierYears {
				periods[h+1].Add(ev, 1)
			}
		}
	}
	var d estimators.LevelDrift
	for h := hierYears; h >= 0; h-- {
		d.AddPeriod(periods[h])
	}
	return d
}

// siteTau2 is the site's τ² (eq. H1) over its prior population's periods.
func siteTau2(objs []pooledObj) float64 {
	t, _ := siteDrift(objs).Var()
	return t
}

// groupTau2 is τ² (eq. H1) pooled over the sites of a group: their
// LevelDrift sums added (the sites of one calendar share the variance of
// their levels' steps; one site's three steps make a noisy τ̂²). The
// returned function gives a site its group's τ².
func groupTau2(sets [][]pooledObj) func([]pooledObj) float64 {
	sums := map[int]*estimators.LevelDrift{}
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		d := siteDrift(objs)
		g := siteGroup(objs)
		if sums[g] == nil {
			sums[g] = &estimators.LevelDrift{}
		}
		sums[g].N += d.N
		sums[g].SS += d.SS
		sums[g].Noise += d.Noise
	}
	return func(objs []pooledObj) float64 {
		d := sums[siteGroup(objs)]
		if d == nil {
			return 0
		}
		t, _ := d.Var()
		return t
	}
}

// hierScoreDrift is hierScore with the estimate made the next period's
// rate under the site's drift (pooledScore.tau2Of): the drift in the
// prediction, not in the prior.
func hierScoreDrift(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64) *pooledScore {
	return hierScoreWith(sets, cfg, kind, w, siteTau2)
}

// hierScore scores the sets with the candidate's priors.
func hierScore(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64) *pooledScore {
	return hierScoreWith(sets, cfg, kind, w, nil)
}

func hierScoreWith(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64, tau2Of func([]pooledObj) float64) *pooledScore {
	s := newPooledScore()
	s.priorScored = true
	s.tau2Of = tau2Of
	if kind == hierPersistent || kind == hierPersistentThree || kind == hierPersistentCC {
		var three map[*pooledObj]sitePrior
		if kind == hierPersistentThree {
			three = hierPriors(sets, hierThree, w)
		}
		ks := burstPools(sets)
		s.nbOf = func(objs []pooledObj) (estimators.NBPrior, bool) {
			mean := 0.0
			if sp, ok := three[&objs[0]]; ok && sp.ok {
				mean = sp.prior.Mean()
			}
			if kind == hierPersistentCC {
				return persistentPriorCC(objs, w, mean)
			}
			return persistentPrior(objs, w, mean, ks[siteGroup(objs)])
		}
		for _, objs := range sets {
			if len(objs) > 0 {
				s.addSite(objs, cfg)
			}
		}
		return s
	}
	priors := hierPriors(sets, kind, w)
	s.priorOf = func(objs []pooledObj) (estimators.GammaPrior, bool) {
		sp := priors[&objs[0]]
		return sp.prior, sp.ok
	}
	for _, objs := range sets {
		if len(objs) > 0 {
			s.addSite(objs, cfg)
		}
	}
	return s
}

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

// hierBest is the candidate the training split prefers: the fewest failed
// checks of its chosen w on the training sets (php/doc-en and simulated),
// then the lowest worse ratio0 there.
func hierBest(rs []hierResult) int {
	bi, bf, bv := 0, math.MaxInt, math.Inf(1)
	for i, r := range rs {
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

// hierCause explains, from the numbers, the preferred candidate's missed
// checks: on php/doc-en, where its loss against the best single estimator
// lies (the pages without a detected change) and how far the site prior
// and the posterior median sit from their truth there. "" when the numbers
// do not show the cause (a miss on the simulated sites has no explanation
// here: the persistent family's former one, the noisy cross-covariance
// spread, is fixed by eq. H4–H5 and compared in hierFixText).
func hierCause(r hierResult) string {
	var parts []string
	failed := func(cs []check) bool {
		for _, c := range cs {
			if !c.ok() {
				return true
			}
		}
		return false
	}
	if failed(r.phpChecks) {
		s := r.testPHP
		k0, _ := s.bestSingle(0)
		k3 := bestOfGroup(s, 3)
		z, nz := quantile(s.errs[2]["pooled"], 0.5), quantile(s.errs[3]["pooled"], 0.5)
		zb, nzb := quantile(s.errs[2][k0], 0.5), quantile(s.errs[3][k3], 0.5)
		if !(z > zb) || !(nz < nzb) || len(s.zeroPrior) == 0 {
			return ""
		}
		var post []float64
		for i := range s.zeroPost {
			post = append(post, s.zeroPost[i]-s.zeroPrior[i])
		}
		lp, lq := quantile(s.zeroPrior, 0.5), quantile(post, 0.5)
		where := "the posterior's lower part: the site prior is wide and a silent page's posterior median sits far below its mean"
		if math.Abs(lq) < math.Abs(lp) {
			where = "the prior's level itself: the site's activity over the prior's periods is below the silent pages' activity in the truth years"
		}
		parts = append(parts, fmt.Sprintf("on php/doc-en the loss is in the pages without a detected change (%d of %d with fewer than 5): there the "+
			"candidate's median |log| is %s against %s's %s, while with 1–4 changes it wins (%s against %s's %s); for the silent pages the site prior's "+
			"mean is e^%s of their truth (median) and the posterior median e^%s from the prior mean, so most of the gap is %s",
			s.n[2], s.n[0], f3(z), k0, f3(zb), f3(nz), k3, f3(nzb), f2(lp), f2(lq), where))
	}
	if n := r.testPHP.predN[1]; len(parts) > 0 && !coverageReachable(n) {
		parts = append(parts, fmt.Sprintf("the php/doc-en coverage check with 5 or more changes rests on %d predictive interval(s) and cannot pass "+
			"for any estimator (k/%d is never in 93–97 %%)", n, n))
	}
	return strings.Join(parts, "; ")
}

// pooledTimeSection (section "pooledtime") writes the candidates'
// evaluation and the verdict of the candidate the training split prefers.
// It reads php/doc-en itself when the realphp section has not run.
func pooledTimeSection(e *Env) {
	r := e.R
	r.H(3, "Site priors over time: candidates judged on a test split")
	pages := e.phpPages
	if pages == nil {
		p, _, err := readPHP(e.Data)
		if err != nil {
			r.P("Skipped: %v (pass --data).", err)
			e.dataMissing = append(e.dataMissing, err.Error())
			return
		}
		pages = p
	}
	e.hier = hierSection(e, newEstConfig(), pages)
}

// hierSection evaluates the candidates and writes their table, regimes and
// verdict.
func hierSection(e *Env, cfg *estimators.Config, pages map[string][]float64) []hierResult {
	r := e.R
	rs, base, data := hierCandidates(e, cfg, pages)
	r.P("Extensions of the site prior (`estimators/pooled_hier.go`), each O(1) per site: **hist** fits the gamma prior on the site's "+
		"observed period and the %d periods before it with exponentially decayed sums (weight w^h for the period h back, `PoolStats.Decay`); **drift** "+
		"inflates hist's prior by the site's period-to-period variance of log level τ² (a log random walk: eq. H1–H2, τ² from the site's own consecutive "+
		"periods, net of their Poisson noise), so a shifting site's prior is wider; **three-level** shrinks hist's prior mean towards the level of all sites of "+
		"the same periods (eq. H3), by the site level's uncertainty (Poisson noise and the periods' deviations, τ²/2 each) against the sites' spread of "+
		"long-run levels; **persistent** separates a page's lasting rate from its period's bursts (the gamma-Poisson layer of `pooled_nb`): the prior is "+
		"one of lasting rates, with hist's mean (or three-level's) and the spread of hist's whole periods net of the bursts (eq. H4), the bursts' "+
		"dispersion per period pooled over the sites of one calendar from the cross-covariance of consecutive periods of the same pages (eq. H5), and the "+
		"page's count is negative binomial around it (`estimators.PooledNB`); **+ drift in the prediction** keeps a candidate's posterior of this "+
		"period's rate θ and estimates the next period's, θ·e^η with η ~ N(0, τ²) (the site's τ² of eq. H1): the drift widens the prediction, not the "+
		"prior (its median and interval are the mixture's; the predictive check mixes over η too). The one hyper-parameter, w ∈ {%s}, is chosen on a "+
		"**training split** only: php/doc-en directories of one half of a fixed hash split (`phpHalf`), and simulated sites of another random stream; the "+
		"rule is the w whose worse data set (the larger ratio, < 5 changes) is lowest, and the verdict is given for the candidate whose chosen w has the "+
		"lowest such training value (+ drift variants use their base's w). Every candidate is then reported on the **test split**: the other half of the "+
		"directories, and the simulated sites of the section above (stationary; each object gets %d earlier windows of the same process). The last column "+
		"swaps the halves (w chosen on the test half, scored on the training half): how much a ratio moves with the half it is measured on. Caveat: the "+
		"candidates were designed in three rounds; persistent and the drift in the prediction were added after the first round's test numbers "+
		"(hist, drift, three-level) were seen, and persistent's spread (eq. H4–H5, replacing the site's own cross-covariance of consecutive periods) "+
		"after the second round's (its simulated coverage with 5 or more changes failed), so the test split is not untouched for them (their "+
		"hyper-parameter is still chosen on the training split). The verdict's candidate is the one whose chosen w fails the fewest checks on the training "+
		"sets, then has the lowest training ratio. "+
		"php/doc-en protocol: selection in %s, truth in %s, observed year (start, start+1 y], history the %d years before it. This is `phpHonest`'s design "+
		"with its selection and truth before the observed year moved 3 years earlier; under `phpHonest` itself the years before the observed one are truth "+
		"and selection years, so a history prior would read the truth.",
		hierYears, hierDecaysString(), hierYears, winsString(hierPHP.sel), winsString(hierPHP.tru), hierYears)
	var rows [][]string
	for _, x := range rs {
		var tr []string
		for _, w := range hierDecays {
			if x.trainPHP[w] != nil {
				tr = append(tr, fmt.Sprintf("%g: %s / %s", w, f3(ratio0(x.trainPHP[w])), f3(ratio0(x.trainSim[w]))))
			}
		}
		rows = append(rows, []string{x.name, strings.Join(tr, "; "), fmt.Sprint(x.w),
			f3(ratio0(x.testSim)), f3(ratio1(x.testSim)), pct(hierCoverage(x.testSim, 0)) + " / " + pct(hierCoverage(x.testSim, 1)),
			f3(ratio0(x.testPHP)) + " " + bootString(x.testPHP, e.Seed), f3(ratio1(x.testPHP)), pct(hierCoverage(x.testPHP, 0)) + " / " + pct(hierCoverage(x.testPHP, 1)),
			groupVs(x.testPHP, 2), groupVs(x.testPHP, 3), yesNo(x.meets()),
			fmt.Sprintf("w = %g: %s (%s)", x.swapW, f3(ratio0(x.swapPHP)), pct(hierCoverage(x.swapPHP, 0)))})
	}
	r.Table([]string{"candidate", "train: ratio (< 5 changes) php / simulated, by w", "w chosen",
		"test simulated: ratio < 5 (≤ 0.85)", "ratio ≥ 5 (≤ 1.02)", "coverage < 5 / ≥ 5 (93–97 %)",
		"test php: ratio < 5 (≤ 0.85) [90 % bootstrap over the sites, directory × start]", "ratio ≥ 5 (≤ 1.02)", "predictive coverage < 5 / ≥ 5 (93–97 %)",
		"test php, 0 changes: pooled vs best single", "test php, 1–4 changes", "meets the target on both",
		"halves swapped: w, php ratio < 5 (predictive coverage)"}, rows)
	t := rs[0].testPHP
	r.P("Test split sizes: php/doc-en %d pages with fewer than 5 changes (%d without a change), %d with 5 or more (its ratio and coverage rest on so few "+
		"pages that they are noise); simulated %d and %d objects.", t.n[0], t.n[2], t.n[1], rs[0].testSim.n[0], rs[0].testSim.n[1])
	h0 := rs[0].trainPHP[0]
	r.P("w = 0 of hist is the published `pooled` (the observed period alone) on the same pages: train php ratio %s. Test php split, hist with w = 0: %s.",
		f3(ratio0(h0)), pooledOurs(base))
	bi := hierBest(rs)
	b := rs[bi]
	hierFixText(e, cfg, rs, data)
	hierRound3Text(e, cfg, b, data)
	b.testPHP.regimeTable(r, fmt.Sprintf("Test php split, %s with w = %g, by regime of r = truth/f (weekly crawler), objects with fewer than 5 changes:", b.name, b.w))
	b.testSim.regimeTable(r, fmt.Sprintf("Test simulated sites, %s with w = %g, by regime of r = λ/f, objects with fewer than 5 changes:", b.name, b.w))
	var checks []check
	for _, c := range b.simCheck {
		c.name = "simulated: " + c.name
		checks = append(checks, c)
	}
	for _, c := range b.phpChecks {
		c.name = "php/doc-en: " + c.name
		checks = append(checks, c)
	}
	var met []string
	for _, x := range rs {
		if x.meets() {
			met = append(met, x.name)
		}
	}
	allOK := func(cs []check) bool {
		for _, c := range cs {
			if !c.ok() {
				return false
			}
		}
		return true
	}
	var simOK, simNot []string
	for _, x := range rs {
		if allOK(x.simCheck) {
			simOK = append(simOK, x.name)
		} else {
			simNot = append(simNot, x.name)
		}
	}
	bt := bestTest(rs)
	if len(met) == 0 {
		r.P("**Outcome.** No candidate meets the target on both test sets (every check of both is needed). On the simulated test sites every check "+
			"passes for: %s; not for: %s. On php/doc-en the lowest ratio (< 5 changes) is %s (%s, predictive coverage %s), against %s for the observed "+
			"year alone on the same test pages (hist, w = 0); the target is 0.85. The published `pooled` estimator is unchanged.",
			orNone(simOK), orNone(simNot), f3(ratio0(bt.pooledScore)), bt.name0, pct(hierCoverage(bt.pooledScore, 0)), f3(ratio0(base)))
	} else {
		r.P("**Outcome.** Meeting the target on both test sets: %s.", strings.Join(met, ", "))
	}
	r.Verdict(fmt.Sprintf("Pooled, site prior over time (%s, w = %g chosen on the training split; test split)", b.name, b.w), "issue 16 target on both data sets",
		fmt.Sprintf("simulated: %s; php/doc-en: %s", pooledOurs(b.testSim), pooledOurs(b.testPHP)), checks, hierCause(b))
	return rs
}

func hierDecaysString() string {
	var p []string
	for _, w := range hierDecays {
		p = append(p, fmt.Sprint(w))
	}
	return strings.Join(p, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// predictiveCoversNB is predictiveCovers for the candidates whose
// posterior is not conjugate: the posterior of the period's rate θ is taken
// as the gamma with the estimate's median and upper credible bound
// (gammaFromQuantiles); the truth windows' rate is θ·e^η, η ~ N(0, tau2)
// (the site's drift; 0: none), taken over driftNodes equiprobable η; given
// it, the truth count over T, made of T/span periods with a burst
// multiplier each (dispersion k per period; +Inf: none), has mean
// m = T·E[θ] and variance
//
//	m + T²·Var[θ] + E[θ²]·T·span/k,
//
// matched by a negative binomial. ok is false without an interval.
func predictiveCoversNB(est estimators.Estimate, k, tau2 float64, count int, T, span, v float64, cfg *estimators.Config) (covers, ok bool) {
	if !est.HasCI || !(est.Rate > 0) || !(est.Hi > est.Rate) || !(T > 0) {
		return false, false
	}
	pHi := 1 - (1-cfg.Level)/2
	a, b, ok := gammaFromQuantiles(est.Rate, est.Hi, pHi)
	if !ok {
		return false, false
	}
	etas := driftNodes(tau2)
	var lo, hi float64
	for _, eta := range etas {
		l, h := nbCDFs(a, b*math.Exp(-eta), k, count, T, span)
		lo += l / float64(len(etas))
		hi += h / float64(len(etas))
	}
	u := lo + v*(hi-lo)
	return u >= 0.025 && u <= 0.975, true
}

// nbCDFs are P(K ≤ count−1) and P(K ≤ count) of the truth count K of
// predictiveCoversNB given θ ~ Gamma(a, b).
func nbCDFs(a, b, k float64, count int, T, span float64) (lo, hi float64) {
	mean, vth := a/b, a/(b*b)
	m := T * mean
	variance := m + T*T*vth
	if !math.IsInf(k, 1) && k > 0 && span > 0 {
		variance += (vth + mean*mean) * T * span / k
	}
	r := m * m / (variance - m) // NB(r, p): mean r(1−p)/p = m
	p := r / (r + m)
	cdf := func(k int) float64 {
		if k < 0 {
			return 0
		}
		return mathext.RegIncBeta(r, float64(k)+1, p)
	}
	return cdf(count - 1), cdf(count)
}

// driftNodes are equiprobable nodes of N(0, tau2) (one node, 0, when
// tau2 is 0).
func driftNodes(tau2 float64) []float64 {
	if !(tau2 > 0) {
		return []float64{0}
	}
	const m = 7
	out := make([]float64, m)
	for i := range out {
		out[i] = math.Sqrt(tau2) * math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/m-1)
	}
	return out
}

// driftWiden is the estimate of the next period's rate θ·e^η, η ~ N(0,
// tau2), from the estimate of θ (its posterior taken as the gamma of
// gammaFromQuantiles): the median and equal-tailed quantiles of the
// mixture over driftNodes, by bisection in log λ.
func driftWiden(est estimators.Estimate, tau2 float64, cfg *estimators.Config) (estimators.Estimate, bool) {
	pLo, pHi := (1-cfg.Level)/2, 1-(1-cfg.Level)/2
	a, b, ok := gammaFromQuantiles(est.Rate, est.Hi, pHi)
	if !ok {
		return est, false
	}
	etas := driftNodes(tau2)
	cdf := func(x float64) float64 {
		c := 0.0
		for _, eta := range etas {
			c += mathext.GammaIncReg(a, b*x*math.Exp(-eta))
		}
		return c / float64(len(etas))
	}
	q := func(p float64) float64 {
		// the mixture's quantiles lie within 4τ (beyond every node) of
		// the gamma's, which lie within the estimate's interval ± 1
		tau := math.Sqrt(tau2)
		lo, hi := math.Log(est.Lo)-4*tau-1, math.Log(est.Hi)+4*tau+1
		if !(est.Lo > 0) {
			lo = math.Log(est.Rate) - 40
		}
		for i := 0; i < 26; i++ {
			mid := (lo + hi) / 2
			if cdf(math.Exp(mid)) < p {
				lo = mid
			} else {
				hi = mid
			}
		}
		return math.Exp((lo + hi) / 2)
	}
	out := est
	out.Rate, out.Lo, out.Hi = q(0.5), q(pLo), q(pHi)
	return out, true
}

// gammaFromQuantiles is the Gamma(a, b) whose median is med and whose p
// quantile is hi (hi > med, p > ½): the ratio of the two quantiles falls
// with the shape, found by bisection in log a.
func gammaFromQuantiles(med, hi, p float64) (a, b float64, ok bool) {
	want := hi / med
	ratio := func(a float64) float64 {
		return mathext.GammaIncRegInv(a, p) / mathext.GammaIncRegInv(a, 0.5)
	}
	lo, up := math.Log(1e-3), math.Log(1e5)
	if !(ratio(math.Exp(up)) < want) || !(ratio(math.Exp(lo)) > want) {
		return 0, 0, false
	}
	for i := 0; i < 36; i++ { // relative precision of a: 18.4/2³⁶
		mid := (lo + up) / 2
		if ratio(math.Exp(mid)) > want {
			lo = mid
		} else {
			up = mid
		}
	}
	a = math.Exp((lo + up) / 2)
	return a, mathext.GammaIncRegInv(a, 0.5) / med, true
}

// groupVs is "pooled m (best single k m')" over group g.
func groupVs(s *pooledScore, g int) string {
	k := bestOfGroup(s, g)
	return fmt.Sprintf("%s (%s %s)", f3(quantile(s.errs[g]["pooled"], 0.5)), k, f3(quantile(s.errs[g][k], 0.5)))
}

// bestOfGroup is the single paper estimator with the lowest median error
// in group g.
func bestOfGroup(s *pooledScore, g int) string {
	k, b := "", math.Inf(1)
	for _, key := range singleKeys {
		if m := quantile(s.errs[g][key], 0.5); m < b {
			k, b = key, m
		}
	}
	return k
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

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
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

// hierFixText compares the persistent candidate (at its chosen w) with the
// former spread of its lasting rates (the site's own cross-covariance of
// consecutive periods, hierPersistentCC) on the test split, with the
// pooled burst dispersions of eq. H5.
func hierFixText(e *Env, cfg *estimators.Config, rs []hierResult, d hierData) {
	var p *hierResult
	for i := range rs {
		if rs[i].kind == hierPersistent && !rs[i].drift {
			p = &rs[i]
		}
	}
	if p == nil {
		return
	}
	ccSim := hierScore(d.simTest, cfg, hierPersistentCC, p.w)
	ccPHP := hierScore(d.phpTest, cfg, hierPersistentCC, p.w)
	var phpInvK []float64
	for _, k := range burstPools(d.phpTrain) {
		phpInvK = append(phpInvK, 1/k)
	}
	simInvK := 0.0
	for _, k := range burstPools(d.simTrain) {
		simInvK = math.Max(simInvK, 1/k)
	}
	e.R.P("The persistent family's spread (eq. H4–H5) against its former one, the site's own cross-covariance of consecutive periods, for persistent "+
		"with w = %g on the test split: simulated coverage < 5 / ≥ 5 changes %s / %s (former: %s / %s), ratio < 5 %s (former: %s); php/doc-en ratio < 5 %s "+
		"(former: %s), predictive coverage %s (former: %s). The pooled burst dispersion 1/k̄ (eq. H5) of the training split: php/doc-en calendars median "+
		"%.3f, largest %.3f (%d calendars); simulated sites %.3f (they have no bursts), so there the lasting prior is hist's own.",
		p.w, pct(hierCoverage(p.testSim, 0)), pct(hierCoverage(p.testSim, 1)), pct(hierCoverage(ccSim, 0)), pct(hierCoverage(ccSim, 1)),
		f3(ratio0(p.testSim)), f3(ratio0(ccSim)), f3(ratio0(p.testPHP)), f3(ratio0(ccPHP)), pct(hierCoverage(p.testPHP, 0)), pct(hierCoverage(ccPHP, 0)),
		quantile(phpInvK, 0.5), quantile(phpInvK, 1), len(phpInvK), simInvK)
}

// hierRound3Text reports the two further changes tried on the preferred
// candidate b (its kind, w and drift setting), judged on the training
// split and shown on the test split too: every page of a site in its prior
// (allPages, as an aggregator sees a site) and τ² pooled over the sites of
// one calendar in the prediction (groupTau2); and whether the php test
// split's pages with 5 or more changes can meet the coverage check at all.
func hierRound3Text(e *Env, cfg *estimators.Config, b hierResult, d hierData) {
	var tau func([]pooledObj) float64
	if b.drift {
		tau = siteTau2
	}
	allTr := hierScoreWith(allPages(d.phpTrain), cfg, b.kind, b.w, tau)
	allTe := hierScoreWith(allPages(d.phpTest), cfg, b.kind, b.w, tau)
	gTrP := hierScoreWith(d.phpTrain, cfg, b.kind, b.w, groupTau2(d.phpTrain))
	gTrS := hierScoreWith(d.simTrain, cfg, b.kind, b.w, groupTau2(d.simTrain))
	gTeP := hierScoreWith(d.phpTest, cfg, b.kind, b.w, groupTau2(d.phpTest))
	gTeS := hierScoreWith(d.simTest, cfg, b.kind, b.w, groupTau2(d.simTest))
	rc := func(s *pooledScore) string { return f3(ratio0(s)) + " (" + pct(hierCoverage(s, 0)) + ")" }
	e.R.P("Two more changes on %s with w = %g, decided on the training split (ratio < 5 changes with its predictive coverage, then on the test split): "+
		"every page of a directory in its prior (as a deployed aggregator sees the site, not only the selected pages): php/doc-en train %s against %s, test %s "+
		"against %s; τ² of the drift in the prediction pooled over the directories of one calendar (eq. H1's sums added; one site's three steps make a noisy "+
		"τ̂²): php/doc-en train %s against %s, test %s against %s; simulated coverage < 5 / ≥ 5 train %s / %s, test %s / %s.",
		b.name, b.w, rc(allTr), rc(b.trainPHP[b.w]), rc(allTe), rc(b.testPHP), rc(gTrP), rc(b.trainPHP[b.w]), rc(gTeP), rc(b.testPHP),
		pct(hierCoverage(gTrS, 0)), pct(hierCoverage(gTrS, 1)), pct(hierCoverage(gTeS, 0)), pct(hierCoverage(gTeS, 1)))
	both := mergeScores(b.testPHP, b.swapPHP)
	e.R.P("Both halves of php/doc-en, each scored with the w chosen without it (the test half with w = %g, the training half with w = %g; %d pages with "+
		"fewer than 5 changes): %s of the best single estimator's median error %s, predictive coverage %s.",
		b.w, b.swapW, both.n[0], f3(ratio0(both)), bootString(both, e.Seed), pct(hierCoverage(both, 0)))
	tr, te := b.trainPHP[b.w], b.testPHP
	k := bestOfGroup(te, 2)
	e.R.P("Where the halves differ (%s, w = %g): on the pages without a detected change its median |log| is %s on the training half and %s on the test "+
		"half, %s's %s and %s; with 1–4 changes %s and %s, the best single estimator's %s and %s. The ratio's move between the halves is mostly the "+
		"comparator's: %s gives every silent page one value, and how near the silent pages' truths fall to it differs between the halves.",
		b.name, b.w, f3(quantile(tr.errs[2]["pooled"], 0.5)), f3(quantile(te.errs[2]["pooled"], 0.5)), k, f3(quantile(tr.errs[2][k], 0.5)),
		f3(quantile(te.errs[2][k], 0.5)), f3(quantile(tr.errs[3]["pooled"], 0.5)), f3(quantile(te.errs[3]["pooled"], 0.5)),
		f3(quantile(tr.errs[3][bestOfGroup(tr, 3)], 0.5)), f3(quantile(te.errs[3][bestOfGroup(te, 3)], 0.5)), k)
	if n := b.testPHP.predN[1]; !coverageReachable(n) {
		e.R.P("On this test split the php/doc-en check of coverage with 5 or more changes cannot pass for any candidate: with %d predictive interval(s) "+
			"the coverage takes only the values k/%d, none in 93–97 %%; \"meets the target on both\" is then out of reach on php/doc-en whatever the "+
			"estimator, and the ratio with fewer than 5 changes (its bootstrap interval above) is the informative number.", n, n)
	}
}

// coverageReachable says whether some k/n lies in [0.93, 0.97].
func coverageReachable(n int) bool {
	for k := 0; k <= n; k++ {
		if c := float64(k) / float64(n); c >= 0.93 && c <= 0.97 {
			return true
		}
	}
	return false
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
