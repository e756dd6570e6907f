package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/research/pooled"

	"github.com/changerate/changerate/internal/sim"
)

// simHistSets are n simulated sites (simSiteObjs of stream) with
// hierYears earlier windows per object.
func simHistSets(n int, stream uint64) ([][]pooledObj, *estimators.Config) {
	cfg := newEstConfig()
	return simSiteObjs(&Env{Seed: 1, Procs: 2}, cfg, n, 0.3, 1.2, stream, hierYears), cfg
}

// Leave-one-out by subtraction (sibVariant.without, PoolStats.Remove)
// gives the prior of the sums refitted without the object, for every
// object of simulated sites and every span.
func TestSibLeaveOneOut(t *testing.T) {
	sets, _ := simHistSets(4, 77000)
	n := 0
	for _, objs := range sets {
		for _, v := range []sibVariant{{years: 1}, {years: hierYears}, {years: 2, noObs: true}} {
			all := sibStats(objs, v)
			for i := range objs {
				rest := append(append([]pooledObj(nil), objs[:i]...), objs[i+1:]...)
				want, wok := sibStats(rest, v).Prior()
				got, gok := v.without(all, objs, i).Prior()
				if gok != wok {
					t.Fatalf("%v, object %d: prior %v by subtraction, %v refitted", v, i, gok, wok)
				}
				if !wok {
					continue
				}
				n++
				if math.Abs(got.Shape/want.Shape-1) > 1e-9 || math.Abs(got.Rate/want.Rate-1) > 1e-9 {
					t.Fatalf("%v, object %d: %+v by subtraction, %+v refitted", v, i, got, want)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d leave-one-out priors compared", n)
	}
}

// On a stationary site whose pages' rates are Gamma(α, β) the prior fitted
// on the pages' 4-year spans (a weekly crawl of the windows laid end to
// end, simSpans) recovers the shape α; the sums' own Poisson noise is
// removed by the moment estimator. (The mean is exposure-weighted: the
// matched evidence of a page changing about weekly has less exposure
// than its time, so with α = 0.8 the fitted mean is about 11 % below the
// drawn rates' mean.)
func TestSibStationaryShape(t *testing.T) {
	const day = 86400.0
	cfg := newEstConfig()
	for _, alpha := range []float64{0.8, 2, 5} {
		rng := rand.New(rand.NewPCG(uint64(alpha*10), 3))
		mean := 1 / (40 * day)
		D := 365 * day
		var objs []pooledObj
		drawn := 0.0 // the drawn rates' mean
		for i := 0; i < 1500; i++ {
			lam := sim.Gamma(rng, alpha) * mean / alpha
			drawn += lam / 1500
			var evs, vts [][]float64
			for h := 0; h <= hierYears; h++ {
				evs = append(evs, sim.Poisson{Rate: lam}.Events(rng, D, nil))
				vts = append(vts, sim.Regular{Interval: 7 * day}.Times(nil, 0, D, nil))
			}
			o := observeObject(evs[0], vts[0], false, cfg)
			o.scored = true
			simSpans(&o, evs, vts, D, false, cfg)
			objs = append(objs, o)
		}
		p, ok := sibStats(objs, sibVariant{years: hierYears}).Prior()
		if !ok || math.Abs(math.Log(p.Shape/alpha)) > math.Log(1.25) || math.Abs(math.Log(pooled.Mean(p)/drawn)) > math.Log(1.15) {
			t.Errorf("α = %g, drawn mean %g: fitted shape %g, mean %g (ok %v)", alpha, drawn, p.Shape, pooled.Mean(p), ok)
		}
	}
}

// simSpans lays the windows end to end: with Last-Modified (the Poisson
// form, x = changes, e = time) a span's evidence is its windows' summed.
func TestSimSpansAdd(t *testing.T) {
	const day = 86400.0
	cfg := newEstConfig()
	rng := rand.New(rand.NewPCG(5, 5))
	D := 90 * day
	var evs, vts [][]float64
	for h := 0; h <= 3; h++ {
		evs = append(evs, sim.Poisson{Rate: 1 / (5 * day)}.Events(rng, D, nil))
		vts = append(vts, sim.Regular{Interval: day}.Times(nil, 0, D, nil))
	}
	var o pooledObj
	simSpans(&o, evs, vts, D, true, cfg)
	if len(o.span) != 3 || len(o.past) != 3 {
		t.Fatalf("%d spans, %d pasts", len(o.span), len(o.past))
	}
	var sx, se float64
	for h := 0; h <= 3; h++ {
		x, ok := halfEvidence(evs[h], vts[h], true, cfg)
		if !ok {
			t.Fatal("no evidence")
		}
		sx += x.X
		se += x.E
		if h == 0 {
			continue
		}
		if got := o.span[h-1]; math.Abs(got.X-sx) > 1.5 || math.Abs(got.E/se-1) > 0.02 {
			t.Errorf("span of %d windows: %+v, the windows' sum x %g, e %g", h+1, got, sx, se)
		}
	}
}

// hierBest never prefers a sib variant without leave-one-out (its prior
// holds the page's own history): with the best training numbers it is
// passed over for the leave-one-out one.
func TestHierBestSkipsOwnSpan(t *testing.T) {
	mk := func(ratio float64) *pooledScore {
		s := newPooledScore()
		for g := 0; g < 2; g++ {
			s.errs[g]["pooled"] = []float64{ratio}
			for _, k := range singleKeys {
				s.errs[g][k] = []float64{1}
			}
			s.ciN[g], s.cov[g] = 100, 95
		}
		return s
	}
	r := func(ratio float64, v *sibVariant) hierResult {
		return hierResult{sib: v, trainPHP: map[float64]*pooledScore{0: mk(ratio)}, trainSim: map[float64]*pooledScore{0: mk(ratio)}}
	}
	rs := []hierResult{r(0.8, nil), r(0.6, &sibVariant{years: 3}), r(0.7, &sibVariant{years: 3, loo: true})}
	if got := hierBest(rs); got != 2 {
		t.Errorf("chose %d, want 2 (the leave-one-out sib)", got)
	}
}
