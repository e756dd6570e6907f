package main

import (
	"math"
	"strings"
	"testing"
)

func TestPersistentWorld(t *testing.T) {
	w := vWorld(1, 20, 20000)
	p := persistent(w)
	same, diff := 0, 0
	for i := 0; i < w.Sites(); i++ {
		for pg := 0; pg < w.Pages(i); pg++ {
			p.cycle, w.cycle = 1, 1
			a, b := p.Changed(i, pg), w.Changed(i, pg)
			p.cycle, w.cycle = 2, 2
			if p.Changed(i, pg) != a {
				t.Fatalf("persistent page %d/%d changed its bit between cycles", i, pg)
			}
			if w.Changed(i, pg) == b {
				same++
			} else {
				diff++
			}
		}
	}
	if diff == 0 {
		t.Fatal("independent bits never differ between cycles")
	}
	if w.persist {
		t.Fatal("persistent() must not modify its argument")
	}
}

// Greedy's split into samples and the rest adds up to its ChangeRatio, and
// the samples change at the sites' mean ρ (s pages from every site).
func TestGreedySplit(t *testing.T) {
	e := &Env{Seed: 1, Procs: 1}
	w := vWorld(1, 84, 117000)
	p := greedySplit(e, w, 2000, 10, 5, 600)
	if got := p.sampleShare*p.sampleRatio + (1-p.sampleShare)*p.restRatio; math.Abs(got-p.total) > 1e-12 {
		t.Fatalf("parts %.6f, total %.6f", got, p.total)
	}
	ns := float64(84 * 10 * 5)
	m := siteMeanRho(w)
	if se := math.Sqrt(m * (1 - m) / ns); math.Abs(p.sampleRatio-m) > 4*se {
		t.Fatalf("samples change at %.3f, sites' mean ρ %.3f (SE %.3f)", p.sampleRatio, m, se)
	}
}

// The cause texts are only claimed when their numbers support them.
func TestNtoulasCauseRules(t *testing.T) {
	if fig13Cause([]float64{0.5, 0.59}, []float64{0.7, 0.78}, 0.8, 0.05) == "" {
		t.Fatal("0.8 within 0.05 of [0.59, 0.78] must be explained")
	}
	if fig13Cause([]float64{0.5, 0.59}, []float64{0.6, 0.65}, 0.8, 0.05) != "" {
		t.Fatal("0.8 outside [0.59, 0.65] ± 0.05 must not be explained")
	}
	if fig11Cause(0.1, 0.1, 0.67, 0.81, 0.807, 0.75, 0.5, 0.01) == "" {
		t.Fatal("k = 2 as good as k = 10: explained")
	}
	if fig11Cause(0.1, 0.1, 0.67, 0.70, 0.807, 0.75, 0.5, 0.01) != "" {
		t.Fatal("k = 2 as bad as k = 1: not explained")
	}
	txt := fig89Cause(greedyParts{0.5, 0.32, 0.93, 0.625}, []float64{0.6, 0.75, 0.8, 0.7}, 5000, 252, 0.32, 0.73)
	if !strings.Contains(txt, "s = 2–3") || !strings.Contains(txt, "0.53") {
		t.Fatalf("%s", txt)
	}
}

// The over-dispersed variant's simulated-site cause is claimed only when
// the whole-window prior meets both coverage targets.
func TestPooledNBSimCauseRule(t *testing.T) {
	mk := func(c0, c1 int) *pooledScore {
		s := newPooledScore()
		s.covNB, s.ciNNB = [4]int{c0, c1}, [4]int{1000, 1000}
		return s
	}
	if pooledNBSimCause(mk(936, 906), mk(953, 938)) == "" {
		t.Fatal("whole prior in band: cause expected")
	}
	if pooledNBSimCause(mk(936, 906), mk(953, 900)) != "" {
		t.Fatal("whole prior out of band: no cause")
	}
}
