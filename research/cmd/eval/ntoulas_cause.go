package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/research/ntoulas"
)

// Cause experiments for the Cho & Ntoulas figures whose levels differ from
// the paper's: each isolates one ingredient (the world's page-level
// persistence, the sampling cost, the adaptive policy's first decision) and
// measures how far it moves the number.

// persistent returns a copy of w whose pages keep their change bit from
// cycle to cycle (the same sites, pages and ρ).
func persistent(w *bitWorld) *bitWorld {
	c := w.clone()
	c.persist = true
	return c
}

// fairnessAfter runs greedy for cycles cycles on w and returns Fairness(i).
func fairnessAfter(e *Env, w *bitWorld, budget, cycles int, stream uint64) []float64 {
	w = w.clone()
	rng := sim.NewRand(e.Seed, stream)
	_, fair := runCycles(w, cycles, sampling(ntoulas.Greedy, ntoulas.Config{Budget: budget})(w), rng, true)
	return fair
}

// greedyParts splits greedy's downloads over cycles into samples and the
// rest: the share of the budget spent on samples and the change ratio of
// each part.
type greedyParts struct {
	sampleShare, sampleRatio, restRatio, total float64
}

func greedySplit(e *Env, w *bitWorld, budget, s, cycles int, stream uint64) greedyParts {
	w = w.clone()
	rng := sim.NewRand(e.Seed, stream)
	var ns, cs, nr, cr float64
	for c := 1; c <= cycles; c++ {
		w.cycle = c
		res, err := ntoulas.Greedy(w, ntoulas.Config{Budget: budget, SampleSize: s}, rng)
		if err != nil {
			panic(err)
		}
		for _, d := range res.Downloads {
			if d.Sample {
				ns++
				if d.Changed {
					cs++
				}
			} else {
				nr++
				if d.Changed {
					cr++
				}
			}
		}
	}
	n := ns + nr
	return greedyParts{ns / n, cs / math.Max(1, ns), cr / math.Max(1, nr), (cs + cr) / n}
}

// siteMeanRho is the unweighted mean ρ over sites: the expected change ratio
// of s samples from every site.
func siteMeanRho(w *bitWorld) float64 {
	s := 0.0
	for _, r := range w.rho {
		s += r
	}
	return s / float64(len(w.rho))
}

// adaptiveFirstLoss measures the adaptive policy's decisions after a single
// sample: over cycles it counts the sites of ρ ≥ hiRho whose every download
// was one unchanged sample (discarded at h(0 of 1) < ρ_t) and returns that
// share and the changed pages those sites held per cycle, as a share of
// the budget: the ChangeRatio that the first-sample discards cost.
func adaptiveFirstLoss(e *Env, w *bitWorld, budget, k, cycles int, hiRho float64, stream uint64) (share, lost float64) {
	w = w.clone()
	rng := sim.NewRand(e.Seed, stream)
	var nHi, dHi, lostPages float64
	for c := 1; c <= cycles; c++ {
		w.cycle = c
		res, err := ntoulas.Adaptive(w, ntoulas.Config{Budget: budget, K: k, Alpha: 0.9}, rng)
		if err != nil {
			panic(err)
		}
		cnt := make([]int, w.Sites())
		chg := make([]bool, w.Sites())
		for _, d := range res.Downloads {
			cnt[d.Site]++
			chg[d.Site] = chg[d.Site] || d.Changed
		}
		for i, r := range w.rho {
			if r < hiRho {
				continue
			}
			nHi++
			if cnt[i] == 1 && !chg[i] {
				dHi++
				lostPages += r * float64(w.pages[i]-1)
			}
		}
	}
	return dHi / math.Max(1, nHi), lostPages / float64(cycles) / float64(budget)
}

// greedyByS is greedy's ChangeRatio at every sample size s = 1…10.
func greedyByS(e *Env, w *bitWorld, budget, cycles int, stream uint64) []float64 {
	got := make([]float64, 10)
	parallel(10, e.Procs, func(i int) {
		got[i] = greedySplit(e, w, budget, i+1, cycles, stream+uint64(i)).total
	})
	return got
}

// fig89Cause explains greedy's level at R = 5,000 from its parts.
func fig89Cause(p greedyParts, sCurve []float64, budget, sites int, siteMean, paper float64) string {
	sLo, sHi := 0, 0
	for i, v := range sCurve {
		if v >= paper {
			if sLo == 0 {
				sLo = i + 1
			}
			sHi = i + 1
		}
	}
	need := (paper - (1-p.sampleShare)*p.restRatio) / p.sampleShare
	s := fmt.Sprintf("the sampling cost: at R = 5,000 (%d downloads here) s = 10 pages from each of %d sites are %.0f %% of the budget; those samples change at %.2f "+
		"(the world's mean ρ over sites, %.2f: the code samples as designed) and the remaining downloads at %.2f, so greedy = %.2f·%.2f + %.2f·%.2f = %.2f. "+
		"The paper's %.2f would need samples changing at %.2f with the same rest",
		budget, sites, 100*p.sampleShare, p.sampleRatio, siteMean, p.restRatio, p.sampleShare, p.sampleRatio, 1-p.sampleShare, p.restRatio, p.total, paper, need)
	if sLo > 0 {
		s += fmt.Sprintf(", or a sample of s = %d–%d pages per site (greedy reaches %.2f there): the level is set by the samples' share of a small budget and the sites' mean ρ (the WebArchive sites are not available), not by the greedy code.", sLo, sHi, paper)
	} else {
		s += "; no sample size s ≤ 10 reaches it on this world: the sites' mean ρ (the WebArchive sites are not available) sets the level, not the greedy code."
	}
	return s
}

// fig13Cause: the paper's fairness between the independent-bit and the
// persistent world brackets it (the page-level persistence sets it).
func fig13Cause(indep, persist []float64, paper, tol float64) string {
	a, b := indep[len(indep)-1], persist[len(persist)-1]
	lo, hi := math.Min(a, b), math.Max(a, b)
	if paper >= lo-tol && paper <= hi+tol {
		return fmt.Sprintf("page-level persistence: with the same sites, ρ and greedy, fairness after 5 cycles is %.2f when each page's change bit is independent from "+
			"cycle to cycle (ours) and %.2f when a page that changes keeps changing (cycle 1: %.2f, rising steadily as in the paper); the paper's %.2f lies between "+
			"(± %.2f): how persistent the real pages' changes are, not the greedy code, sets it", a, b, persist[0], paper, tol)
	}
	return ""
}

// fig11Cause: the adaptive policy's decision after a single sample. At
// k = 2 the first decision comes after two samples; when k = 2 is as good as
// k = 10 (within tol) and no worse than the largest k, the k = 1 deficit is
// the one-sample decision. share and lost are adaptiveFirstLoss's.
func fig11Cause(share, lost, k1, k2, k10, kMax, hiRho, tol float64) string {
	if !(k2 >= k10-tol && k2 >= kMax && k1 < k10) {
		return ""
	}
	return fmt.Sprintf("the first decision at k = 1: every site starts with one sample, so estimates are 0 or 1, ρ_t = 1, and Wilson's h(0 of 1) = %.2f < ρ_t discards every site "+
		"whose first sample was unchanged (%.1f %% of the sites with ρ ≥ %.1f, holding changed pages worth %.3f of the budget per cycle). With k = 2, whose first decision "+
		"comes after two samples, the policy reaches %.3f against %.3f at k = 10 and %.3f at the largest k: the paper's ordering holds from k = 2 on, and the k = 1 deficit "+
		"(%.3f) is the one-sample decision, which the paper says did not happen at α = 0.9 (§4.6, its interval for one sample is not stated)",
		wilsonHi01(), 100*share, hiRho, lost, k2, k10, kMax, k10-k1)
}

func wilsonHi01() float64 { _, h := ntoulas.Wilson(0, 1, 0.9); return h }
