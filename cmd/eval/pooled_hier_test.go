package main

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/realdata"
)

// gammaFromQuantiles inverts a gamma's median and upper quantile.
func TestGammaFromQuantiles(t *testing.T) {
	for _, g := range []struct{ a, b float64 }{{0.3, 2}, {1, 1}, {4.5, 0.01}, {200, 3}} {
		med := mathext.GammaIncRegInv(g.a, 0.5) / g.b
		hi := mathext.GammaIncRegInv(g.a, 0.975) / g.b
		a, b, ok := gammaFromQuantiles(med, hi, 0.975)
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
	w, ok := driftWiden(est, 0.5, cfg)
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
