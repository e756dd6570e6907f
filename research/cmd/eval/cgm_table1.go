package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
)

// cgmTableI simulates the §6.4 crawler: uniform weekly visits against
// 5 weekly visits then f ∝ √λ̂ with λ̂ from naive or cgm_improved, same total
// visits. Page change rates come from a heavy-tailed population.
func cgmTableI(e *Env, cfg *estimators.Config) {
	r := e.R
	r.H(3, "Table I — changes detected by the uniform, naive and improved policies (f ∝ √λ)")
	const week = 7.0
	pages := e.reps(40000, 4000)
	horizonWeeks := 13.0
	run := func(pages int, scale float64, stream uint64) (uniform, nv, iv int) {
		rng := sim.NewRand(e.Seed, stream)
		// Rates per day: the change-interval mix Cho & Garcia-Molina measured on
		// 720,000 pages (VLDB 2000, Fig. 2): 23 % change at least daily, 15 %
		// between daily and weekly, 16 % weekly to monthly, 16 % monthly to
		// 4-monthly, 30 % less often; log-uniform within each class.
		classes := []struct{ share, lo, hi float64 }{
			{0.23, 1, 10}, {0.15, 1.0 / 7, 1}, {0.16, 1.0 / 30, 1.0 / 7}, {0.16, 1.0 / 120, 1.0 / 30}, {0.30, 1.0 / 730, 1.0 / 120},
		}
		rates := make([]float64, pages)
		events := make([][]float64, pages)
		for i := range rates {
			u := rng.Float64()
			k := 0
			for ; k < len(classes)-1 && u > classes[k].share; k++ {
				u -= classes[k].share
			}
			c := classes[k]
			rates[i] = scale * math.Exp(math.Log(c.lo)+rng.Float64()*(math.Log(c.hi)-math.Log(c.lo)))
			events[i] = sim.Poisson{Rate: rates[i]}.Events(rng, horizonWeeks*week+week, nil)
		}
		detect := func(ev, visits []float64) int {
			obs := sim.Observe(ev, visits, false, nil)
			d := 0
			for _, v := range obs {
				if v.Changed {
					d++
				}
			}
			return d
		}
		// uniform
		uniform = 0
		for i := range rates {
			vt := sim.Regular{Interval: week}.Times(nil, 0, horizonWeeks*week, nil)
			uniform += detect(events[i], vt)
		}
		policy := func(key string) int {
			est := make([]float64, pages)
			for i := range rates {
				vt := sim.Regular{Interval: week}.Times(nil, 0, 5*week, nil)
				obs := sim.Observe(events[i], vt, false, nil)
				var c estimators.Change
				for _, v := range obs {
					c.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed})
				}
				var out estimators.Estimates
				c.Estimate(5*week, cfg, &out)
				if x, ok := out.Get(key); ok {
					est[i] = x.Rate
				}
			}
			// remaining visits: the uniform policy makes 13 per page, 5 spent.
			remaining := horizonWeeks - 5
			freq := make([]float64, pages)
			estimators.Allocate(est, float64(pages)/week, freq)
			total := 0
			for i := range rates {
				vt := sim.Regular{Interval: week}.Times(nil, 0, 5*week, nil)
				if freq[i] > 0 {
					iv := 1 / freq[i]
					for t := 5*week + iv; t <= 5*week+remaining*week+1e-9; t += iv {
						vt = append(vt, t)
					}
				}
				total += detect(events[i], vt)
			}
			return total
		}
		nv = policy(estimators.KeyNaive)
		iv = policy(estimators.KeyCGMImproved)
		return uniform, nv, iv
	}
	uniform, nv, iv := run(pages, 1, 170)
	r.Table([]string{"policy", "paper: changes detected", "paper: % of uniform", "ours: changes detected", "ours: % of uniform"}, [][]string{
		{"Uniform", "2,147,589", "100 %", fmt.Sprint(uniform), "100 %"},
		{"Naive", "4,145,581", "193 %", fmt.Sprint(nv), pct(float64(nv) / float64(uniform))},
		{"Ours (cgm_improved)", "4,892,116", "228 %", fmt.Sprint(iv), pct(float64(iv) / float64(uniform))},
	})
	r.P("Simulated: %d pages with Poisson changes, rates drawn from the change-interval classes CGM measured on their 720,000 pages (VLDB 2000: 23 %% ≤ 1 day, 15 %% ≤ 1 week, 16 %% ≤ 1 month, 16 %% ≤ 4 months, 30 %% longer; log-uniform within a class, 10/day to 1/2 years; the per-page data are not available), "+
		"13 weeks, the same total number of visits under every policy (one per page per week on average); after 5 weekly visits the "+
		"crawler estimates λ with the project's `naive` or `cgm_improved` and allocates the remaining visits with `estimators.Allocate` (f ∝ √λ).", pages)
	// Cause experiment: the same crawler on the same population with every
	// rate scaled: if the gains follow the population, not the estimators.
	var scaled []string
	for k, sc := range []float64{1.0 / 3, 3} {
		u, n, i := run(e.reps(10000, 1000), sc, 171+uint64(k))
		scaled = append(scaled, fmt.Sprintf("rates ×%.2g: naive %s, improved %s of uniform", sc, pct(float64(n)/float64(u)), pct(float64(i)/float64(u))))
	}
	r.P("Population experiment (cause of the level difference): the same policies on the same rate classes with every rate scaled: %s.", strings.Join(scaled, "; "))
	pn, pi := float64(nv)/float64(uniform), float64(iv)/float64(uniform)
	r.Verdict("CGM Table I", "uniform 100 %, naive 193 %, ours 228 % (+18 % over naive)",
		fmt.Sprintf("naive %s, improved %s of uniform (+%.0f %% over naive)", pct(pn), pct(pi), 100*(float64(iv)/float64(nv)-1)),
		[]check{
			holds("uniform < naive < improved", uniform < nv && nv < iv, "the paper's ordering"),
			near("naive / uniform", pn, 1.93, 0.005, "the paper's rounding (sampling error < 0.5 % with 40000 pages)"),
			near("improved / naive", float64(iv)/float64(nv), 4892116.0/4145581, 0.005, "the paper's counts"),
		},
		"the per-page rates of CGM's 720,000 pages are not available; with the rate classes scaled by 1/3 or 3 the gains move to "+strings.Join(scaled, ", ")+
			": the levels are set by the rate population, the ordering is not.")
}
