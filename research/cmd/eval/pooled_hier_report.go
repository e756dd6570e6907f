package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/changerate/changerate/estimators"
)

// Site priors over time: the section "pooledtime" — the candidates'
// table, the comparisons and the verdict (pooled_hier_select.go scores
// them).

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
			"for any estimator (k/%d is never in its band)", n, n))
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
	sibs, search := sibCandidates(cfg, data)
	rs = append(rs, sibs...)
	r.P("Extensions of the site prior (`research/pooled/hier.go`), each O(1) per site: **hist** fits the gamma prior on the site's "+
		"observed period and the %d periods before it with exponentially decayed sums (weight w^h for the period h back, `PoolStats.Decay`); **drift** "+
		"inflates hist's prior by the site's period-to-period variance of log level τ² (a log random walk: eq. H1–H2, τ² from the site's own consecutive "+
		"periods, net of their Poisson noise), so a shifting site's prior is wider; **three-level** shrinks hist's prior mean towards the level of all sites of "+
		"the same periods (eq. H3), by the site level's uncertainty (Poisson noise and the periods' deviations, τ²/2 each) against the sites' spread of "+
		"long-run levels; **persistent** separates a page's lasting rate from its period's bursts (the gamma-Poisson layer of `pooled_nb`): the prior is "+
		"one of lasting rates, with hist's mean (or three-level's) and the spread of hist's whole periods net of the bursts (eq. H4), the bursts' "+
		"dispersion per period pooled over the sites of one calendar from the cross-covariance of consecutive periods of the same pages (eq. H5), and the "+
		"page's count is negative binomial around it (`research/pooled.NB`); **+ drift in the prediction** keeps a candidate's posterior of this "+
		"period's rate θ and estimates the next period's, θ·e^η with η ~ N(0, τ²) (the site's τ² of eq. H1): the drift widens the prediction, not the "+
		"prior (its median and interval are the mixture's; the predictive check mixes over η too). The one hyper-parameter, w ∈ {%s}, is chosen on a "+
		"**training split** only: php/doc-en directories of one half of a fixed hash split (`phpHalf`), and simulated sites of another random stream; the "+
		"rule is the w whose worse data set (the larger ratio, < 5 changes) is lowest (+ drift variants use their base's w), and the verdict is given for "+
		"the candidate whose chosen w fails the fewest of the target's checks on the training sets, then has the lowest such training value (a rule set "+
		"in the third round; before it, the lowest training value alone). Every candidate is then reported on the **test split**: the other half of the "+
		"directories, and the simulated sites of the section above (stationary; each object gets %d earlier windows of the same process). The last column "+
		"swaps the halves (w chosen on the test half, scored on the training half): how much a ratio moves with the half it is measured on. Caveat: the "+
		"candidates were designed in three rounds; persistent and the drift in the prediction were added after the first round's test numbers "+
		"(hist, drift, three-level) were seen, and persistent's spread (eq. H4–H5, replacing the site's own cross-covariance of consecutive periods) "+
		"after the second round's (its simulated coverage with 5 or more changes failed), so the test split is not untouched for them (their "+
		"hyper-parameter is still chosen on the training split). "+
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
		if x.sib != nil {
			tr = []string{"chosen: " + f3(ratio0(x.trainPHP[0])) + " / " + f3(ratio0(x.trainSim[0]))}
		}
		rows = append(rows, []string{x.name, strings.Join(tr, "; "), x.param(),
			f3(ratio0(x.testSim)), f3(ratio1(x.testSim)), pct(hierCoverage(x.testSim, 0)) + " / " + pct(hierCoverage(x.testSim, 1)),
			f3(ratio0(x.testPHP)) + " " + bootString(x.testPHP, e.Seed), f3(ratio1(x.testPHP)), pct(hierCoverage(x.testPHP, 0)) + " / " + pct(hierCoverage(x.testPHP, 1)),
			groupVs(x.testPHP, 2), groupVs(x.testPHP, 3), yesNo(x.meets()),
			fmt.Sprintf("%s: %s (%s)", x.swapParam(), f3(ratio0(x.swapPHP)), pct(hierCoverage(x.swapPHP, 0)))})
	}
	r.Table([]string{"candidate", "train: ratio (< 5 changes) php / simulated, by w", "chosen (w, or sib's variant)",
		"test simulated: ratio < 5 (≤ 0.85)", "ratio ≥ 5 (≤ 1.02)", "coverage < 5 / ≥ 5 (93–97 % ± 2·√(0.95·0.05/n))",
		"test php: ratio < 5 (≤ 0.85) [90 % bootstrap over the sites, directory × start]", "ratio ≥ 5 (≤ 1.02)", "predictive coverage < 5 / ≥ 5 (93–97 % ± 2·√(0.95·0.05/n))",
		"test php, 0 changes: pooled vs best single", "test php, 1–4 changes", "meets the target on both",
		"halves swapped: chosen, php ratio < 5 (predictive coverage)"}, rows)
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
	sibText(e, cfg, rs, search, data)
	b.testPHP.regimeTable(r, fmt.Sprintf("Test php split, %s (%s), by regime of r = truth/f (weekly crawler), objects with fewer than 5 changes:", b.name, b.param()))
	b.testSim.regimeTable(r, fmt.Sprintf("Test simulated sites, %s (%s), by regime of r = λ/f, objects with fewer than 5 changes:", b.name, b.param()))
	var checks []check
	for _, c := range b.simCheck {
		c.name = "simulated: " + c.name
		checks = append(checks, c)
	}
	for _, c := range b.phpChecks {
		c.name = "php/doc-en: " + c.name
		checks = append(checks, c)
	}
	robust := robustChecks(b, data)
	checks = append(checks, robust...)
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
			"passes for: %s; not for: %s. On php/doc-en the lowest ratio (< 5 changes) is %s %s (%s, predictive coverage %s), against %s for the observed "+
			"year alone on the same test pages (hist, w = 0); the target is 0.85. The published `pooled` estimator is unchanged.",
			orNone(simOK), orNone(simNot), f3(ratio0(bt.pooledScore)), bootString(bt.pooledScore, e.Seed), bt.name0, pct(hierCoverage(bt.pooledScore, 0)), f3(ratio0(base)))
	} else {
		r.P("**Outcome.** Meeting the target on both test sets: %s.", strings.Join(met, ", "))
	}
	if e.boundTest != nil {
		r.P("%s", boundVsCandidates(e.boundTest, bt))
	}
	r.Verdict(fmt.Sprintf("Pooled, site prior over time (%s; %s chosen on the training split; test split)", b.name, b.param()), "issue 16 target on both data sets",
		fmt.Sprintf("simulated: %s; php/doc-en: %s", pooledOurs(b.testSim), pooledOurs(b.testPHP)), checks, joinCause(hierCause(b), robustCause(b, robust)))
	return rs
}

// robustChecks are the verdict's checks beyond the issue's own, which a
// small test split and a tuned point estimate need: the target on the
// other php/doc-en half (the variant chosen on the test half, scored on the
// training half), and on both data sets against the best single paper
// estimator given the same freedom as the candidate's point quantile (a
// constant factor chosen on the training split, calibrate).
func robustChecks(b hierResult, d hierData) []check {
	cPHP, rPHP := calibratedVs(b.testPHP, d.phpTrain, d.phpTest)
	cSim, rSim := calibratedVs(b.testSim, d.simTrain, d.simTest)
	const why = "the target's 15 %, against a comparator given the candidate's freedom: each single paper estimator times the factor " +
		"that minimises its median |log| on the training split, where the candidate's hyper-parameters (its point quantile among them) are chosen"
	return []check{
		atMost("php/doc-en, halves swapped: the variant chosen on the test half, scored on the training half, ratio < 5 changes", ratio0(b.swapPHP), 0.85,
			"the target on the other half too: a test half of a few hundred pages moves the ratio by about ±0.4 (its bootstrap interval)"),
		atMost("simulated: pooled / best calibrated single ("+cSim.key+"), < 5 changes", rSim, 0.85, why),
		atMost("php/doc-en: pooled / best calibrated single ("+cPHP.key+"), < 5 changes", rPHP, 0.85, why),
	}
}

// robustCause explains failed robustness checks (robustChecks) when the
// issue's own checks pass: the gain then belongs to the half or to the
// point's calibration, not to the pooling.
func robustCause(b hierResult, robust []check) string {
	var failed []string
	for _, c := range robust {
		if !c.ok() {
			failed = append(failed, fmt.Sprintf("%s is %s", c.name, g4(c.ours)))
		}
	}
	if len(failed) == 0 || !b.meets() {
		return ""
	}
	return "the issue's own checks pass on the test split, the robustness checks do not (" + strings.Join(failed, "; ") + "): on php/doc-en the " +
		"candidate's gain is the training split's calibration of its point (which a single paper estimator, scaled the same way, gets as well) and " +
		"the half it is measured on, not the pooling, so the pooled estimate is not published"
}

// joinCause joins the non-empty causes with "; ".
func joinCause(cs ...string) string {
	var out []string
	for _, c := range cs {
		if c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}

func hierDecaysString() string { return joinFloats(hierDecays) }

// joinFloats is "x1, x2, …".
func joinFloats(xs []float64) string {
	var p []string
	for _, x := range xs {
		p = append(p, fmt.Sprint(x))
	}
	return strings.Join(p, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
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

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
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
		"%.3f, largest %.3f (%d calendars); simulated sites %.3f (their changes are Poisson, without bursts)%s.",
		p.w, pct(hierCoverage(p.testSim, 0)), pct(hierCoverage(p.testSim, 1)), pct(hierCoverage(ccSim, 0)), pct(hierCoverage(ccSim, 1)),
		f3(ratio0(p.testSim)), f3(ratio0(ccSim)), f3(ratio0(p.testPHP)), f3(ratio0(ccPHP)), pct(hierCoverage(p.testPHP, 0)), pct(hierCoverage(ccPHP, 0)),
		quantile(phpInvK, 0.5), quantile(phpInvK, 1), len(phpInvK), simInvK, map[bool]string{true: ", so there the lasting prior is hist's own", false: ""}[simInvK == 0])
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
	allTr := b.scoreWith(allPages(d.phpTrain), cfg, tau)
	allTe := b.scoreWith(allPages(d.phpTest), cfg, tau)
	gTrP := b.scoreWith(d.phpTrain, cfg, groupTau2(d.phpTrain))
	gTrS := b.scoreWith(d.simTrain, cfg, groupTau2(d.simTrain))
	gTeP := b.scoreWith(d.phpTest, cfg, groupTau2(d.phpTest))
	gTeS := b.scoreWith(d.simTest, cfg, groupTau2(d.simTest))
	rc := func(s *pooledScore) string { return f3(ratio0(s)) + " (" + pct(hierCoverage(s, 0)) + ")" }
	// A change is adopted when, on the training split, it lowers the php
	// ratio and keeps every coverage in 93–97 % (widened by its sampling
	// error, coverageBand).
	base := b.trainPHP[b.w] // a sib candidate's one score is at w = 0
	better := func(php, simS *pooledScore) bool {
		ok := ratio0(php) < ratio0(base) && coverageOK(php, 0)
		if simS != nil {
			ok = ok && coverageOK(simS, 0) && coverageOK(simS, 1)
		}
		return ok
	}
	var adopted []string
	if better(allTr, nil) {
		adopted = append(adopted, "every page in the prior")
	}
	if better(gTrP, gTrS) {
		adopted = append(adopted, "τ² pooled over the directories")
	}
	verdict := "neither lowers the training ratio with every coverage in its band, so neither is adopted"
	if len(adopted) > 0 {
		verdict = "adopted on the training split: " + strings.Join(adopted, ", ") + " (not wired into the candidates above)"
	}
	e.R.P("Two more changes tried on %s (%s), each judged on the training split first (cells: ratio < 5 changes (predictive coverage), the "+
		"candidate with the change against without it): every page of a directory in its prior (as a deployed aggregator sees the site, not only the "+
		"selected pages): php/doc-en train %s against %s, test %s against %s; τ² of the drift in the prediction pooled over the directories of one calendar "+
		"(eq. H1's sums added; one site's three steps make a noisy τ̂²): php/doc-en train %s against %s, test %s against %s; simulated coverage < 5 / ≥ 5 "+
		"train %s / %s, test %s / %s. On the training split %s.",
		b.name, b.param(), rc(allTr), rc(base), rc(allTe), rc(b.testPHP), rc(gTrP), rc(base), rc(gTeP), rc(b.testPHP),
		pct(hierCoverage(gTrS, 0)), pct(hierCoverage(gTrS, 1)), pct(hierCoverage(gTeS, 0)), pct(hierCoverage(gTeS, 1)), verdict)
	both := mergeScores(b.testPHP, b.swapPHP)
	e.R.P("Both halves of php/doc-en, each scored with the hyper-parameter chosen without it (the test half with %s, the training half with %s; %d pages with "+
		"fewer than 5 changes): %s of the best single estimator's median error %s, predictive coverage %s.",
		b.param(), b.swapParam(), both.n[0], f3(ratio0(both)), bootString(both, e.Seed), pct(hierCoverage(both, 0)))
	tr, te := b.trainPHP[b.w], b.testPHP
	k := bestOfGroup(te, 2)
	ptr, pte := quantile(tr.errs[2]["pooled"], 0.5), quantile(te.errs[2]["pooled"], 0.5)
	ktr, kte := quantile(tr.errs[2][k], 0.5), quantile(te.errs[2][k], 0.5)
	// whose median error on the silent pages moves more between the
	// halves (in log): the candidate's or the comparator's
	who := fmt.Sprintf("the candidate's own: its error on the silent pages moves by a factor e^%.2f, %s's by e^%.2f", math.Log(pte/ptr), k, math.Log(kte/ktr))
	if math.Abs(math.Log(kte/ktr)) > 2*math.Abs(math.Log(pte/ptr)) {
		who = fmt.Sprintf("mostly the comparator's (silent pages: %s's error moves by a factor e^%.2f, the candidate's by e^%.2f): %s gives every silent page "+
			"of the weekly year one value (its posterior for no change in the same visits), and how near the silent pages' truths fall to it differs between the halves", k, math.Log(kte/ktr), math.Log(pte/ptr), k)
	}
	e.R.P("Where the halves differ (%s, %s): on the pages without a detected change its median |log| is %s on the training half and %s on the test "+
		"half, %s's %s and %s; with 1–4 changes %s and %s, the best single estimator's %s and %s. The ratio's move between the halves is %s.",
		b.name, b.param(), f3(ptr), f3(pte), k, f3(ktr), f3(kte), f3(quantile(tr.errs[3]["pooled"], 0.5)), f3(quantile(te.errs[3]["pooled"], 0.5)),
		f3(quantile(tr.errs[3][bestOfGroup(tr, 3)], 0.5)), f3(quantile(te.errs[3][bestOfGroup(te, 3)], 0.5)), who)
	if n := b.testPHP.predN[1]; !coverageReachable(n) {
		e.R.P("On this test split the php/doc-en check of coverage with 5 or more changes cannot pass for any candidate: with %d predictive interval(s) "+
			"the coverage takes only the values k/%d, none in its band; \"meets the target on both\" is then out of reach on php/doc-en whatever the "+
			"estimator, and the ratio with fewer than 5 changes (its bootstrap interval above) is the informative number.", n, n)
	}
}

// coverageReachable says whether some k/n lies in coverageBand(n).
func coverageReachable(n int) bool {
	lo, hi := coverageBand(n)
	for k := 0; k <= n; k++ {
		if c := float64(k) / float64(n); c >= lo && c <= hi {
			return true
		}
	}
	return false
}
