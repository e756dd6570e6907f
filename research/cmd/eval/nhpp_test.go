package main

import (
	"math"
	"testing"

	"github.com/changerate/changerate/internal/sim"
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
			o := predictCrawl(ev, mi, &cfg, 200, predictVariant{})
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

// The crawler's copy of the window is the stream's own: λ̌ combines β̃, n
// and t_n of one point set, also after a cut (a copy that keeps a point at
// a float32 τ differs, in about 15 % of the predictions).
func TestPredictCrawlWindowCopy(t *testing.T) {
	cfg := windows.DefaultConfig()
	cuts := 0
	for i := 0; i < 100; i++ {
		ev, _ := synthObject(1, 950000+uint64(i), 200)
		if len(ev) < 5 {
			continue
		}
		for mi := 0; mi < 3; mi++ {
			o := predictCrawl(ev, mi, &cfg, 200, predictVariant{})
			if o.mismatch != 0 {
				t.Fatalf("object %d model %d: %d predictions with a window copy that differs from the stream's", i, mi, o.mismatch)
			}
			cuts += o.visits
		}
	}
	if cuts == 0 {
		t.Fatal("no visits")
	}
}

// On one increasing Weibull segment (no transitions) the Weibull predictor
// observes more updates than the intuitive one (its λ̌(t) follows the
// increase); the paper's Duane MTBU(t) = α·t^γ is shorter than the
// instantaneous e^a·t^γ/(1−γ) when γ > 0, so it visits more often there.
func TestPredictCrawlModels(t *testing.T) {
	cfg := windows.DefaultConfig()
	var tot [3]crawlCounts
	for i := 0; i < 200; i++ {
		ev, _ := singleObject(1, 960000+uint64(i), 200, 2)
		if len(ev) < 5 {
			continue
		}
		for mi := 0; mi < 3; mi++ {
			o := predictCrawl(ev, mi, &cfg, 200, predictVariant{})
			tot[mi].obs += o.obs
			tot[mi].total += o.total
		}
	}
	wi := float64(tot[1].obs) / float64(tot[1].total)
	in := float64(tot[0].obs) / float64(tot[0].total)
	// ~5000 updates: binomial SE < 0.01; the measured gap is ≈ 0.06.
	if !(wi > in+0.02) {
		t.Errorf("increasing segment: Weibull observes %.3f, intuitive %.3f; want Weibull ahead", wi, in)
	}
	var dec [2]crawlCounts
	for i := 0; i < 200; i++ {
		ev, _ := singleObject(1, 970000+uint64(i), 200, 0.5)
		if len(ev) < 5 {
			continue
		}
		for k, v := range []predictVariant{{}, {duaneInstantaneous: true}} {
			o := predictCrawl(ev, 2, &cfg, 200, v)
			dec[k].visits += o.visits
		}
	}
	if !(dec[0].visits > dec[1].visits) {
		t.Errorf("decreasing segment: Duane α·t^γ makes %d visits, the instantaneous MTBU %d; want more", dec[0].visits, dec[1].visits)
	}
}
