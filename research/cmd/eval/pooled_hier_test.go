package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/realdata"
	"github.com/changerate/changerate/research/pooled"
)

// gammaFromQuantiles inverts a gamma's median and upper quantile.
func TestGammaFromQuantiles(t *testing.T) {
	for _, g := range []struct{ a, b float64 }{{0.3, 2}, {1, 1}, {4.5, 0.01}, {200, 3}} {
		med := mathext.GammaIncRegInv(g.a, 0.5) / g.b
		hi := mathext.GammaIncRegInv(g.a, 0.975) / g.b
		a, b, ok := gammaFromQuantiles(med, hi, 0.975, nil)
		if !ok || math.Abs(a/g.a-1) > 1e-6 || math.Abs(b/g.b-1) > 1e-6 {
			t.Errorf("Gamma(%g, %g): got (%g, %g, %v)", g.a, g.b, a, b, ok)
		}
	}
}

// driftWiden keeps the centre of a log-symmetric drift and widens the
// interval by about the drift's spread.
func TestDriftWiden(t *testing.T) {
	cfg := newEstConfig()
	a, b := 5.0, 2.0
	q := func(p float64) float64 { return mathext.GammaIncRegInv(a, p) / b }
	est := estimators.Estimate{Rate: q(0.5), Lo: q(0.025), Hi: q(0.975), HasCI: true}
	w, ok := driftWiden(est, 0.5, 0, cfg, nil)
	if !ok {
		t.Fatal("no estimate")
	}
	if math.Abs(math.Log(w.Rate/est.Rate)) > 0.05 {
		t.Errorf("median moved from %g to %g", est.Rate, w.Rate)
	}
	// the log width grows as √(w₀² + (2·1.96)²·τ²) for a near-normal log
	w0 := math.Log(est.Hi / est.Lo)
	want := math.Sqrt(w0*w0 + 2*1.96*2*1.96*0.5)
	if got := math.Log(w.Hi / w.Lo); math.Abs(got/want-1) > 0.1 {
		t.Errorf("log width %g, want about %g", got, want)
	}
}

// The decay is chosen on the training scores alone: the w whose worse
// data set is best.
func TestHierChoose(t *testing.T) {
	mk := func(pooled, best float64) *pooledScore {
		s := newPooledScore()
		s.errs[0]["pooled"] = []float64{pooled}
		for _, k := range singleKeys {
			s.errs[0][k] = []float64{best}
		}
		return s
	}
	php := map[float64]*pooledScore{}
	sim := map[float64]*pooledScore{}
	for _, w := range hierDecays {
		php[w], sim[w] = mk(1, 1), mk(0.7, 1)
	}
	php[0.5], sim[0.5] = mk(0.8, 1), mk(0.9, 1) // worse 0.9
	php[1], sim[1] = mk(0.75, 1), mk(0.85, 1)   // worse 0.85: chosen
	if w := hierChoose(php, sim); w != 1 {
		t.Errorf("chose w = %g, want 1", w)
	}
}

// The candidates' section on php/doc-en (quick size) computes its verdict
// and explains a difference from the numbers; every candidate's "meets"
// claim is its checks on both data sets.
func TestPooledTimeVerdict(t *testing.T) {
	dir := realdata.Dir(t, "php-doc-en-history/git-file-changes.tsv.gz")
	e := &Env{R: &Report{dir: t.TempDir()}, Quick: true, Seed: 1, Data: dir, Procs: 2}
	pooledTimeSection(e)
	if len(e.hier) == 0 {
		t.Fatal("no candidates")
	}
	var found bool
	for _, v := range e.R.verdicts {
		if strings.HasPrefix(v.figure, "Pooled, site prior over time") {
			found = true
		}
	}
	if !found {
		t.Errorf("verdict missing: %+v", e.R.verdicts)
	}
	for _, r := range e.hier {
		if len(r.phpChecks) != 4 || len(r.simCheck) != 4 {
			t.Errorf("%s: %d php and %d simulated checks", r.name, len(r.phpChecks), len(r.simCheck))
		}
		if r.testPHP.n[0] == 0 || r.testSim.n[0] == 0 {
			t.Errorf("%s: empty test split", r.name)
		}
	}
	requireCauses(t, e.R.verdicts)
}

// The bootstrap over sites keeps a site's objects together: sites alike
// give no spread, sites unlike give the spread of their ratios.
func TestRatio0Boot(t *testing.T) {
	mk := func(ratios ...float64) *pooledScore {
		s := newPooledScore()
		for si, r := range ratios {
			for i := 0; i < 5; i++ {
				s.errs[0]["pooled"] = append(s.errs[0]["pooled"], r)
				for _, k := range singleKeys {
					s.errs[0][k] = append(s.errs[0][k], 1)
				}
				s.site0 = append(s.site0, si)
			}
		}
		return s
	}
	if lo, hi := ratio0Boot(mk(0.5, 0.5, 0.5), 200, 1); lo != 0.5 || hi != 0.5 {
		t.Errorf("alike sites: [%g, %g]", lo, hi)
	}
	if lo, hi := ratio0Boot(mk(0.5, 0.7, 0.9, 1.1), 400, 1); !(lo < 0.8 && hi > 0.8) || lo < 0.5 || hi > 1.1 {
		t.Errorf("unlike sites: [%g, %g]", lo, hi)
	}
}

// The persistent prior keeps the whole periods' gamma (hist's) when the
// bursts' pooled dispersion is infinite (eq. H4 with 1/k = 0), and narrows
// it towards the lasting rates' spread when it is finite; a site without
// consecutive periods' moments has none.
func TestPersistentPriorSpread(t *testing.T) {
	sets, _ := simHistSets(6, 99000)
	n := 0
	for _, objs := range sets {
		h := hierSitePrior(objs, hierHist, 0.75)
		p, ok := persistentPrior(objs, 0.75, 0, math.Inf(1))
		if !ok || !h.ok {
			continue
		}
		n++
		if p.GammaPrior != h.prior || !math.IsInf(p.K, 1) {
			t.Errorf("k = ∞: %+v, want hist's %+v", p, h.prior)
		}
		q, _ := persistentPrior(objs, 0.75, 0, 2)
		if !(q.Shape > p.Shape) || math.Abs(pooled.Mean(q.GammaPrior)/pooled.Mean(p.GammaPrior)-1) > 1e-12 || q.K != 2 {
			t.Errorf("k = 2: %+v against %+v: must be narrower with the same mean", q, p)
		}
		if m, _ := persistentPrior(objs, 0.75, 3*pooled.Mean(p.GammaPrior), 2); math.Abs(pooled.Mean(m.GammaPrior)/(3*pooled.Mean(p.GammaPrior))-1) > 1e-12 || m.Shape != q.Shape {
			t.Errorf("mean moved: %+v", m)
		}
	}
	if n == 0 {
		t.Fatal("no site with a prior")
	}
	noHist := append([]pooledObj(nil), sets[0]...)
	for i := range noHist {
		noHist[i].hist = nil
	}
	if _, ok := persistentPrior(noHist, 0.75, 0, 2); ok {
		t.Error("a prior without consecutive periods")
	}
}

// groupTau2 adds the LevelDrift sums of a group's sites (eq. H1 pooled),
// and keeps groups apart.
func TestGroupTau2(t *testing.T) {
	site := func(group int, rates ...float64) []pooledObj {
		// 12 objects, each with the period rates (newest first) as its
		// counts over unit exposure
		var objs []pooledObj
		for i := 0; i < 12; i++ {
			o := pooledObj{ev: estimators.Evidence{X: rates[0], E: 1}, evOK: true, scored: true, group: group}
			for _, r := range rates[1:] {
				o.hist = append(o.hist, estimators.Evidence{X: r, E: 1})
			}
			objs = append(objs, o)
		}
		return objs
	}
	a, b, c := site(0, 10, 20, 10, 20), site(0, 10, 10, 10, 10), site(1, 5, 40, 5, 40)
	sets := [][]pooledObj{a, b, c}
	da, db := siteDrift(a), siteDrift(b)
	want, _ := pooled.LevelDrift{N: da.N + db.N, SS: da.SS + db.SS, Noise: da.Noise + db.Noise}.Var()
	g := groupTau2(sets)
	if got := g(a); math.Abs(got-want) > 1e-12 || g(b) != got {
		t.Errorf("group 0: %g, %g, want %g", got, g(b), want)
	}
	if got := g(c); math.Abs(got-siteTau2(c)) > 1e-12 || got == g(a) {
		t.Errorf("group 1: %g, want its own %g", got, siteTau2(c))
	}
	if !(siteTau2(a) > g(a)) {
		t.Errorf("pooling with a steady site must lower the drifting site's τ²: %g, %g", siteTau2(a), g(a))
	}
}

// allPages lets every object with evidence feed the prior, leaving the
// scored objects and the original sets as they are.
func TestAllPages(t *testing.T) {
	sets := [][]pooledObj{{{evOK: true, scored: true}, {evOK: true}, {evOK: false}}, nil}
	all := allPages(sets)
	if all[1] != nil || len(all[0]) != 3 {
		t.Fatalf("shape: %+v", all)
	}
	for i, o := range all[0] {
		if o.scored != sets[0][i].scored || sets[0][i].priorAll {
			t.Errorf("object %d: scored or original changed", i)
		}
	}
	if got := []bool{all[0][0].inPrior(), all[0][1].inPrior(), all[0][2].inPrior()}; !got[0] || !got[1] || got[2] {
		t.Errorf("inPrior with all pages: %v", got)
	}
	if sets[0][1].inPrior() {
		t.Error("an unscored object feeds the prior without allPages")
	}
}

// A coverage measured on n intervals takes only the values k/n: its
// check's band (coverageBand) must hold one of them for every n ≥ 1 (the
// fixed 93–97 % holds none for n < 15), at least 1/n wide where it is not
// clipped at 1, and no wider than the target's 93–97 % plus 4 binomial
// standard errors.
func TestCoverageBand(t *testing.T) {
	if coverageReachable(0) {
		t.Error("n = 0: reachable")
	}
	for n := 1; n <= 2000; n++ {
		lo, hi := coverageBand(n)
		if !coverageReachable(n) {
			t.Errorf("n = %d: no k/n in [%g, %g]", n, lo, hi)
		}
		if hi < 1 && hi-lo < 1/float64(n) {
			t.Errorf("n = %d: band [%g, %g] narrower than 1/n", n, lo, hi)
		}
		if se := math.Sqrt(0.95 * 0.05 / float64(n)); lo < 0.93-2*se-1e-12 || hi > 0.97+2*se+1e-12 || lo > 0.93 || hi < 0.97 {
			t.Errorf("n = %d: band [%g, %g] is not 93–97 %% ± 2 standard errors", n, lo, hi)
		}
	}
}

// Every coverage check of the pooled sections uses the band of its own
// number of intervals: 13 of 13 and 12 of 13 intervals pass (the former
// fixed 93–97 % failed both), so does 1 of 1, and no interval fails.
func TestPooledCoverageChecksUseBand(t *testing.T) {
	s := newPooledScore()
	for g := 0; g < 2; g++ {
		s.errs[g]["pooled"], s.errs[g]["pooled_nb"] = []float64{0.5}, []float64{0.5}
		for _, k := range singleKeys {
			s.errs[g][k] = []float64{1}
		}
	}
	s.ciN, s.cov = [4]int{13, 13}, [4]int{12, 13}
	s.ciNNB, s.covNB = [4]int{13, 1}, [4]int{13, 1}
	nb := pooledNBChecks(s)
	rate := pooledChecks(s)
	s.predN, s.predCov = [4]int{300, 1}, [4]int{285, 1}
	pred := pooledChecks(s)
	n := 0
	for _, cs := range [][]check{rate, pred, nb} {
		for _, c := range cs {
			if !strings.Contains(c.name, "coverage") && !strings.Contains(c.name, "inside") {
				continue
			}
			n++
			if !c.ok() {
				t.Errorf("%s", c)
			}
			if !strings.Contains(c.tol, "√(0.95·0.05/n)") {
				t.Errorf("%s: the band's origin is not written next to it", c.name)
			}
		}
	}
	if n != 6 {
		t.Errorf("%d coverage checks, want 6", n)
	}
	if c := coverageCheck("none", 0, 0, ""); c.ok() {
		t.Errorf("no interval passes: %s", c)
	}
}

// mergeScores concatenates the errors and counts and keeps the sites of
// the two scores apart (a bootstrap over the merged sites).
func TestMergeScores(t *testing.T) {
	mk := func(sites int, err float64) *pooledScore {
		s := newPooledScore()
		for si := 0; si < sites; si++ {
			s.errs[0]["pooled"] = append(s.errs[0]["pooled"], err)
			s.site0 = append(s.site0, si)
			s.n[0]++
			s.predN[0]++
		}
		s.sites = sites
		return s
	}
	m := mergeScores(mk(2, 1), mk(3, 2))
	if m.sites != 5 || m.n[0] != 5 || m.predN[0] != 5 || len(m.errs[0]["pooled"]) != 5 {
		t.Fatalf("merged: sites %d n %d", m.sites, m.n[0])
	}
	if want := []int{0, 1, 2, 3, 4}; fmt.Sprint(m.site0) != fmt.Sprint(want) {
		t.Errorf("sites %v, want %v", m.site0, want)
	}
}

// hierBest prefers the candidate whose chosen w fails the fewest checks
// on the training sets, and only then the lowest training ratio.
func TestHierBestFewestFailed(t *testing.T) {
	mk := func(ratio float64, covered int) *pooledScore {
		s := newPooledScore()
		for g := 0; g < 2; g++ {
			s.errs[g]["pooled"] = []float64{ratio}
			for _, k := range singleKeys {
				s.errs[g][k] = []float64{1}
			}
			s.ciN[g], s.cov[g] = 100, covered
		}
		return s
	}
	r := func(ratio float64, covered int) hierResult {
		return hierResult{w: 0.5, trainPHP: map[float64]*pooledScore{0.5: mk(ratio, covered)}, trainSim: map[float64]*pooledScore{0.5: mk(ratio, covered)}}
	}
	rs := []hierResult{r(0.6, 85), r(0.8, 95), r(0.7, 95)}
	if got := rs[0].trainFailed(); got != 4 {
		t.Errorf("undercovering candidate fails %d checks, want 4", got)
	}
	if got := hierBest(rs); got != 2 {
		t.Errorf("chose %d, want 2 (all checks pass, lower ratio than 1)", got)
	}
}

// A candidate that meets the checks but fails a robustness check
// gets a cause naming it; one that passes everything gets none.
func TestRobustCause(t *testing.T) {
	pass := []check{atMost("ratio", 0.7, 0.85, "target")}
	b := hierResult{phpChecks: pass, simCheck: pass}
	if c := robustCause(b, []check{atMost("halves swapped", 0.8, 0.85, "x")}); c != "" {
		t.Errorf("all pass: cause %q", c)
	}
	c := robustCause(b, []check{atMost("halves swapped", 0.905, 0.85, "x"), atMost("calibrated", 0.5, 0.85, "y")})
	if !strings.Contains(c, "halves swapped is 0.905") || strings.Contains(c, "calibrated is") {
		t.Errorf("cause %q", c)
	}
	b.phpChecks = []check{atMost("ratio", 0.9, 0.85, "target")}
	if c := robustCause(b, []check{atMost("halves swapped", 0.905, 0.85, "x")}); c != "" {
		t.Errorf("issue's checks fail: the robustness cause should leave it to hierCause, got %q", c)
	}
}
