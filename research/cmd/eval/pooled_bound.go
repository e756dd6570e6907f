package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/research/pooled"
)

// An oracle bound of the pooled estimator's form on php/doc-en (issue 16,
// item 4): can any per-site prior combined with the object's own
// likelihood meet the target? Each prior here is fitted on the truth, so
// each is a bound, never an estimator:
//
//   - truth-fitted site prior: a site's (and start's) gamma prior fitted by
//     moments on its scored objects' truth rates, the truth counts' own
//     Poisson noise removed from the variance (truthFit);
//   - truth-fitted global prior: one such prior over every site's scored
//     objects of the start;
//   - best point on the posterior: with the site prior, the posterior's q
//     quantile as the point estimate, q scanned over boundQuantiles (the
//     best q chosen on the scored pages themselves).
//
// The posterior is the published one (Change.PooledEstimate: the conjugate
// Gamma or the exact grid of CGM App. C's likelihood); only the prior and
// the point read off it differ.

// truthMinCV is the truth-fitted prior's least coefficient of variation:
// a site whose truth rates spread no more than their Poisson noise gets a
// prior of shape 1/truthMinCV² = 100 (the published prior's least CV is
// pooledMinCV).
const truthMinCV = 0.1

// boundQuantiles is the grid of posterior quantiles scanned for the point
// estimate: 0.05, 0.10, …, 0.95.
var boundQuantiles = func() []float64 {
	var qs []float64
	for i := 1; i <= 19; i++ {
		qs = append(qs, float64(i)/20)
	}
	return qs
}()

// pooledMinCV is the published prior's least coefficient of variation,
// read off PoolStats.Prior: objects whose evidence is all at the mean (no
// spread beyond the Poisson noise) get the floored shape.
func pooledMinCV() float64 {
	var ps estimators.PoolStats
	for i := 0; i < estimators.MinPoolObjects; i++ {
		ps.Add(estimators.Evidence{X: 1, E: 1}, 1)
	}
	p, ok := ps.Prior()
	if !ok {
		return math.NaN()
	}
	return 1 / math.Sqrt(p.Shape)
}

// truthFit holds the moments of truth rates k_i/T_i (k_i a Poisson count
// in truth windows of length T_i): n, Σ truth, Σ truth² and Σ truth/T, the
// last the truths' Poisson variance summed (E[k/T | λ] = λ, Var = λ/T).
type truthFit struct{ n, s, s2, noise float64 }

func (f *truthFit) add(truth, span float64) {
	f.n++
	f.s += truth
	f.s2 += truth * truth
	f.noise += truth / span
}

// mean is the mean truth rate.
func (f truthFit) mean() float64 { return f.s / f.n }

// rawVar is the truth rates' sample variance.
func (f truthFit) rawVar() float64 {
	m := f.mean()
	return math.Max(0, (f.s2-f.n*m*m)/(f.n-1))
}

// lambdaVar is the variance of the rates λ behind the truths: the sample
// variance less the truths' mean Poisson variance, floored at
// (minCV·mean)²; floored says whether the floor was taken.
func (f truthFit) lambdaVar(minCV float64) (v float64, floored bool) {
	m := f.mean()
	v = f.rawVar() - f.noise/f.n
	if floor := minCV * minCV * m * m; !(v > floor) {
		return floor, true
	}
	return v, false
}

// without is the fit with one truth left out.
func (f truthFit) without(truth, span float64) truthFit {
	return truthFit{f.n - 1, f.s - truth, f.s2 - truth*truth, f.noise - truth/span}
}

// prior is the gamma prior with the truths' mean and lambdaVar; ok is
// false with fewer than 2 truths or a mean of 0.
func (f truthFit) prior(minCV float64) (estimators.GammaPrior, bool) {
	if f.n < 2 || !(f.s > 0) {
		return estimators.GammaPrior{}, false
	}
	m := f.mean()
	v, _ := f.lambdaVar(minCV)
	return estimators.GammaPrior{Shape: m * m / v, Rate: m / v}, true
}

// boundObj says whether the object is one addSite scores (its truth
// feeds the truth-fitted priors).
func boundObj(o pooledObj) bool { return o.scored && o.evOK && o.tspan > 0 }

// siteTruthFit is the truth fit of a site's scored objects.
func siteTruthFit(objs []pooledObj) truthFit {
	var f truthFit
	for _, o := range objs {
		if boundObj(o) {
			f.add(o.truth, o.tspan)
		}
	}
	return f
}

// groupTruthFits is the truth fit of every group's (start's) scored
// objects over all its sites.
func groupTruthFits(sets [][]pooledObj) map[int]truthFit {
	out := map[int]truthFit{}
	for _, objs := range sets {
		for _, o := range objs {
			if boundObj(o) {
				f := out[o.group]
				f.add(o.truth, o.tspan)
				out[o.group] = f
			}
		}
	}
	return out
}

// observedPrior is the published prior of the site: fitted on its scored
// objects' observed-window evidence (phpPooled's prior population).
func observedPrior(objs []pooledObj) (estimators.GammaPrior, bool) {
	var ps estimators.PoolStats
	for _, o := range objs {
		if o.scored && o.evOK {
			ps.Add(o.ev, 1)
		}
	}
	return ps.Prior()
}

// posteriorQuantile is the q quantile of the object's pooled posterior
// under prior (estimators.Change.PooledQuantile: the posterior whose mean
// and equal-tailed interval PooledEstimate publishes).
func posteriorQuantile(c *estimators.Change, prior estimators.GammaPrior, q float64, cfg *estimators.Config) (float64, bool) {
	return c.PooledQuantile(prior, q, cfg)
}

// boundScore scores the sets as phpPooled does (each site's prior
// population its scored objects; a site scored only when its observed
// window gives a prior, so that every prior is judged on the same
// objects) with the site prior of priorOf and the posterior's q quantile
// as the point estimate (q = 0.5: the median; the aggregator publishes the
// mean).
func boundScore(sets [][]pooledObj, cfg *estimators.Config, priorOf func([]pooledObj) (estimators.GammaPrior, bool), q float64) *pooledScore {
	return boundScoreObj(sets, cfg, priorOf, nil, q)
}

// boundScoreObj is boundScore with a prior per object (objPrior, when not
// nil: pooledScore.objPrior).
func boundScoreObj(sets [][]pooledObj, cfg *estimators.Config, priorOf func([]pooledObj) (estimators.GammaPrior, bool),
	objPrior func([]pooledObj, int, estimators.GammaPrior) estimators.GammaPrior, q float64) *pooledScore {
	s := newPooledScore()
	s.priorScored, s.priorOf, s.objPrior, s.pointQ = true, priorOf, objPrior, q
	for _, objs := range sets {
		if objs != nil {
			s.addSite(objs, cfg)
		}
	}
	return s
}

// boundVariant is one oracle prior's score.
type boundVariant struct {
	name string
	s    *pooledScore
}

// boundResult is the oracle bound on one protocol's object sets.
type boundResult struct {
	// site, global, bestQ: the truth-fitted site prior, the truth-fitted
	// global prior and the site prior's best posterior quantile q.
	site, global, bestQ *pooledScore
	q                   float64
	// truthMean, truthSpread: the observed-year prior with the truth's
	// mean (its shape kept), and the truth-fitted prior with the observed
	// year's mean; pooledFloor: the site prior floored at pooledMinCV;
	// loo: the site prior fitted without the object's own truth.
	truthMean, truthSpread, pooledFloor, loo *pooledScore
	// looKept: the objects whose leave-one-out fit has no prior (the
	// other truths all 0), scored with the site prior.
	looKept int
	// sites, floored: the sites scored and those whose truth-fitted prior
	// took the variance floor.
	sites, floored int
	// shift, cvObs, cvTruth: per site, log(truth-fitted prior mean /
	// observed prior mean) and the two priors' coefficients of variation.
	shift, cvObs, cvTruth []float64
	// silent, silentWideObs, silentWideTruth: the scored objects without a
	// detected change, and those of them in sites whose observed-year
	// prior / truth-fitted prior has a shape below 1 (CV > 1: the
	// posterior median of a silent object far below the prior's mean).
	silent, silentWideObs, silentWideTruth int
}

// oracleBound computes the oracle variants on the sets.
func oracleBound(sets [][]pooledObj, cfg *estimators.Config) boundResult {
	var b boundResult
	for _, objs := range sets {
		obs, ok := observedPrior(objs)
		f := siteTruthFit(objs)
		tp, tok := f.prior(truthMinCV)
		if !ok || !tok {
			continue
		}
		b.sites++
		if _, fl := f.lambdaVar(truthMinCV); fl {
			b.floored++
		}
		for _, o := range objs {
			if boundObj(o) && o.changes == 0 {
				b.silent++
				if obs.Shape < 1 {
					b.silentWideObs++
				}
				if tp.Shape < 1 {
					b.silentWideTruth++
				}
			}
		}
		b.shift = append(b.shift, math.Log(pooled.Mean(tp)/pooled.Mean(obs)))
		b.cvObs = append(b.cvObs, 1/math.Sqrt(obs.Shape))
		b.cvTruth = append(b.cvTruth, 1/math.Sqrt(tp.Shape))
	}
	fitted := func(minCV float64) func([]pooledObj) (estimators.GammaPrior, bool) {
		return func(objs []pooledObj) (estimators.GammaPrior, bool) { return siteTruthFit(objs).prior(minCV) }
	}
	site := fitted(truthMinCV)
	groups := groupTruthFits(sets)
	global := func(objs []pooledObj) (estimators.GammaPrior, bool) { return groups[objs[0].group].prior(truthMinCV) }
	truthMean := func(objs []pooledObj) (estimators.GammaPrior, bool) {
		p, ok := observedPrior(objs)
		return pooled.WithMean(p, siteTruthFit(objs).mean()), ok
	}
	truthSpread := func(objs []pooledObj) (estimators.GammaPrior, bool) {
		p, ok := observedPrior(objs)
		t, tok := site(objs)
		return pooled.WithMean(t, pooled.Mean(p)), ok && tok
	}
	b.site, b.global = boundScore(sets, cfg, site, 0.5), boundScore(sets, cfg, global, 0.5)
	b.truthMean, b.truthSpread = boundScore(sets, cfg, truthMean, 0.5), boundScore(sets, cfg, truthSpread, 0.5)
	b.pooledFloor = boundScore(sets, cfg, fitted(pooledMinCV()), 0.5)
	loo := func(objs []pooledObj, i int, sp estimators.GammaPrior) estimators.GammaPrior {
		p, ok := siteTruthFit(objs).without(objs[i].truth, objs[i].tspan).prior(truthMinCV)
		if !ok {
			b.looKept++
			return sp
		}
		return p
	}
	b.loo = boundScoreObj(sets, cfg, site, loo, 0.5)
	b.q, b.bestQ = 0.5, b.site
	for _, q := range boundQuantiles {
		if q == 0.5 {
			continue
		}
		if s := boundScore(sets, cfg, site, q); ratio0(s) < ratio0(b.bestQ) {
			b.q, b.bestQ = q, s
		}
	}
	return b
}

// requested are the bound's three variants (issue 16, item 4).
func (b boundResult) requested() []boundVariant {
	return []boundVariant{{"truth-fitted site prior", b.site}, {"truth-fitted global prior", b.global},
		{fmt.Sprintf("truth-fitted site prior, posterior quantile q = %.2f", b.q), b.bestQ}}
}

// all are every oracle variant: the requested ones and the decomposition.
func (b boundResult) all() []boundVariant {
	return append(b.requested(), boundVariant{"truth-fitted site prior without the page's own truth (leave-one-out)", b.loo},
		boundVariant{"the truth's mean, the observed year's spread", b.truthMean},
		boundVariant{"the observed year's mean, the truth's spread", b.truthSpread},
		boundVariant{fmt.Sprintf("truth-fitted site prior floored at pooled's CV %s", pct(pooledMinCV())), b.pooledFloor})
}

// lowest is the variant of vs with the lowest ratio (< 5 changes).
func lowest(vs []boundVariant) boundVariant {
	best := vs[0]
	for _, v := range vs[1:] {
		if ratio0(v.s) < ratio0(best.s) {
			best = v
		}
	}
	return best
}

// boundRow is one table row: the median |log| by group, the ratios to the
// best single paper estimator (< 5 changes: with its 90 % bootstrap over
// the sites) and the coverages.
func boundRow(name string, s *pooledScore, seed uint64) []string {
	row := []string{name}
	for g := range pooledGroups {
		row = append(row, f3(quantile(s.errs[g]["pooled"], 0.5)))
	}
	k0, _ := s.bestSingle(0)
	k1, _ := s.bestSingle(1)
	return append(row, f3(ratio0(s))+" "+bootString(s, seed)+" ("+k0+")", f3(ratio1(s))+" ("+k1+")",
		pct(s.coverage(0))+" / "+pct(s.coverage(1)), pct(s.predCoverage(0))+" / "+pct(s.predCoverage(1)))
}

// deployable is a candidate estimator (no truth used) and its ratio.
type deployable struct {
	name  string
	ratio float64
}

// boundSection writes the oracle bound on the php/doc-en pooled protocol
// pr and on the time-split test split (hierPHP, half 2; kept in e for the
// pooledtime section) and gives its verdict. php, orc are the section's
// published pooled and oracleLevel scores on pr, cands its deployable
// candidates on pr.
func boundSection(e *Env, pages map[string][]float64, cfg *estimators.Config, pr phpProtocol, php, orc *pooledScore, cands []deployable) boundResult {
	r := e.R
	main := oracleBound(phpObjSets(e, pages, cfg, pr), cfg)
	testPR := hierPHP
	testPR.half = 2
	testSets := phpObjSets(e, pages, cfg, testPR)
	test := oracleBound(testSets, cfg)
	testBase := hierScore(testSets, cfg, hierHist, 0)
	e.boundTest = &test

	r.P("**Oracle bound: can any site prior combined with the object's likelihood meet the target?** Priors fitted on the truth (each a bound, "+
		"never an estimator), combined with each page's observed-year likelihood by the published posterior (`Change.PooledEstimate`): the **truth-fitted site "+
		"prior**, a gamma fitted by moments on the directory's (and start's) selected pages' truth rates k/T, its variance net of the truths' own Poisson "+
		"noise (var(k/T) − mean(k/T)/T, floored at CV %s; %d of %d directories × starts took the floor), scored by the posterior median as `pooled` publishes; "+
		"the **truth-fitted global prior**, one such prior over all directories' selected pages of the start; and the site prior's **best posterior "+
		"quantile** q ∈ {0.05, 0.10, …, 0.95} as the point (chosen on the same pages, so optimistic). Then a decomposition of the site prior: its mean alone "+
		"(the observed-year prior's shape with the truth's mean), its spread alone (the truth-fitted shape with the observed-year prior's mean), and the site "+
		"prior with the published prior's floor. Same pages, comparator (the best single paper estimator of each column) and coverages as the table above; "+
		"the ratio's 90 %% bootstrap over the sites (directory × start) in brackets. The time-split rows are the pooledtime section's php test split "+
		"(selection %s, truth %s, the directories of half 2), its deployable row hist with w = 0 (the observed year alone).",
		pct(truthMinCV), main.floored, main.sites, winsString(hierPHP.sel), winsString(hierPHP.tru))
	rows := [][]string{
		boundRow("published pooled (observed-year prior; deployable)", php, e.Seed),
		boundRow("oracleLevel (observed-year prior, mean moved by the truth level)", orc, e.Seed),
	}
	for _, v := range main.all() {
		rows = append(rows, boundRow(v.name, v.s, e.Seed))
	}
	rows = append(rows, boundRow("time split (test): published pooled (hist, w = 0)", testBase, e.Seed))
	for _, v := range test.requested() {
		rows = append(rows, boundRow("time split (test): "+v.name, v.s, e.Seed))
	}
	hdr := []string{"prior (cells: median |log(estimate/truth)|)"}
	for g, grp := range pooledGroups {
		hdr = append(hdr, fmt.Sprintf("%s (%d; time split %d)", grp.name, main.site.n[g], test.site.n[g]))
	}
	r.Table(append(hdr, "ratio < 5 [bootstrap] (best single)", "ratio ≥ 5 (best single)", "coverage of the truth < 5 / ≥ 5", "predictive coverage < 5 / ≥ 5"), rows)

	lo, tlo := lowest(main.all()), lowest(test.requested())
	best := deployable{"none", math.Inf(1)}
	for _, c := range cands {
		if c.ratio < best.ratio {
			best = c
		}
	}
	checks := []check{
		atMost(fmt.Sprintf("lowest oracle ratio, < 5 changes (%s)", lo.name), ratio0(lo.s), 0.85,
			"the issue's target; above it, no estimator of the form site prior × object likelihood meets the target on this data and protocol"),
		atMost(fmt.Sprintf("time split (test): lowest oracle ratio, < 5 changes (%s)", tlo.name), ratio0(tlo.s), 0.85, "the same on the pooledtime section's test split"),
	}
	ours := fmt.Sprintf("lowest oracle ratio %s (%s), time split %s (%s); best deployable on the same pages %s (%s)",
		f3(ratio0(lo.s)), lo.name, f3(ratio0(tlo.s)), tlo.name, f3(best.ratio), best.name)
	r.P("%s", boundText(main, test, best, testBase, ratio0(lo.s), ratio0(tlo.s)))
	r.Verdict("Pooled, oracle bound (php/doc-en)", "issue 16 target reachable by a site prior × the object's likelihood", ours, checks,
		boundCause(ratio0(lo.s), ratio0(tlo.s)))
	return main
}

// boundText says, from the numbers, how far the deployable estimators are
// from the bound and what the bound knows that they do not.
func boundText(main, test boundResult, best deployable, testBase *pooledScore, low, tlow float64) string {
	q := func(xs []float64) string {
		return fmt.Sprintf("%s, %s, %s", f2(quantile(xs, 0.25)), f2(quantile(xs, 0.5)), f2(quantile(xs, 0.75)))
	}
	s := main.site
	k2, k3 := bestOfGroup(s, 2), bestOfGroup(s, 3)
	ownTruth := ", above the target: part of the bound is the page's own truth"
	if ratio0(main.loo) <= 0.85 {
		ownTruth = ", still below the target: the bound rests on the site's truth years, not on the page's own truth"
	}
	concentrated := ""
	if main.silentWideObs > main.silentWideTruth {
		concentrated = ": where the silent pages are, a directory's observed-year changes are concentrated on fewer of its pages than its truth years' are"
	}
	return fmt.Sprintf("The best deployable candidate on the same pages, %s, has ratio %s, %s above the lowest oracle ratio %s (time split: the observed year "+
		"alone %s, the oracle %s). Without the page's own truth in its site's prior (leave-one-out; %d pages kept the site prior) the bound is %s%s. What the bound knows that a prior fitted on the observed year does not: (1) the site's level: "+
		"log(truth-fitted mean / observed-year prior mean) has quartiles %s over directories × starts (time split %s); the truth's mean alone (the observed "+
		"year's shape) gives %s; (2) the spread of the site's pages in the truth years (CV quartiles of the observed-year fit %s, of the truth fit %s): "+
		"%d of the %d pages without a detected change are in a directory whose observed-year prior has a shape below 1 (CV > 1, where a silent page's "+
		"posterior median falls far below the prior's mean), %d under the truth-fitted prior%s. The truth's spread alone (the observed year's mean) gives %s, "+
		"both %s. With the truth-fitted site prior the pages without a detected change score %s (%s: %s), those with 1–4 "+
		"changes %s (%s: %s).",
		best.name, f3(best.ratio), f3(best.ratio-low), f3(low), f3(ratio0(testBase)), f3(tlow), main.looKept, f3(ratio0(main.loo)), ownTruth,
		q(main.shift), q(test.shift), f3(ratio0(main.truthMean)), q(main.cvObs), q(main.cvTruth),
		main.silentWideObs, main.silent, main.silentWideTruth, concentrated, f3(ratio0(main.truthSpread)), f3(ratio0(main.site)),
		f3(quantile(s.errs[2]["pooled"], 0.5)), k2, f3(quantile(s.errs[2][k2], 0.5)),
		f3(quantile(s.errs[3]["pooled"], 0.5)), k3, f3(quantile(s.errs[3][k3], 0.5)))
}

// boundVsCandidates compares the best candidate on the pooledtime
// section's php test split with the oracle bound on the same split (the
// pooled section's).
func boundVsCandidates(b *boundResult, bt bestTestScore) string {
	lo := lowest(b.requested())
	same := "the same pages"
	if b.site.n[0] != bt.n[0] {
		same = fmt.Sprintf("not the same pages: %d against %d with fewer than 5 changes", b.site.n[0], bt.n[0])
	}
	return fmt.Sprintf("Against the oracle bound on this test split (pooled section, %s): the lowest candidate ratio, %s (%s), is %s above the bound's %s (%s); "+
		"the truth-fitted site prior scored by its posterior median gives %s.", same, f3(ratio0(bt.pooledScore)), bt.name0,
		f3(ratio0(bt.pooledScore)-ratio0(lo.s)), f3(ratio0(lo.s)), lo.name, f3(ratio0(b.site)))
}

// boundCause explains a bound above the target ("" when below).
func boundCause(low, tlow float64) string {
	if low <= 0.85 && tlow <= 0.85 {
		return ""
	}
	return fmt.Sprintf("the oracle bound itself is above 0.85 (%s; time split %s): no estimator of the issue's form (site prior × object likelihood) can "+
		"meet the target on this data and protocol", f3(low), f3(tlow))
}

// ratioNB0 is ratio0 of the over-dispersed variant.
func ratioNB0(s *pooledScore) float64 {
	return quantile(s.errs[0]["pooled_nb"], 0.5) / secondOf(s.bestSingle(0))
}
