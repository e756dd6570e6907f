package main

import (
	"math"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/windows"
)

// predictVariant changes one thing in predictCrawl, for the cause
// experiments of Table 3.
type predictVariant struct {
	name string
	// duaneInstantaneous uses the Duane fit's instantaneous MTBU
	// e^a·t^γ/(1−γ) instead of the paper's cumulative MTBU(t) = α·t^γ (§3.3).
	duaneInstantaneous bool
	// alphaOne predicts with α = 1 in every window state (the paper's
	// Table 3 is before its α = 0.7 bound for decreasing windows).
	alphaOne bool
	// oracle, when set, is the true intensity λ(t): MTBU = 1/λ(t_cur).
	oracle func(t float64) float64
	// fixed, when > 0, visits every fixed days (no prediction).
	fixed float64
	// single, when > 0, replaces the piecewise objects by one Weibull
	// segment of shape single over the whole horizon (no transitions).
	single float64
	// bounded clamps the Weibull and Duane MTBU to within
	// windows.MaxRateRatio of the intuitive t/N(t), the bound the windows
	// package applies to the rates it publishes.
	bounded bool
}

type crawlCounts struct{ obs, unobs, prem, total, visits, mismatch int }

// predictCrawl runs the §5 prediction experiment with model mi (0
// intuitive, 1 weibull, 2 duane) over the update points ev (days). As in the
// paper, the windows are built from the update-point sequence itself (the
// observation space); the crawler at its latest observed update t_cur visits
// at t_next = t_cur + α·MTBU(t_cur). A visit before the next update is
// premature (the crawler then predicts again from the visit); a visit after
// k ≥ 1 updates observes the last of them and misses k − 1.
func predictCrawl(ev []float64, mi int, cfg *windows.Config, horizon float64, v predictVariant) (out crawlCounts) {
	var s windows.Segmenter
	s.Event(ev[0], cfg)
	start := ev[0]
	var win []float64 // absolute times of the current window's points
	fed := 1
	feed := func(upto float64) {
		for fed < len(ev) && ev[fed] <= upto {
			t := ev[fed]
			sh, cut := s.Event(t, cfg)
			if n := s.Current(t, cfg).Points; cut || int(n) != len(win)+1 {
				// The stream's window holds its own last n points (a cut
				// keeps the pending points after τ; a point at the same
				// float32 local time as the previous one is ignored):
				// take the crawler's copy from the stream, not from a
				// comparison of absolute times with the float32 τ.
				all := append(win, t)
				if int(n) <= len(all) {
					win = append([]float64(nil), all[len(all)-int(n):]...)
				}
				if cut {
					start = sh.After.Start
				}
				fed++
				continue
			}
			win = append(win, t)
			fed++
		}
	}
	last := ev[0]
	for steps := 0; steps < 100000; steps++ {
		sum := s.Current(last, cfg)
		if int(sum.Points) != len(win) {
			out.mismatch++
		}
		n := float64(len(win))
		tl := last - start
		mtbu := math.NaN()
		if n > 0 && tl > 0 {
			mtbu = tl / n // intuitive, and the fallback
		}
		if n >= 4 && tl > 0 {
			switch mi {
			case 1:
				if sum.HasWeibull {
					b := sum.Beta
					tn := win[len(win)-1] - start
					// λ̌(t) = ((n−3)n/(n−2))·β̃·t^{β̃−1}/t_n^{β̃} (§3.2)
					lam := (n - 3) / (n - 2) * n * b * math.Pow(tl, b-1) / math.Pow(tn, b)
					mtbu = 1 / lam
				}
			case 2:
				// Duane plot (§3.3–3.4): least squares of log(t_i/i) on log t_i,
				// MTBU(t) = α·t^γ with log α = a, γ = b.
				var sx, sy, sxx, sxy float64
				for i, p := range win {
					t := p - start
					x, y := math.Log(t), math.Log(t/float64(i+1))
					sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
				}
				b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
				a := (sy - b*sx) / n
				switch {
				case !v.duaneInstantaneous:
					mtbu = math.Exp(a) * math.Pow(tl, b)
				case b < 1:
					mtbu = math.Exp(a) * math.Pow(tl, b) / (1 - b)
				}
			}
		}
		if v.bounded && n > 0 && tl > 0 {
			mi := tl / n
			mtbu = math.Max(mi/windows.MaxRateRatio, math.Min(mi*windows.MaxRateRatio, mtbu))
		}
		if v.oracle != nil {
			if l := v.oracle(last); l > 0 {
				mtbu = 1 / l
			} else {
				mtbu = math.Inf(1)
			}
		}
		if !(mtbu > 0) || math.IsInf(mtbu, 0) {
			mtbu = 1
		}
		alpha := cfg.Alpha
		if sum.State == windows.Decreasing && !v.alphaOne {
			alpha = cfg.AlphaDecreasing
		}
		step := alpha * mtbu
		if v.fixed > 0 {
			step = v.fixed
		}
		next := last + math.Max(step, 1e-3)
		if next > horizon || next > ev[len(ev)-1] {
			break
		}
		out.visits++
		k := sim.Count(ev, last, next)
		if k == 0 {
			out.prem++
		} else {
			out.obs++
			out.unobs += k - 1
			feed(next)
		}
		last = next
	}
	out.total = out.obs + out.unobs
	return out
}

// singleObject is one Weibull segment of shape beta over the horizon with
// 20–60 expected updates: a window without transitions.
func singleObject(seed, stream uint64, horizon, beta float64) ([]float64, sim.Piecewise) {
	rng := sim.NewRand(seed, stream)
	m := 20 + 40*rng.Float64()
	p := sim.Piecewise{Segments: []sim.WeibullSegment{{Duration: horizon, Beta: beta, Eta: horizon / math.Pow(m, 1/beta)}}}
	return p.Events(rng, horizon, nil), p
}
