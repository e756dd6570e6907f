package main

import (
	"math"
	"testing"

	"github.com/changerate/changerate/sim"
	"github.com/changerate/changerate/windows"
)

// Under a homogeneous Poisson process every model's MTBU is ≈ 1/λ, so a
// crawler visiting one MTBU after each visit observes a change with
// probability 1 − e^{−1}: observed/total ≈ 0.632 and premature/visits ≈ e^{−1}.
func TestPredictCrawlPoisson(t *testing.T) {
	cfg := windows.DefaultConfig()
	for mi := 0; mi < 3; mi++ {
		var obs, total, prem int
		for i := 0; i < 50; i++ {
			ev := sim.Poisson{Rate: 1}.Events(sim.NewRand(1, uint64(i)), 200, nil)
			o := predictCrawl(ev, mi, &cfg, 200)
			obs, total, prem = obs+o.obs, total+o.total, prem+o.prem
		}
		// ~10,000 updates: binomial SE ≈ 0.005; 0.03 covers the estimation noise of MTBU.
		tol := 0.03
		if mi == 2 {
			tol = 0.05 // the Duane regression's MTBU is noisier
		}
		if f := float64(obs) / float64(total); math.Abs(f-(1-math.Exp(-1))) > tol {
			t.Errorf("model %d: observed fraction %.3f, want ≈ 0.632", mi, f)
		}
		if f := float64(prem) / float64(prem+obs); math.Abs(f-math.Exp(-1)) > tol {
			t.Errorf("model %d: premature fraction %.3f, want ≈ 0.368", mi, f)
		}
	}
}
