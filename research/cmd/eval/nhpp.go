package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/windows"
)

// windowAgg accumulates 001 Table 1–2 statistics.
type windowAgg struct {
	mse   map[string]*[3]float64 // state → summed MSE per model
	all   map[string]*[3][]float64
	count map[string]int
	beats [3][3]int // beats[i][j]: windows where model i has lower MSE than j
	best  [3]int
	total int
	// bySize[k]: {windows where Weibull beats both, windows} for window
	// sizes 4–9, 10–19, 20+ points
	bySize [3][2]int
}

func newWindowAgg() *windowAgg {
	return &windowAgg{mse: map[string]*[3]float64{}, all: map[string]*[3][]float64{}, count: map[string]int{}}
}

func (a *windowAgg) add(state string, origin float64, points []float64) {
	m, ok := windows.RetrospectiveMSE(origin, points)
	if !ok {
		return
	}
	for _, k := range []string{state, "total"} {
		if a.mse[k] == nil {
			a.mse[k] = &[3]float64{}
			a.all[k] = &[3][]float64{}
		}
		for i := range m {
			a.mse[k][i] += m[i]
			a.all[k][i] = append(a.all[k][i], m[i])
		}
		a.count[k]++
	}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if i != j && m[i] < m[j] {
				a.beats[i][j]++
			}
		}
		if m[i] < m[(i+1)%3] && m[i] < m[(i+2)%3] {
			a.best[i]++
		}
	}
	k := 0
	switch {
	case len(points) >= 20:
		k = 2
	case len(points) >= 10:
		k = 1
	}
	a.bySize[k][1]++
	if m[1] < m[0] && m[1] < m[2] {
		a.bySize[k][0]++
	}
	a.total++
}

// segmentObject feeds update points (ascending, > 0) to a windows.Segmenter
// and adds every closed window and the final one to agg.
func segmentObject(points []float64, cfg *windows.Config, agg *windowAgg) {
	if len(points) == 0 {
		return
	}
	var s windows.Segmenter
	origin := points[0]
	s.Event(origin, cfg)
	var cur []float64
	for _, t := range points[1:] {
		sh, ok := s.Event(t, cfg)
		cur = append(cur, t)
		if ok {
			cut := sh.After.Start
			var closed, rest []float64
			for _, p := range cur {
				if p <= cut {
					closed = append(closed, p)
				} else {
					rest = append(rest, p)
				}
			}
			agg.add(sh.Before.State.String(), origin, closed)
			origin, cur = cut, rest
		}
	}
	sum := s.Current(points[len(points)-1], cfg)
	agg.add(sum.State.String(), origin, cur)
}

// synthObject draws a piecewise Weibull process (days) of 3–5 segments.
func synthObject(rngSeed, stream uint64, horizon float64) ([]float64, sim.Piecewise) {
	rng := sim.NewRand(rngSeed, stream)
	k := 3 + rng.IntN(3)
	cuts := []float64{0, horizon}
	for i := 1; i < k; i++ {
		cuts = append(cuts, horizon*rng.Float64())
	}
	sort.Float64s(cuts)
	var p sim.Piecewise
	for i := 0; i+1 < len(cuts); i++ {
		d := cuts[i+1] - cuts[i]
		if d < 1 {
			continue
		}
		var beta float64
		switch rng.IntN(3) {
		case 0:
			beta = 1
		case 1:
			beta = 1.5 + 1.5*rng.Float64()
		default:
			beta = 0.3 + 0.4*rng.Float64()
		}
		m := 8 + 20*rng.Float64() // expected events in the segment
		p.Segments = append(p.Segments, sim.WeibullSegment{Duration: d, Beta: beta, Eta: d / math.Pow(m, 1/beta)})
	}
	ev := p.Events(rng, horizon, nil)
	return ev, p
}

func nhppSection(e *Env) {
	r := e.R
	r.H(2, "\"Estimating the rate of Web Page Updates\" (NHPP, Weibull/Duane windows)")
	wcfg := windows.DefaultConfig()
	models := windows.Models()
	horizon := 200.0 // days ("200 access units")
	nObj := e.reps(3000, 300)
	synth := newWindowAgg()
	aggs := make([]*windowAgg, e.Procs)
	parallel(e.Procs, e.Procs, func(p int) {
		aggs[p] = newWindowAgg()
		for i := p; i < nObj; i += e.Procs {
			ev, _ := synthObject(e.Seed, 900000+uint64(i), horizon)
			// last date of change, daily visits: one update point per day
			// at the last change of the day (§1.1)
			var pts []float64
			for _, t := range ev {
				if len(pts) > 0 && math.Floor(pts[len(pts)-1]) == math.Floor(t) {
					pts[len(pts)-1] = t
					continue
				}
				pts = append(pts, t)
			}
			segmentObject(pts, &wcfg, aggs[p])
		}
	})
	for _, a := range aggs {
		mergeAgg(synth, a)
	}
	real := newWindowAgg()
	realNote := ""
	if pages, _, err := readPHP(e.Data); err == nil {
		var names []string
		for k, v := range pages {
			if len(v) >= 30 {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		if e.Quick && len(names) > 300 {
			names = names[:300]
		}
		for _, n := range names {
			ev := pages[n]
			pts := make([]float64, len(ev))
			for i, t := range ev {
				pts[i] = t / 86400
			}
			segmentObject(pts, &wcfg, real)
		}
		realNote = fmt.Sprintf("Real: the %d php/doc-en pages with at least 30 changes (bulk commits removed), true change times in days as update points.", len(names))
	} else {
		realNote = "Real data skipped: " + err.Error()
		e.dataMissing = append(e.dataMissing, err.Error())
	}
	r.P("Synthetic: %d objects over %.0f days, each a piecewise Weibull process of 3–5 segments (constant β = 1, increasing β ∈ [1.5, 3], decreasing β ∈ [0.3, 0.7], "+
		"8–28 expected changes per segment), observed daily with Last-Modified (the last change of each day is the update point, §1.1). %s "+
		"Windows come from `windows.Segmenter` (its CUSUM/Crow-AMSAA segmentation, minimum 4 points); each window's MSE is `windows.RetrospectiveMSE` (§3.5: fit on the window, "+
		"regenerate the update points from MTBU ≈ 1/λ(t)).", nObj, horizon, realNote)
	// Table 1
	var rows [][]string
	for _, ds := range []struct {
		name string
		a    *windowAgg
	}{{"Synthetic", synth}, {"Real", real}} {
		for mi, m := range models {
			row := []string{ds.name, m}
			for _, st := range []string{"total", "constant", "increasing", "decreasing"} {
				if ds.a.count[st] == 0 {
					row = append(row, "—")
					continue
				}
				row = append(row, fmt.Sprintf("%.3g / %.3g (%d)", ds.a.mse[st][mi]/float64(ds.a.count[st]), quantile(ds.a.all[st][mi], 0.5), ds.a.count[st]))
			}
			rows = append(rows, row)
		}
	}
	r.H(3, "Table 1 — mean / median MSE (days²) by window type (windows in parentheses)")
	r.Table([]string{"data", "estimator", "total", "constant", "increasing", "decreasing"}, rows)
	r.P("Paper (Table 1, threshold 3): synthetic total Intuitive 3.587, Weibull 2.363, Duane 2.956; real 3.82, 2.2, 2.6 — Weibull lowest in every column. " +
		"Our absolute MSEs are larger because our synthetic rates and the real php/doc-en intervals (days to years) differ from the paper's data; " +
		"the means are dominated by a few windows where the unbiased Weibull λ̌(t) is tiny or huge (β̃ far from 1 with few points), which is why the " +
		"median and Table 2's per-window comparison tell a different story from the mean.")
	// Table 2
	rows = nil
	for _, ds := range []struct {
		name string
		a    *windowAgg
	}{{"Synthetic", synth}, {"Real", real}} {
		for i, m := range models {
			row := []string{ds.name, m, pct(float64(ds.a.best[i]) / float64(max(1, ds.a.total)))}
			for j := range models {
				if i == j {
					row = append(row, "")
				} else {
					row = append(row, pct(float64(ds.a.beats[i][j])/float64(max(1, ds.a.total))))
				}
			}
			rows = append(rows, row)
		}
	}
	r.H(3, "Table 2 — share of windows where the row estimator beats the column")
	r.Table([]string{"data", "row", "beats both (Rest)", "vs intuitive", "vs weibull", "vs duane"}, rows)
	r.P("Paper (Table 2): Weibull beats the rest in 91.5 %% (synthetic) and 96.1 %% (real) of windows; Intuitive 0.5 %% / 0 %%; Duane 6.2 %% / 2.3 %%.")
	wTot := func(a *windowAgg, i int) float64 {
		if a.count["total"] == 0 {
			return math.NaN()
		}
		return a.mse["total"][i] / float64(a.count["total"])
	}
	med := func(a *windowAgg, i int) float64 {
		if a.all["total"] == nil {
			return math.NaN()
		}
		return quantile(a.all["total"][i], 0.5)
	}
	// Cause experiment for the means: drop each model's largest 1 % of
	// window MSEs (the Weibull outliers) and compare the trimmed means.
	trim := func(a *windowAgg, i int) float64 {
		if a.all["total"] == nil {
			return math.NaN()
		}
		xs := append([]float64(nil), a.all["total"][i]...)
		sort.Float64s(xs)
		xs = xs[:len(xs)-len(xs)/100]
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(max(1, len(xs)))
	}
	r.P("Means without each model's largest 1 %% of window MSEs (synthetic): intuitive %.3g, weibull %.3g, duane %.3g; real: %.3g, %.3g, %.3g.",
		trim(synth, 0), trim(synth, 1), trim(synth, 2), trim(real, 0), trim(real, 1), trim(real, 2))
	lowest := func(f func(*windowAgg, int) float64, a *windowAgg) bool {
		return f(a, 1) < f(a, 0) && f(a, 1) < f(a, 2)
	}
	r.Verdict("001 Table 1", "Weibull has the lowest average (mean) MSE: synthetic 2.36 vs 3.59 intuitive, 2.96 Duane; real 2.2 vs 3.82, 2.6",
		fmt.Sprintf("mean MSE synthetic: intuitive %.3g, weibull %.3g, duane %.3g; real %.3g, %.3g, %.3g (medians beside: synthetic %.3g, %.3g, %.3g; real %.3g, %.3g, %.3g)",
			wTot(synth, 0), wTot(synth, 1), wTot(synth, 2), wTot(real, 0), wTot(real, 1), wTot(real, 2),
			med(synth, 0), med(synth, 1), med(synth, 2), med(real, 0), med(real, 1), med(real, 2)),
		[]check{
			holds("synthetic: Weibull has the lowest mean MSE", lowest(wTot, synth), "the paper's ordering of means (absolute MSEs depend on the data's time scale)"),
			holds("real: Weibull has the lowest mean MSE", lowest(wTot, real), "the paper's ordering of means"),
		},
		fmt.Sprintf("a few windows: without each model's largest 1 %% of window MSEs, the synthetic means are intuitive %.3g, weibull %.3g, duane %.3g (Weibull lowest: %v), "+
			"and the medians order Weibull first on synthetic data (%v); the unbiased λ̌(t) of §3.2 explodes in short windows with β̃ far from 1.",
			trim(synth, 0), trim(synth, 1), trim(synth, 2), lowest(trim, synth), lowest(med, synth)))
	share := func(a *windowAgg) float64 { return float64(a.best[1]) / float64(max(1, a.total)) }
	se := func(p float64, n int) float64 { return 2 * math.Sqrt(p*(1-p)/float64(max(1, n))) }
	sizeShare := func(a *windowAgg) string {
		var parts []string
		for k, name := range []string{"4–9", "10–19", "≥ 20"} {
			parts = append(parts, fmt.Sprintf("%s points: %s of %d", name, pct(float64(a.bySize[k][0])/float64(max(1, a.bySize[k][1]))), a.bySize[k][1]))
		}
		return strings.Join(parts, ", ")
	}
	r.P("Weibull best by window size — synthetic: %s; real: %s.", sizeShare(synth), sizeShare(real))
	r.Verdict("001 Table 2", "Weibull best in 91.5 % (synthetic) / 96.1 % (real) of windows",
		fmt.Sprintf("Weibull best in %s (synthetic) / %s (real)", pct(share(synth)), pct(share(real))),
		[]check{
			near("synthetic: share of windows where Weibull beats both", share(synth), 0.915, 0.0005+se(0.915, synth.total), "the paper's rounding ± 2·SE (binomial)"),
			near("real: share of windows where Weibull beats both", share(real), 0.961, 0.0005+se(0.961, real.total), "the paper's rounding ± 2·SE"),
		}, fmt.Sprintf("partly window size: the share grows with the points per window (synthetic %s; real %s): the real data's many short windows "+
			"explain most of its gap; windows of 20 points or more still stay a few points below the paper's share, and the paper's window sizes and synthetic "+
			"generator are not reported, so the rest is not isolated.", sizeShare(synth), sizeShare(real)))

	// Table 3: next-update prediction.
	r.H(3, "Table 3 — next-update prediction: observed / unobserved updates and premature visits")
	nPred := e.reps(1000, 150)
	runs := func(v predictVariant) [3]crawlCounts {
		res := make([][3]crawlCounts, nPred)
		parallel(nPred, e.Procs, func(i int) {
			ev, p := synthObject(e.Seed, 950000+uint64(i), horizon)
			if v.single > 0 {
				ev, p = singleObject(e.Seed, 960000+uint64(i), horizon, v.single)
			}
			if len(ev) < 5 {
				return
			}
			vv := v
			if v.name == "oracle" {
				vv.oracle = p.RateAt
			}
			for mi := 0; mi < 3; mi++ {
				res[i][mi] = predictCrawl(ev, mi, &wcfg, horizon, vv)
			}
		})
		var tot [3]crawlCounts
		for _, x := range res {
			for mi := range tot {
				tot[mi].obs += x[mi].obs
				tot[mi].unobs += x[mi].unobs
				tot[mi].prem += x[mi].prem
				tot[mi].total += x[mi].total
				tot[mi].visits += x[mi].visits
				tot[mi].mismatch += x[mi].mismatch
			}
		}
		return tot
	}
	obsShare := func(c crawlCounts) float64 { return float64(c.obs) / float64(max(1, c.total)) }
	tot := runs(predictVariant{name: "paper"})
	rows = nil
	for mi, m := range models {
		t := tot[mi]
		rows = append(rows, []string{m, pct(float64(t.unobs) / float64(max(1, t.total))), pct(obsShare(t)), fmt.Sprint(t.prem), pct(float64(t.prem) / float64(max(1, t.visits)))})
	}
	r.Table([]string{"estimator", "% unobserved", "% observed", "# premature visits", "premature / visits"}, rows)
	// Cause experiments: change one thing at a time.
	variants := []predictVariant{
		{name: "Duane with the instantaneous MTBU e^a·t^γ/(1−γ) (this report's code before issue 16)", duaneInstantaneous: true},
		{name: "α = 1 in every window state (no 0.7 bound)", alphaOne: true},
		{name: "Weibull and Duane MTBU bounded within 10× of t/N(t) (windows.MaxRateRatio)", bounded: true},
		{name: "one increasing segment (β = 2, no transitions)", single: 2},
		{name: "one decreasing segment (β = 0.5, no transitions)", single: 0.5},
		{name: "one constant segment (β = 1)", single: 1},
		{name: "oracle", oracle: func(float64) float64 { return 0 }},
	}
	var vrows [][]string
	vres := map[string][3]crawlCounts{}
	for _, v := range variants {
		t := runs(v)
		vres[v.name] = t
		label := v.name
		if v.name == "oracle" {
			label = "oracle: MTBU = 1/λ(t_cur) of the true process (same for every column)"
		}
		row := []string{label}
		for mi := range models {
			row = append(row, fmt.Sprintf("%s / %d of %d", pct(obsShare(t[mi])), t[mi].prem, t[mi].visits))
		}
		vrows = append(vrows, row)
	}
	r.P("Cause experiments (one change at a time; cells: %% observed / premature visits of all visits):")
	r.Table([]string{"variant", "intuitive", "weibull", "duane"}, vrows)
	mism := tot[0].mismatch + tot[1].mismatch + tot[2].mismatch
	or := vres["oracle"][0]
	r.P("Synthetic, %d objects (%d updates). The crawler starts at the first update, then visits at t_next = t_cur + α·MTBU(t_cur) from the current window "+
		"(α = %.1f for decreasing windows, %.1f otherwise, `windows.Config`); a visit with no change since the last visit is premature, a visit after k changes "+
		"observes one (the Last-Modified one) and misses k − 1. Per-model MTBU: intuitive t/N(t); Weibull 1/λ̌(t) with β̃ from `windows.Summary`; Duane the paper's "+
		"MTBU(t) = α·t^γ from the least-squares fit of log(t_i/i) on log t_i over the window (§3.3–3.4). As in the paper the windows are built from the "+
		"update-point sequence itself (every update up to the visit is fed to `windows.Segmenter`; the crawler's copy of the window and the stream's disagreed on the "+
		"number of points at %d of its predictions). Paper (Table 3, synthetic): observed 58.6 %% / 76 %% / 88.3 %%, premature visits rising in the same order.\n\n"+
		"Investigation (issue 16), down to the code. Two defects of this report's predictor were found and fixed: (1) the Duane predictor used the "+
		"instantaneous MTBU e^a·t^γ/(1−γ) of the fitted power law instead of the paper's MTBU(t) = α·t^γ (§3.3; `windows` publishes the same cumulative form) "+
		"(first experiment row: the old behaviour); (2) the crawler's copy of the window was cut by comparing absolute times with the stream's float32 τ, so the "+
		"point at τ stayed in the copy and λ̌ combined β̃ of one point set with n and t_n of another in about 15 %% of the predictions; the copy is now the "+
		"stream's own last n points (0 disagreements above). `windows.Summary.NextUpdate` itself (asOf + α/rate) was checked and is not involved. "+
		"What remains is not a code error: on single segments without transitions the predictors trade observed updates against premature visits "+
		"(increasing β = 2: Weibull observes the most and visits the most; decreasing β = 0.5: it visits the least), and the constant segment gives ≈ 1 − e^{−1} "+
		"for every model; only across transitions between segments are Weibull and Duane dominated, which is the failure the paper itself names "+
		"(\"it overestimates (underestimates) the prediction during the transition\"). The oracle row visits one true MTBU after each visit: %s of the updates "+
		"observed with %s of the visits premature — even perfect knowledge of λ(t) observes little more than 1 − e^{−1}, so the paper's 76–88 %% require "+
		"predictions much shorter than 1/λ(t) on its (unspecified) synthetic data. Our unit test checks the mechanism: on a homogeneous Poisson process each "+
		"predictor observes 1 − e^{−1} ≈ 63 %% of the updates.",
		nPred, tot[0].total, wcfg.AlphaDecreasing, wcfg.Alpha, mism, pct(obsShare(or)), pct(float64(or.prem)/float64(max(1, or.visits))))
	inst := vres[variants[0].name]
	inc := vres[variants[3].name]
	r.Verdict("001 Table 3", "observed: Duane 88 % > Weibull 76 % > Intuitive 59 %; premature visits in the same order",
		fmt.Sprintf("observed: intuitive %s, weibull %s, duane %s; premature %d / %d / %d",
			pct(obsShare(tot[0])), pct(obsShare(tot[1])), pct(obsShare(tot[2])), tot[0].prem, tot[1].prem, tot[2].prem),
		[]check{
			holds("observed: Duane > Weibull", tot[2].obs*tot[1].total > tot[1].obs*tot[2].total, "the paper's ordering"),
			holds("observed: Weibull > Intuitive", tot[1].obs*tot[0].total > tot[0].obs*tot[1].total, "the paper's ordering"),
			holds("premature: Duane > Weibull > Intuitive", tot[2].prem > tot[1].prem && tot[1].prem > tot[0].prem, "the paper's ordering"),
		},
		fmt.Sprintf("the two code defects found (Duane's instantaneous MTBU: observed %s, premature %d before the fix; the window copy) are fixed; on one increasing "+
			"segment Weibull observes %s against intuitive %s, so the models work where the window is consistent; the losses come from the transitions between "+
			"segments (the paper's own caveat), and even the oracle observes only %s on these processes (the paper's generator is not specified).",
			pct(obsShare(inst[2])), inst[2].prem, pct(obsShare(inc[1])), pct(obsShare(inc[0])), pct(obsShare(or))))
}

func mergeAgg(dst, src *windowAgg) {
	for k, v := range src.mse {
		if dst.mse[k] == nil {
			dst.mse[k] = &[3]float64{}
			dst.all[k] = &[3][]float64{}
		}
		for i := range v {
			dst.mse[k][i] += v[i]
			dst.all[k][i] = append(dst.all[k][i], src.all[k][i]...)
		}
		dst.count[k] += src.count[k]
	}
	for i := range src.beats {
		for j := range src.beats[i] {
			dst.beats[i][j] += src.beats[i][j]
		}
		dst.best[i] += src.best[i]
	}
	for k := range src.bySize {
		dst.bySize[k][0] += src.bySize[k][0]
		dst.bySize[k][1] += src.bySize[k][1]
	}
	dst.total += src.total
}
