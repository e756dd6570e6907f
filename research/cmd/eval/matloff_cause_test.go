package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The exact √MSE of λ̌ agrees with a direct simulation of eq. 3.
func TestCheckExactRelMSE(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, lam, reps = 50, 2.0, 20000
	p := 1 - math.Exp(-lam)
	var s, k float64
	for r := 0; r < reps; r++ {
		m := 0
		for i := 0; i < n; i++ {
			if rng.Float64() < p {
				m++
			}
		}
		if m == n {
			continue
		}
		d := -math.Log(1-float64(m)/n) - lam
		s += d * d
		k++
	}
	sim := math.Sqrt(s/k) / lam
	ex := checkExactRelMSE(n, lam)
	if math.Abs(sim-ex) > 3*ex/math.Sqrt(2*k) {
		t.Fatalf("exact %.4f, simulated %.4f", ex, sim)
	}
}

// The analytic crossover of Fig. 2 (n = 200) is the rule behind its
// cause: the text claims the estimators' own crossing only when it is
// within tol of ours and away from the paper's.
func TestMatloffCauseRule(t *testing.T) {
	var lams []float64
	for l := 0.4; l <= 10.0001; l += 0.1 {
		lams = append(lams, l)
	}
	ex, as := make([]float64, len(lams)), make([]float64, len(lams))
	for i, l := range lams {
		ex[i], as[i] = checkExactRelMSE(200, l), hatAsymRelSE(200, l)
	}
	c := matloffCause(200, 10000, lams, ex, as, 3.0)
	if c.maxZ != 0 || math.Abs(c.crossAnalytic-c.crossExactSim) > 1e-12 {
		t.Fatalf("analytic curves fed as simulated must agree: %+v", c)
	}
	if !(c.crossAnalytic > 2.6 && c.crossAnalytic < 2.95) {
		t.Fatalf("analytic crossover n = 200: %.3f", c.crossAnalytic)
	}
	if txt := c.text(3.0, c.crossAnalytic, 0.15); !strings.Contains(txt, "not a property of the estimators") {
		t.Fatalf("near ours, away from the paper: %s", txt)
	}
	if txt := c.text(c.crossAnalytic, 3.5, 0.15); !strings.Contains(txt, "in place of its simulated MSE") {
		t.Fatalf("%s", txt)
	}
	if txt := c.text(3.5, 3.5, 0.15); strings.Contains(txt, "not a property of the estimators") {
		t.Fatalf("far from ours must not claim it: %s", txt)
	}
}

func TestAtomShare(t *testing.T) {
	if got := atomShare([]float64{0.1, 0.262, 0.262, 0.262, 0.9}); math.Abs(got-0.6) > 1e-12 {
		t.Fatalf("atomShare = %v, want 0.6", got)
	}
	if got := atomShare([]float64{0.1, 0.2, 0.3}); math.Abs(got-1.0/3) > 1e-12 {
		t.Fatalf("atomShare = %v, want 1/3", got)
	}
}
