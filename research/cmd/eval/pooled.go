package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/research/pooled"
)

// singleKeys are the single paper estimators the pooled one is compared
// with: it must beat the best of them.
var singleKeys = []string{
	estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta, estimators.KeyCGMIrregularMLE,
	estimators.KeyCGMLastMod, estimators.KeyMalcolmLastMod, estimators.KeyMalcolmNoLastMod,
}

// pooledObj is one object of a site: its truth and what the estimators say.
type pooledObj struct {
	truth   float64
	changes int64
	single  map[string]estimators.Estimate
	best    estimators.Estimate
	bestOK  bool
	ev      estimators.Evidence
	evOK    bool
	ch      *estimators.Change
	scored  bool // scored (the truth is known); every object feeds the prior
	// priorAll: the object feeds a candidate prior of pooled_hier.go even
	// when not scored (allPages).
	priorAll bool
	// evA, evB are the evidence of the window's two halves (the
	// over-dispersed prior's moments, pooled_nb.go).
	evA, evB estimators.Evidence
	halvesOK bool
	lm       bool // crawled with Last-Modified (the Poisson form is exact)
	// f is the crawler's mean visit frequency (per second): r = truth/f
	// sorts the object into a regime (regimes, php.go).
	f float64
	// tcount, tspan: when the truth is a count (real pages), tcount
	// changes in truth windows of total length tspan (truth = tcount/tspan).
	tcount int
	tspan  float64
	// hist is the evidence of the years before the observed one (a site
	// prior over a longer history, phpProtocol.histYears).
	hist []estimators.Evidence
	// span, past are the evidence of longer windows crawled as one
	// (pooled_sib.go): span[h−1] the observed window and the h windows
	// before it, past[h−1] those h windows alone, laid end to end
	// (h = 1 … len(hist)).
	span, past []estimators.Evidence
	// ocount is the number of changes in the observed windows (real
	// pages: commits), what the crawler's evidence is a view of.
	ocount int
	ospan  float64 // the observed windows' length, seconds
	// group is the object's period (the php start's index): the sites of
	// one group share their calendar (the three-level prior's population).
	group int
}

// pooledGroups of objects by detected changes: the target group first.
var pooledGroups = []struct {
	name   string
	lo, hi int64
}{{"fewer than 5 changes", 0, estimators.PooledMaxChanges}, {"5 or more changes", estimators.PooledMaxChanges, math.MaxInt64}, {"0 changes", 0, 1}, {"1–4 changes", 1, estimators.PooledMaxChanges}}

// pooledScore is the comparison of one data set.
type pooledScore struct {
	n        [4]int
	errs     [4]map[string][]float64 // |log(est/true)|, ∞ when absent or 0
	cov, ciN [4]int
	// covNB, ciNNB: the over-dispersed (gamma-Poisson) variant's coverage.
	covNB, ciNNB [4]int
	// covNBLM, ciNBLM: the same over the objects crawled with Last-Modified
	// (whose likelihood is exactly of the Poisson form).
	covNBLM, ciNBLM [4]int
	// invK are the sites' fitted burst dispersions 1/k (0: Poisson).
	invK []float64
	// nbParts is how many dispersion windows the observed window spans
	// (2: fitted on its halves; 1: on the year before it).
	nbParts float64
	// nbWholePrior takes the over-dispersed variant's gamma prior from the
	// whole windows (PoolStats) and only K from the halves (experiment).
	nbWholePrior bool
	whole        *pooledScore // the same objects scored with nbWholePrior
	// shapes memoizes gammaFromQuantiles's shapes for this score's
	// goroutine.
	shapes shapeMemo
	// sumX, sumTE: Σ evidence count and Σ truth·exposure over the scored
	// objects (their ratio is the observed window's level against the
	// truth's: 1 when stationary).
	sumX, sumTE float64
	// sumXAll, sumTEAll: the same over every object with evidence, scored
	// or not (the level without the selection on the truth years).
	sumXAll, sumTEAll float64
	sites             int
	// priorScored fits each site's prior from its scored objects only.
	priorScored bool
	// spreads are the sites' standard deviations of log(truth) over their
	// scored objects.
	spreads []float64
	// regErrs, regCov, regCiN: the objects with fewer than
	// PooledMaxChanges changes by regime of r = truth/f (regimes).
	regErrs        []map[string][]float64
	regCov, regCiN []int
	// oracleLevel moves each site's prior mean by its scored objects'
	// truth level against their observed one (a diagnostic that uses the
	// truth, never an estimator): what the pooled estimate would be if the
	// site's observed window were as active as its truth windows.
	oracleLevel bool
	// histPrior adds the scored objects' earlier years (pooledObj.hist) to
	// the site's prior; the site is scored only when the observed window
	// alone already gives a prior (the same objects as without).
	histPrior bool
	// predCov, predN: the count truths inside the 95 % posterior
	// predictive interval of the count in the truth windows (randomized
	// PIT, exact 95 % under calibration); the check of the intervals'
	// calibration when the truth is itself a Poisson count.
	predCov, predN [4]int
	pit            *rand.Rand
	// siteLevels are log(Σ evidence count / Σ truth·exposure) of every
	// site (and start) over all its objects: how far a site's observed
	// window is from its truth as a whole (0 when stationary).
	siteLevels []float64
	// sumC, sumTC are Σ ocount and Σ truth·ospan over the objects of sumX:
	// log(sumC/sumTC) is the
	// observed windows' activity against the truth's, log(sumX/sumC) what
	// the crawl's evidence makes of that activity.
	sumC, sumTC float64
	// siteActLevels are log(Σ ocount / Σ truth·exposure) of every site over
	// all its objects (siteLevels' activity part).
	siteActLevels []float64
	// zeroTruth, zeroPrior, zeroPost: for the scored objects without a
	// detected change and a truth > 0, the truth, log(prior mean/truth)
	// and log(pooled estimate/truth).
	zeroTruth, zeroPrior, zeroPost []float64
	// zeroBB is bayes_beta's estimate of the same objects.
	zeroBB []float64
	// priorOf, when set, replaces the site's prior (a candidate of
	// pooled_hier.go); the site is scored only when its observed window
	// alone gives a prior too (the same objects for every candidate).
	priorOf func(objs []pooledObj) (estimators.GammaPrior, bool)
	// nbOf, when set, gives the site a prior of lasting rates with a
	// dispersion per observed window: the objects are scored with
	// pooled.NB (one window: k_w = K) and predictiveCoversNB.
	nbOf func(objs []pooledObj) (pooled.NBPrior, bool)
	// tau2Of, when set, is the site's period-to-period variance of log
	// level: the estimate is of the next period's rate, the posterior's
	// θ times e^η, η ~ N(0, τ²) (driftWiden).
	tau2Of func(objs []pooledObj) float64
	// objPrior, when set, replaces the site's prior for the object
	// objs[i] (the oracle bound's leave-one-out prior, pooled_bound.go).
	objPrior func(objs []pooledObj, i int, site estimators.GammaPrior) estimators.GammaPrior
	// pointQ, when in (0, 1) and not ½, scores the posterior's pointQ
	// quantile instead of its median (posteriorQuantile, or driftWiden's
	// mixture with the drift in the prediction; the interval is
	// the 95 % one): the oracle bound's scan of the point (pooled_bound.go).
	pointQ float64
	// site0 is the site index (0, 1, … in addSite order) of each object of
	// group 0, parallel to errs[0][k] (a bootstrap over sites).
	site0 []int
}

func newPooledScore() *pooledScore {
	s := &pooledScore{shapes: shapeMemo{}, nbParts: 2, pit: rand.New(rand.NewPCG(16, 4)), regCov: make([]int, len(regimes)), regCiN: make([]int, len(regimes))}
	for g := range s.errs {
		s.errs[g] = map[string][]float64{}
	}
	for range regimes {
		s.regErrs = append(s.regErrs, map[string][]float64{})
	}
	return s
}

// addSite fits the site's prior from every object's evidence and scores
// the objects with a known truth.
func (s *pooledScore) addSite(objs []pooledObj, cfg *estimators.Config) {
	var ps estimators.PoolStats
	var ds pooled.DispersionStats
	var sx, ste, sc, stc float64
	for _, o := range objs {
		if o.evOK && o.ev.Floor == 0 {
			sx += o.ev.X
			ste += o.truth * o.ev.E
		}
		if o.evOK {
			sc += float64(o.ocount)
			stc += o.truth * o.ospan
		}
		if o.evOK && (o.scored || !s.priorScored) {
			ps.Add(o.ev, 1)
			if o.halvesOK {
				ds.Add(o.evA, o.evB)
			}
		}
	}
	prior, ok := ps.Prior()
	if !ok {
		return
	}
	if s.priorOf != nil {
		if prior, ok = s.priorOf(objs); !ok {
			return
		}
	}
	tau2 := 0.0
	if s.tau2Of != nil {
		tau2 = s.tau2Of(objs)
	}
	var nbSite pooled.NBPrior
	if s.nbOf != nil {
		if nbSite, ok = s.nbOf(objs); !ok {
			return
		}
		prior = nbSite.GammaPrior
	}
	if s.histPrior {
		for _, o := range objs {
			if o.scored {
				for _, h := range o.hist {
					ps.Add(h, 1)
				}
			}
		}
		if prior, ok = ps.Prior(); !ok {
			return
		}
	}
	if s.oracleLevel {
		var ox, ote float64
		for _, o := range objs {
			if o.scored && o.evOK && o.ev.Floor == 0 {
				ox += o.ev.X
				ote += o.truth * o.ev.E
			}
		}
		if ox > 0 && ote > 0 {
			prior.Rate *= ox / ote // mean × truth level / observed level
		}
	}
	s.sumXAll += sx
	s.sumTEAll += ste
	if sx > 0 && ste > 0 {
		s.siteLevels = append(s.siteLevels, math.Log(sx/ste))
	}
	if sc > 0 && stc > 0 {
		s.siteActLevels = append(s.siteActLevels, math.Log(sc/stc))
	}
	nb, nbOK := ds.Prior()
	if s.nbWholePrior {
		nb.GammaPrior = prior
	}
	if nbOK {
		s.invK = append(s.invK, 1/nb.K)
	}
	s.sites++
	var lt moments
	for _, o := range objs {
		if o.scored && o.truth > 0 {
			lt.add(math.Log(o.truth))
		}
	}
	if lt.n >= 5 {
		s.spreads = append(s.spreads, lt.sd())
	}
	lerr := func(x estimators.Estimate, ok bool, truth float64) float64 {
		if !ok || !(x.Rate > 0) {
			return math.Inf(1)
		}
		return math.Abs(math.Log(x.Rate / truth))
	}
	sitePrior := prior
	for i, o := range objs {
		if !o.scored || !o.evOK {
			continue
		}
		prior := sitePrior
		if s.objPrior != nil {
			prior = s.objPrior(objs, i, sitePrior)
		}
		if o.ev.Floor == 0 {
			s.sumX += o.ev.X
			s.sumTE += o.truth * o.ev.E
			s.sumC += float64(o.ocount)
			s.sumTC += o.truth * o.ospan
		}
		p, pok := o.ch.PooledEstimate(prior, cfg)
		if s.nbOf != nil {
			p, pok = pooled.NB(nbSite, o.ev, 1, cfg)
		}
		post := p // the posterior of this period's rate (before the drift)
		if tau2 > 0 && pok {
			p, pok = driftWiden(p, tau2, s.pointQ, cfg, s.shapes)
		} else if pok && s.pointQ > 0 && s.pointQ < 1 && s.pointQ != 0.5 {
			p.Rate, pok = posteriorQuantile(o.ch, prior, s.pointQ, cfg)
		}
		if pok && o.changes == 0 && o.truth > 0 {
			s.zeroTruth = append(s.zeroTruth, o.truth)
			s.zeroPrior = append(s.zeroPrior, math.Log(prior.Shape/prior.Rate/o.truth))
			s.zeroPost = append(s.zeroPost, math.Log(p.Rate/o.truth))
			if bb, ok := o.single[estimators.KeyBayesBeta]; ok {
				s.zeroBB = append(s.zeroBB, bb.Rate)
			}
		}
		var pn estimators.Estimate
		pnok := false
		if nbOK && o.halvesOK {
			pn, pnok = pooled.NB(nb, o.ev, s.nbParts, cfg)
		}
		if o.changes < estimators.PooledMaxChanges && o.f > 0 {
			var ri [2]int
			for _, i := range regimeOf(o.truth/o.f, ri[:0]) {
				for _, k := range singleKeys {
					x, ok := o.single[k]
					s.regErrs[i][k] = append(s.regErrs[i][k], lerr(x, ok, o.truth))
				}
				s.regErrs[i]["pooled"] = append(s.regErrs[i]["pooled"], lerr(p, pok, o.truth))
				if pok {
					s.regCiN[i]++
					if p.Lo <= o.truth && o.truth <= p.Hi {
						s.regCov[i]++
					}
				}
			}
		}
		pred, predOK := false, false
		if o.tspan > 0 && pok && o.ev.Floor == 0 {
			if s.nbOf != nil || tau2 > 0 {
				k := math.Inf(1)
				if s.nbOf != nil {
					k = nbSite.K
				}
				pred, predOK = predictiveCoversNB(post, k, tau2, o.tcount, o.tspan, o.ospan, s.pit.Float64(), cfg, s.shapes)
			} else {
				pred, predOK = predictiveCovers(prior, o.ev, o.tcount, o.tspan, s.pit.Float64()), true
			}
		}
		for g, grp := range pooledGroups {
			if o.changes < grp.lo || o.changes >= grp.hi {
				continue
			}
			if predOK {
				s.predN[g]++
				if pred {
					s.predCov[g]++
				}
			}
			s.n[g]++
			for _, k := range singleKeys {
				x, ok := o.single[k]
				s.errs[g][k] = append(s.errs[g][k], lerr(x, ok, o.truth))
			}
			s.errs[g]["best"] = append(s.errs[g]["best"], lerr(o.best, o.bestOK, o.truth))
			s.errs[g]["pooled"] = append(s.errs[g]["pooled"], lerr(p, pok, o.truth))
			if g == 0 {
				s.site0 = append(s.site0, s.sites-1)
			}
			s.errs[g]["pooled_nb"] = append(s.errs[g]["pooled_nb"], lerr(pn, pnok, o.truth))
			if pnok {
				in := pn.Lo <= o.truth && o.truth <= pn.Hi
				s.ciNNB[g]++
				if in {
					s.covNB[g]++
				}
				if o.lm {
					s.ciNBLM[g]++
					if in {
						s.covNBLM[g]++
					}
				}
			}
			if pok {
				s.ciN[g]++
				if p.Lo <= o.truth && o.truth <= p.Hi {
					s.cov[g]++
				}
			}
		}
	}
}

// bestSingle is the single paper estimator with the lowest median error in
// group g.
func (s *pooledScore) bestSingle(g int) (string, float64) {
	bk, bv := "", math.Inf(1)
	for _, k := range singleKeys {
		if m := quantile(s.errs[g][k], 0.5); m < bv {
			bk, bv = k, m
		}
	}
	return bk, bv
}

// regimeTable writes, for the objects with fewer than PooledMaxChanges
// changes, the pooled estimate against the best single paper estimator of
// each regime of r = truth/f. The ✓ marks compare the ratio with the
// target's 0.85 and the coverage with 93–97 % widened by its sampling
// error (coverageBand); they are not part of the
// verdict (the target is stated over all objects with few changes).
func (s *pooledScore) regimeTable(r *Report, title string) {
	var rows [][]string
	for i, g := range regimes {
		n := len(s.regErrs[i]["pooled"])
		if n == 0 {
			rows = append(rows, []string{g.name, "0", "", "", "", "", ""})
			continue
		}
		bk, bv := "", math.Inf(1)
		for _, k := range singleKeys {
			if m := quantile(s.regErrs[i][k], 0.5); m < bv {
				bk, bv = k, m
			}
		}
		pm := quantile(s.regErrs[i]["pooled"], 0.5)
		ratio := pm / bv
		cov := float64(s.regCov[i]) / float64(max(1, s.regCiN[i]))
		cLo, cHi := coverageBand(s.regCiN[i])
		mark := func(ok bool) string {
			if ok {
				return " ✓"
			}
			return " ✗"
		}
		rows = append(rows, []string{g.name, fmt.Sprint(n), f3(pm), bk + " " + f3(bv),
			f3(ratio) + mark(ratio <= 0.85), pct(cov) + mark(s.regCiN[i] > 0 && cov >= cLo && cov <= cHi), fmt.Sprint(s.regCiN[i])})
	}
	r.P("%s", title)
	r.Table([]string{"regime (r = truth/f)", "objects (< 5 changes)", "pooled median |log|", "best single (median |log|)", "ratio (target ≤ 0.85)", "coverage (target 93–97 % ± 2·√(0.95·0.05/n))", "intervals (n)"}, rows)
}

// predictiveCovers says whether the count k in truth windows of length T
// lies inside the 95 % posterior predictive interval under the conjugate
// posterior Gamma(α + X, β + E) (exact for Poisson evidence, the matched
// approximation otherwise): the count is negative binomial with
// P(K ≤ k) = I_p(a, k + 1), p = b/(b + T). Discreteness is removed by the
// randomized PIT u = F(k−1) + v·(F(k) − F(k−1)), v uniform.
func predictiveCovers(prior estimators.GammaPrior, ev estimators.Evidence, k int, T, v float64) bool {
	a, b := prior.Shape+ev.X, prior.Rate+ev.E
	p := b / (b + T)
	cdf := func(k int) float64 {
		if k < 0 {
			return 0
		}
		return mathext.RegIncBeta(a, float64(k)+1, p)
	}
	lo, hi := cdf(k-1), cdf(k)
	u := lo + v*(hi-lo)
	return u >= 0.025 && u <= 0.975
}

// predCoverage is the share of count truths inside their predictive
// interval (NaN without count truths).
func (s *pooledScore) predCoverage(g int) float64 {
	if s.predN[g] == 0 {
		return math.NaN()
	}
	return float64(s.predCov[g]) / float64(s.predN[g])
}

func (s *pooledScore) coverage(g int) float64 {
	return float64(s.cov[g]) / float64(max(1, s.ciN[g]))
}

func (s *pooledScore) coverageNB(g int) float64 {
	return float64(s.covNB[g]) / float64(max(1, s.ciNNB[g]))
}

// observeObject runs a crawler over (start, end] of the change times ev and
// returns the object's estimates and evidence.
func observeObject(ev, vt []float64, lm bool, cfg *estimators.Config) pooledObj {
	obs := sim.Observe(ev, vt, lm, nil)
	var c estimators.Change
	for _, v := range obs {
		c.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed, LastModified: v.LastModified, HasLastModified: v.HasLastModified})
	}
	var out estimators.Estimates
	o := pooledObj{single: map[string]estimators.Estimate{}, changes: c.Changes()}
	o.best, o.bestOK = c.Estimate(obs[len(obs)-1].Time, cfg, &out)
	for i := 0; i < out.Len(); i++ {
		o.single[out.At(i).Key] = out.At(i)
	}
	o.ev, o.evOK = c.Evidence(cfg)
	o.ch = &c
	o.lm = lm
	// the two halves of the window, the second starting at the first's last
	// visit
	if len(vt) >= 7 {
		mid := (vt[0] + vt[len(vt)-1]) / 2
		m := sort.SearchFloat64s(vt, mid)
		if m >= 3 && len(vt)-m >= 2 {
			a, aok := halfEvidence(ev, vt[:m], lm, cfg)
			b, bok := halfEvidence(ev, vt[m-1:], lm, cfg)
			o.evA, o.evB, o.halvesOK = a, b, aok && bok
		}
	}
	return o
}

func halfEvidence(ev, vt []float64, lm bool, cfg *estimators.Config) (estimators.Evidence, bool) {
	var c estimators.Change
	for _, v := range sim.Observe(ev, vt, lm, nil) {
		c.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed, LastModified: v.LastModified, HasLastModified: v.HasLastModified})
	}
	return c.Evidence(cfg)
}

// pooledTable writes one data set's comparison and returns the target
// checks: ≥ 15 % lower median error than the best single paper estimator
// with fewer than 5 changes, no worse with more, coverage 93–97 %.
func pooledTable(e *Env, title string, s *pooledScore) []check {
	r := e.R
	hdr := []string{"estimator"}
	for g, grp := range pooledGroups {
		hdr = append(hdr, fmt.Sprintf("%s (%d)", grp.name, s.n[g]))
	}
	var rows [][]string
	for _, k := range append(append([]string(nil), singleKeys...), "best", "pooled", "pooled_nb") {
		name := k
		switch k {
		case "best":
			name = "best (the package's rule)"
		case "pooled":
			name = "**pooled**"
		case "pooled_nb":
			name = "**pooled, over-dispersed** (gamma-Poisson bursts)"
		}
		row := []string{name}
		for g := range pooledGroups {
			cell := f3(quantile(s.errs[g][k], 0.5))
			if k == "pooled" {
				cell += " (" + pct(s.coverage(g)) + ")"
			}
			if k == "pooled_nb" {
				cell += " (" + pct(s.coverageNB(g)) + ")"
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	counts := s.predN[0]+s.predN[1] > 0
	if counts {
		row := []string{"pooled: truth count inside its 95 % posterior predictive interval"}
		for g := range pooledGroups {
			row = append(row, pct(s.predCoverage(g)))
		}
		rows = append(rows, row)
	}
	r.P("%s: %d sites. Cells: median |log(estimate/truth)| (∞: absent or 0); for pooled, the 95 %% credible interval's coverage of the truth in parentheses.", title, s.sites)
	r.Table(hdr, rows)
	return pooledChecks(s)
}

// pooledChecks are the target checks of one data set's pooled scores:
// ≥ 15 % lower median error than the best single paper estimator with
// fewer than 5 changes, no worse with more, coverage 93–97 % (of the truth
// count by the predictive interval when the truth is a count).
func pooledChecks(s *pooledScore) []check {
	counts := s.predN[0]+s.predN[1] > 0
	k0, b0 := s.bestSingle(0)
	k1, b1 := s.bestSingle(1)
	p0, p1 := quantile(s.errs[0]["pooled"], 0.5), quantile(s.errs[1]["pooled"], 0.5)
	checks := []check{
		atMost(fmt.Sprintf("pooled / best single (%s), < 5 changes", k0), p0/b0, 0.85, "the target: ≥ 15 % lower median |log|"),
		atMost(fmt.Sprintf("pooled / best single (%s), ≥ 5 changes", k1), p1/b1, 1.02, "no worse: within the 2 % sampling error of a median"),
	}
	if !counts {
		return append(checks,
			coverageCheck("coverage of the 95 % intervals, < 5 changes", s.coverage(0), s.ciN[0], "the target 93–97 %"),
			coverageCheck("coverage of the 95 % intervals, ≥ 5 changes", s.coverage(1), s.ciN[1], "the target 93–97 %"))
	}
	// A count truth k/T scatters around λ by its own Poisson noise, so a
	// calibrated interval for λ covers it less than 95 % of the time; the
	// observable form of the target is the predictive interval of k.
	return append(checks,
		coverageCheck("truth counts inside the 95 % predictive intervals, < 5 changes", s.predCoverage(0), s.predN[0], "the target 93–97 %, for a count truth"),
		coverageCheck("truth counts inside the 95 % predictive intervals, ≥ 5 changes", s.predCoverage(1), s.predN[1], "the target 93–97 %, for a count truth"))
}

func pooledSection(e *Env) {
	r := e.R
	cfg := newEstConfig()
	r.H(2, "Beyond the papers: pooled (empirical-Bayes) estimates")
	r.P("`estimators.Pooled` (key `pooled`): each object's data is summarised by an effective Poisson count and exposure (exact with Last-Modified; " +
		"matched at the maximum of CGM's App. C likelihood otherwise), a Gamma(α, β) prior for λ is fitted per site by moments from its objects' " +
		"O(1) sums (`estimators.PoolStats`), and the object's estimate is the median of its Gamma(α + x, β + e) posterior with the equal-tailed 95 %% " +
		"credible interval. Compared with every single paper estimator of the same objects, grouped by the number of changes the crawler detected; " +
		"the target (issue 16) is a median |log(estimate/truth)| at least 15 %% below the best single paper estimator's with fewer than 5 changes, " +
		"no worse with more, and 93–97 %% coverage.")

	// ---- simulated sites
	const day = 86400.0
	r.H(3, "Simulated sites")
	nSites := e.reps(300, 60)
	sim1 := simSites(e, cfg, nSites, 0.3, 1.2, 1600000)
	checks := pooledTable(e, fmt.Sprintf("%d simulated sites of 30–200 objects: a site median rate between once in 120 days and twice a day, a log-normal spread "+
		"σ ∈ [0.3, 1.2] within the site (not the gamma family of the prior), Poisson changes, 30–90 days observed by one crawler per site (daily, weekly or "+
		"Poisson mean 3 days; with Last-Modified on half the sites); the truth is each object's λ", nSites), sim1)
	sim1.regimeTable(r, "By regime of r = λ/f (f the site crawler's mean visit frequency), objects with fewer than 5 changes:")
	r.Verdict("Pooled (simulated sites)", "issue 16 target", pooledOurs(sim1), checks, "")
	r.Verdict("Pooled, over-dispersed (simulated sites)", "issue 16 target", pooledNBOurs(sim1), pooledNBChecks(sim1), pooledNBSimCause(sim1, sim1.whole))
	e.pooledSim = sim1

	// ---- php/doc-en
	r.H(3, "php/doc-en: one site per manual directory")
	pages := e.phpPages
	if pages == nil {
		r.P("Skipped: no php/doc-en data.")
		return
	}
	pr := phpHonest
	php := phpPooled(e, pages, cfg, pr)
	checks = pooledTable(e, fmt.Sprintf("php/doc-en: sites are the manual's directories (the first two path components, e.g. reference/strings) with at least 20 pages; "+
		"for starts every 18 months, every page whose history spans the windows below is crawled weekly over the observed year (start, start+1 y] without "+
		"Last-Modified. Three disjoint windows: a page is **selected** by CGM §6.3's rule (at least 3 changes, fewer than one per 3 days) in %s; its **truth** is its "+
		"change rate in %s; the estimators see the observed year only. A site's prior is fitted on its selected pages' observed years (no truth used). "+
		"A truth of 0 (no change in the truth years) is an error of ∞ for every estimator and a miss for every interval", winsString(pr.sel), winsString(pr.tru)), php)
	php.regimeTable(r, "By regime of r = truth/f (weekly crawler), objects with fewer than 5 changes:")

	// Cause experiments.
	old := phpPooled(e, pages, cfg, phpSelectOnTruth)
	ctl := phpPooled(e, pages, cfg, phpProtocol{sel: pr.sel, tru: pr.tru, control: true})
	one := phpPooled(e, pages, cfg, phpProtocol{sel: pr.sel, tru: pr.tru, oneSite: true})
	all := phpPooled(e, pages, cfg, phpProtocol{sel: pr.sel, tru: pr.tru, priorAll: true})
	ctlCount := phpPooled(e, pages, cfg, phpProtocol{sel: pr.sel, tru: pr.tru, control: true, countTruth: true})
	orc := phpPooled(e, pages, cfg, phpProtocol{sel: pr.sel, tru: pr.tru, oracleLevel: true})
	hp := phpProtocol{sel: []yearWin{{-6, -5}, {3, 4}}, tru: []yearWin{{-5, -3}, {1, 3}}}
	histNo := phpPooled(e, pages, cfg, hp)
	hp.histYears = 3
	histYes := phpPooled(e, pages, cfg, hp)
	bk, bv := old.bestSingle(0)
	r.P("**Cause 1: the former protocol selected pages on their truth.** Selecting and judging on the same window, %s (at least 3 changes there, so every "+
		"truth is at least 0.75 a year), gives: %s. The selection picks pages whose truth count came out high, so their observed year reads low against it "+
		"(regression to the mean): the selected pages' observed-year evidence counts %.2f of what their truth predicts, the pages left out %.2f, all pages %.2f "+
		"(under the disjoint protocol: %.2f selected, %.2f all). `%s`'s estimate for a page without a change is one value near that floor of the truth, so %s of "+
		"its errors there are the same %s: the former comparison rewarded sitting at the selection's floor. No estimator is changed by the protocol; the "+
		"ratio of pooled to the best single estimator goes from %s to %s.",
		winsString(phpSelectOnTruth.tru), pooledOurs(old), old.level(), old.levelUnscored(), old.levelAll(), php.level(), php.levelAll(),
		bk, pct(atomShare(old.errs[0][bk])), f3(bv),
		f3(quantile(old.errs[0]["pooled"], 0.5)/bv), f3(quantile(php.errs[0]["pooled"], 0.5)/secondOf(php.bestSingle(0))))
	r.P("**Cause 2: a directory's changes come in campaigns shared by its pages.** A site's observed year against its truth years, over all its pages: "+
		"log(Σ evidence / Σ truth·exposure) has quartiles %s, %s, %s over directories (0 when stationary), %s, %s, %s for the whole manual. The prior is fitted on "+
		"the same year as the estimate, so it carries the site's shift to every page: the pooled estimate of a page without a change is the site's "+
		"level shrunk, and a quiet year for the directory reads low for all of them at once. Experiments (same selection and truth): the stationary control "+
		"(every selected page replaced by a Poisson process at its truth rate, same crawler and prior) gives %s, and judged by its simulated count in the truth "+
		"windows, as the real pages are, %s (a count truth scatters around the rate by its own Poisson noise, so even calibrated intervals for λ cover it "+
		"less often: the predictive interval of the count is the calibration check there); the whole manual as one site (the aggregator "+
		"pools by host, and php.net's manual is one host) gives %s; a directory's prior fitted on all its pages (not only the selected ones, as the aggregator would) "+
		"gives %s. Diagnostic (uses the truth, not an estimator): with each directory's prior mean moved by its selected pages' truth level against their "+
		"observed one, the pooled estimate gives %s.",
		f2(quantile(php.siteLevels, 0.25)), f2(quantile(php.siteLevels, 0.5)), f2(quantile(php.siteLevels, 0.75)),
		f2(quantile(one.siteLevels, 0.25)), f2(quantile(one.siteLevels, 0.5)), f2(quantile(one.siteLevels, 0.75)),
		pooledOurs(ctl), pooledOurs(ctlCount), pooledOurs(one), pooledOurs(all), pooledOurs(orc))
	bound := boundSection(e, pages, cfg, pr, php, orc, []deployable{{"pooled", ratio0(php)}, {"pooled, over-dispersed", ratioNB0(php)},
		{"pooled, the whole manual one site", ratio0(one)}, {"pooled, every page in the prior", ratio0(all)}})
	r.P("**A longer site history (lead, not the published protocol).** An aggregator running for years has seen a site's earlier years. Selection in %s, "+
		"truth in %s, the same pages scored: with each directory's prior fitted on the observed year only, %s; on the observed year and the 3 years before "+
		"it (each page-year one object of the site's moments), %s.", winsString(hp.sel), winsString(hp.tru), pooledOurs(histNo), pooledOurs(histYes))
	r.Verdict("Pooled (php/doc-en)", "issue 16 target", pooledOurs(php), checks, pooledPHPCause(php, ctlCount, one, orc, bound.site))
	ybp := phpProtocol{sel: []yearWin{{-4, -3}, {3, 4}}, tru: []yearWin{{-3, -1}, {1, 3}}, before: true}
	yb := phpPooled(e, pages, cfg, ybp)
	ybp.days = true
	ybd := phpPooled(e, pages, cfg, ybp)
	r.P("Truth in change days (several commits in one UTC day count once, the granularity of CGM §6.3's daily history; year-before protocol below): "+
		"pooled %s; over-dispersed: %s.", pooledOurs(ybd), pooledNBOurs(ybd))
	r.P("Over-dispersed variant (`research/pooled.NB`, bursts as a gamma-Poisson layer with its dispersion fitted per site from the observed windows): "+
		"with the dispersion fitted on the two halves of the observed year (protocol above): %s. With the dispersion fitted on the year before and the observed year "+
		"(selection in %s, truth in %s, disjoint from both years): %s.",
		pooledNBOurs(php), winsString(ybp.sel), winsString(ybp.tru), pooledNBOurs(yb))
	r.Verdict("Pooled, over-dispersed (php/doc-en)", "issue 16 target", pooledNBOurs(yb), pooledNBChecks(yb), pooledNBCause(yb, ctl))
	e.pooledPHP = php
	shiftSection(e, runShiftStudy(e, pages), php, phpPooled(e, pages, cfg, phpMonths), phpPooled(e, pages, cfg, shortTruth))
}

// pooledPHPCause names, from the numbers, why the pooled estimate misses
// its target on php/doc-en: on the same pages made stationary and judged
// the same way (count truth, ctl) it meets the median target with
// calibrated predictive intervals, and the sites' observed levels are off
// their truth levels by more than the control's; orc is the diagnostic
// with each site's level moved to its truth level, bound the oracle
// bound's truth-fitted site prior (level and spread from the truth years).
func pooledPHPCause(php, ctl, one, orc, bound *pooledScore) string {
	ratio := func(s *pooledScore) float64 { return quantile(s.errs[0]["pooled"], 0.5) / secondOf(s.bestSingle(0)) }
	if ratio(ctl) > 0.85 || ratio(orc) >= ratio(php) {
		return ""
	}
	// The rest: the count truth's noise and zeros weigh on every
	// estimator, unless the oracle bound, judged on the same truths,
	// meets the target once the prior's spread is the truth years' too.
	rest := " (the count truth's own noise and zeros weigh on every estimator)"
	if ratio(bound) <= 0.85 {
		rest = fmt.Sprintf(": with the prior's spread fitted on the truth years as well (the oracle bound's truth-fitted site prior, judged on the same "+
			"count truths and zeros) the ratio is %s, so the rest is the spread of the directory's pages, which its observed year misreads", f3(ratio(bound)))
	}
	return fmt.Sprintf("the sites' shared shifts between the observed year and the truth years. On the same pages made stationary and judged by a count "+
		"truth the pooled estimate is %s of the best single estimator's median error, with %s of the truth counts inside their predictive intervals; "+
		"on the real histories a directory's observed year differs from its truth years by a factor e^%s to e^%s (quartiles of the site level; "+
		"stationary: e^%s to e^%s), which the prior, fitted on the observed year, passes to every page of the site. Moving each site's prior to its truth "+
		"level (a diagnostic using the truth) brings the ratio from %s to %s; pooling the whole manual as one site narrows the spread (e^%s to e^%s) and "+
		"gives %s. After the diagnostic the ratio is still above the target's 0.85, so the shared shift is the main cause, not the only one%s. (The "+
		"aggregator publishes the posterior mean under a stored site prior: aggregate/siteprior.go.)",
		f3(ratio(ctl)), pct(ctl.predCoverage(0)), f2(quantile(php.siteLevels, 0.25)), f2(quantile(php.siteLevels, 0.75)),
		f2(quantile(ctl.siteLevels, 0.25)), f2(quantile(ctl.siteLevels, 0.75)), f3(ratio(php)), f3(ratio(orc)),
		f2(quantile(one.siteLevels, 0.25)), f2(quantile(one.siteLevels, 0.75)), f3(ratio(one)), rest)
}

func secondOf(_ string, v float64) float64 { return v }

func pooledOurs(s *pooledScore) string {
	k0, b0 := s.bestSingle(0)
	p0 := quantile(s.errs[0]["pooled"], 0.5)
	k1, b1 := s.bestSingle(1)
	p1 := quantile(s.errs[1]["pooled"], 0.5)
	out := fmt.Sprintf("< 5 changes: pooled %s vs %s %s (ratio %s); ≥ 5: pooled %s vs %s %s; coverage of the truth %s / %s",
		f3(p0), k0, f3(b0), f3(p0/b0), f3(p1), k1, f3(b1), pct(s.coverage(0)), pct(s.coverage(1)))
	if s.predN[0]+s.predN[1] > 0 {
		out += fmt.Sprintf(", of the truth count by the predictive interval %s / %s", pct(s.predCoverage(0)), pct(s.predCoverage(1)))
	}
	return out
}

// simSites simulates nSites sites with a within-site log-normal spread σ
// uniform in [sLo, sHi] and scores them.
func simSites(e *Env, cfg *estimators.Config, nSites int, sLo, sHi float64, stream uint64) *pooledScore {
	s := newPooledScore()
	s.whole = newPooledScore()
	s.whole.nbWholePrior = true
	for _, objs := range simSiteObjs(e, cfg, nSites, sLo, sHi, stream, 0) {
		s.addSite(objs, cfg)
		s.whole.addSite(objs, cfg)
	}
	return s
}

// simSiteObjs simulates the sites of simSites; with hist > 0 each object
// also gets the evidence of hist earlier windows of the window's length
// (pooledObj.hist, a stationary history: independent windows of the same
// Poisson process, drawn from a stream of their own so that the observed
// windows are those of hist = 0).
func simSiteObjs(e *Env, cfg *estimators.Config, nSites int, sLo, sHi float64, stream uint64, hist int) [][]pooledObj {
	const day = 86400.0
	res := make([][]pooledObj, nSites)
	parallel(nSites, e.Procs, func(si int) {
		rng := sim.NewRand(e.Seed, stream+uint64(si))
		// Site: a median rate log-uniform between once in 120 days and
		// twice a day, a within-site log-normal spread (not gamma: the
		// prior family is misspecified on purpose), one crawler.
		med := math.Exp(math.Log(1.0/120)+rng.Float64()*(math.Log(2)-math.Log(1.0/120))) / day
		spread := sLo + (sHi-sLo)*rng.Float64()
		nObj := 30 + rng.IntN(170)
		var sched sim.Schedule
		var f float64
		switch rng.IntN(3) {
		case 0:
			sched, f = sim.Regular{Interval: day}, 1/day
		case 1:
			sched, f = sim.Regular{Interval: 7 * day}, 1/(7*day)
		default:
			sched, f = sim.PoissonVisits{Rate: 1 / (3 * day)}, 1/(3*day)
		}
		lm := rng.IntN(2) == 0
		D := (30 + 60*rng.Float64()) * day
		for i := 0; i < nObj; i++ {
			lam := med * math.Exp(spread*rng.NormFloat64())
			ev := sim.Poisson{Rate: lam}.Events(rng, D+1, nil)
			vt := sched.Times(rng, 0, D, nil)
			if len(vt) < 3 {
				continue
			}
			o := observeObject(ev, vt, lm, cfg)
			o.truth, o.scored, o.f = lam, true, f
			evs, vts := [][]float64{ev}, [][]float64{vt}
			for h := 0; h < hist; h++ {
				hr := sim.NewRand(e.Seed, stream+uint64(si)<<20+uint64(i)<<4+uint64(h)+1<<40)
				hev := sim.Poisson{Rate: lam}.Events(hr, D+1, nil)
				hvt := sched.Times(hr, 0, D, nil)
				var hx estimators.Evidence
				if len(hvt) >= 3 {
					hx, _ = halfEvidence(hev, hvt, lm, cfg)
				}
				o.hist = append(o.hist, hx)
				evs, vts = append(evs, hev), append(vts, hvt)
			}
			simSpans(&o, evs, vts, D, lm, cfg)
			res[si] = append(res[si], o)
		}
	})
	return res
}
