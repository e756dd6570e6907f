package windowseval

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/windows"
)

// An honest evaluation of the window estimators — data not drawn
// from the Weibull family, out-of-sample scoring, mean and median side by
// side — and the detection delays beside the CUSUM optimum.

// phpHistoryPath is the real change history of the PHP manual (one line per
// file and commit: path<TAB>unix time), read in place.
const phpHistoryPath = "../../../shared/data/php-doc-en-history/git-file-changes.tsv.gz"

// loadPHPHistories returns the sorted change times of every file with at
// least minChanges distinct change times.
func loadPHPHistories(minChanges int) (map[string][]float64, error) {
	f, err := os.Open(phpHistoryPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	h := map[string][]float64{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		path, ts, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			continue
		}
		h[path] = append(h[path], float64(v))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for p, ts := range h {
		sort.Float64s(ts)
		u := ts[:0]
		for i, x := range ts {
			if i == 0 || x > u[len(u)-1] {
				u = append(u, x)
			}
		}
		if len(u) < minChanges {
			delete(h, p)
			continue
		}
		h[p] = u
	}
	return h, nil
}

// piecewiseLinear draws a Poisson process whose intensity is linear
// between knots every span seconds, with knot levels drawn log-uniformly in
// [lo, hi] per second (thinning, Lewis & Shedler 1979).
func piecewiseLinear(seed uint64, knots int, span, lo, hi float64) []float64 {
	rng := sim.NewRand(seed, 21)
	lv := make([]float64, knots+1)
	for i := range lv {
		lv[i] = lo * math.Exp(rng.Float64()*math.Log(hi/lo))
	}
	var out []float64
	for k := 0; k < knots; k++ {
		a, b := lv[k], lv[k+1]
		m := math.Max(a, b)
		t := 0.0
		for {
			t += rng.ExpFloat64() / m
			if t > span {
				break
			}
			if rng.Float64()*m <= a+(b-a)*t/span {
				out = append(out, float64(k)*span+t)
			}
		}
	}
	return out
}

// oosResult holds the out-of-sample errors of one data set: for each
// checkpoint, |predicted − actual| updates in the next horizon, by
// predictor (intuitive, weibull, duane, published window rate, whole
// history N/t).
type oosResult struct {
	name string
	errs [5][]float64
	logs [5][]float64
}

var oosNames = [5]string{"intuitive", "weibull", "duane", "window (published)", "whole history N/t"}

// outOfSample runs a Segmenter over each event list (absolute, sorted) and, at
// every horizon-th... checkpoint c_j = first + j·horizon after warm-up
// points, predicts the updates in (c_j, c_j + horizon] from the rates at
// c_j (rate·horizon) and compares with the actual count. Predictions use
// only the points up to c_j.
func outOfSample(name string, lists [][]float64, horizon float64, cfg *windows.Config) oosResult {
	res := oosResult{name: name}
	for _, ev := range lists {
		if len(ev) < 8 {
			continue
		}
		var s windows.Segmenter
		first := ev[0]
		s.Event(first, cfg)
		i := 1
		for c := first + horizon; c+horizon <= ev[len(ev)-1]; c += horizon {
			for i < len(ev) && ev[i] <= c {
				s.Event(ev[i], cfg)
				i++
			}
			if i < 5 {
				continue
			}
			actual := 0.0
			for j := i; j < len(ev) && ev[j] <= c+horizon; j++ {
				actual++
			}
			sum := s.Current(c, cfg)
			var pred [5]float64
			var ok [5]bool
			for m := 0; m < 3; m++ {
				pred[m], ok[m] = sum.Rates[m]*horizon, sum.HasRates[m]
			}
			pred[3], ok[3] = sum.Rate*horizon, sum.HasRate
			pred[4], ok[4] = float64(i-1)/(c-first)*horizon, true
			if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
				continue // score only where every predictor is defined
			}
			for m := range pred {
				res.errs[m] = append(res.errs[m], math.Abs(pred[m]-actual))
				res.logs[m] = append(res.logs[m], math.Abs(math.Log((pred[m]+0.5)/(actual+0.5))))
			}
		}
	}
	return res
}

func meanMedian(x []float64) (mean, med float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	for _, v := range s {
		mean += v / float64(len(s))
	}
	if n := len(s); n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return mean, med
}

// nonWeibullSets returns the evaluation data sets: name, event lists and
// the scoring horizon (about ten mean gaps).
func nonWeibullSets(objects int) []struct {
	name    string
	lists   [][]float64
	horizon float64
} {
	type set = struct {
		name    string
		lists   [][]float64
		horizon float64
	}
	var out []set
	const t0 = 1.7e9
	shift := func(ev []float64) []float64 {
		for i := range ev {
			ev[i] += t0
		}
		return ev
	}
	// gamma renewal: shape 0.5 (bursty) and 3 (regular), one per hour
	for _, shape := range []float64{0.5, 3} {
		var ls [][]float64
		for o := 0; o < objects; o++ {
			g := sim.GammaRenewal{Rate: 1.0 / 3600, Shape: shape}
			ls = append(ls, shift(g.Events(sim.NewRand(uint64(o), 31), 600*3600, nil)))
		}
		out = append(out, set{fmt.Sprintf("gamma renewal, shape %.1f, 1/h", shape), ls, 10 * 3600})
	}
	// periodic NHPP: daily cycle, peak/trough 7, mean 1/h (Matloff §5.5)
	{
		lv := make([]float64, 24)
		for h := range lv {
			lv[h] = (1 + 0.75*math.Cos(2*math.Pi*(float64(h)+0.5-14)/24)) / 3600
		}
		var ls [][]float64
		for o := 0; o < objects; o++ {
			ls = append(ls, shift(sim.Periodic{Period: 86400, Levels: lv}.Events(sim.NewRand(uint64(o), 32), 600*3600, nil)))
		}
		out = append(out, set{"periodic NHPP, daily cycle ×7, mean 1/h", ls, 10 * 3600})
	}
	// piecewise-linear intensity: knots every 100 h, levels in [0.25, 4]/h
	{
		var ls [][]float64
		for o := 0; o < objects; o++ {
			ls = append(ls, shift(piecewiseLinear(uint64(o), 6, 100*3600, 0.25/3600, 4.0/3600)))
		}
		out = append(out, set{"piecewise-linear intensity, 0.25–4/h, knots every 100 h", ls, 10 * 3600})
	}
	return out
}

// extendedReport writes the CUSUM-optimum comparison (section 3b) of
// docs/windows-eval.md; fa is the measured false-alarm rate per object over
// 1,000 events (section 2).
func extendedReport(t *testing.T, p func(string, ...any), cfg *windows.Config, fa float64) {
	// 3b. Lorden
	arl := 1000 / -math.Log1p(-fa) // events to a false alarm (geometric)
	p("\n### 3b. Beside the CUSUM optimum (Lorden)\n\n")
	p("Lorden (1971) showed the CUSUM tuned to the true post-change rate minimises the worst-case mean delay among\n")
	p("detectors with the same mean run length to a false alarm (ARL₀), and that delay ≈ ln(ARL₀)/I as ARL₀ → ∞, where\n")
	p("I is the Kullback–Leibler information per post-change update point: for a Poisson rate moving from λ to ρλ,\n")
	p("I = ln ρ − 1 + 1/ρ nats. The measured false-alarm rate of section 2 (%.2f %% of objects within 1,000 points) is an\n", 100*fa)
	p("ARL₀ of about %.0f points (geometric); the detector is one CUSUM tuned to ρ = 2 for every shift size.\n\n", arl)
	p("| step | I (nats/point) | Lorden delay ln(ARL₀)/I | measured mean | measured median | mean / optimum |\n|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		ratio float64
		up    bool
	}{{2, true}, {2, false}, {4, true}, {4, false}} {
		rho := c.ratio
		dir := "up"
		if !c.up {
			rho, dir = 1/c.ratio, "down"
		}
		info := math.Log(rho) - 1 + 1/rho
		opt := math.Log(arl) / info
		r := detectionDelay(1000, c.ratio, c.up, cfg)
		p("| %.0f× %s | %.3f | %.1f | %.1f | %.0f | %.2f |\n", c.ratio, dir, info, opt, r.mean, r.median, r.mean/opt)
	}
	p("\nThe 2× rows are within a few points of the optimum (the detector is tuned to them); a 4× step is detected later\n")
	p("than by a CUSUM tuned to 4× would, the price of one detector for every shift size. The aggregator's alerts add\n")
	p("the seasonal baseline and the false-discovery-rate filter on top (docs/alerts.md); their false alarms and delays\n")
	p("on seasonal traffic, beside the same optimum, and the NASA day before and after are in docs/alerts-eval.md.\n")

}

// outOfSampleReport writes section 6 of docs/windows-eval.md.
func outOfSampleReport(t *testing.T, p func(string, ...any), cfg *windows.Config) {
	sets := nonWeibullSets(200)
	php, err := loadPHPHistories(30)
	if err != nil {
		t.Logf("php-doc histories not available (%v): section 6 without them", err)
	} else {
		var ls [][]float64
		keys := make([]string, 0, len(php))
		for k := range php {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ls = append(ls, php[k])
		}
		sets = append(sets, struct {
			name    string
			lists   [][]float64
			horizon float64
		}{fmt.Sprintf("php-doc-en git history, %d files with ≥ 30 changes", len(ls)), ls, 90 * 86400})
	}
	p("\n## 6. Out-of-sample accuracy on data not from the Weibull family\n\n")
	p("Each object's points are fed to a Segmenter online; at checkpoints every horizon H (≈ 10 mean gaps; 90 days for\n")
	p("php-doc) each predictor forecasts the number of update points in the next H from the points up to the\n")
	p("checkpoint only (rate at the checkpoint × H) and is scored against the actual count. Predictors: the current\n")
	p("window's intuitive, Weibull and Duane rates (001 §3), the window rate the aggregator publishes (lowest\n")
	p("prequential MSE), and the whole-history rate N/t. Checkpoints where a window estimator is undefined are skipped.\n")
	p("Errors: |predicted − actual| (points) and |ln((predicted + ½)/(actual + ½))|, mean and median side by side.\n\n")
	p("Data: gamma renewal processes (not Poisson), a periodic NHPP (Matloff §5.5), a piecewise-linear intensity, each\n")
	p("200 objects × 600 hours; the real change history of the PHP manual (git commits per file, ../shared/data).\n\n")
	for _, s := range sets {
		r := outOfSample(s.name, s.lists, s.horizon, cfg)
		p("**%s** (%d checkpoints)\n\n| predictor | mean abs error | median abs error | mean abs log error | median abs log error |\n|---|---|---|---|---|\n",
			s.name, len(r.errs[0]))
		bestMean, bestMed := 0, 0
		var means, meds [len(oosNames)]float64
		for m := range oosNames {
			me, md := meanMedian(r.errs[m])
			le, ld := meanMedian(r.logs[m])
			means[m], meds[m] = me, md
			if me < means[bestMean] {
				bestMean = m
			}
			if md < meds[bestMed] {
				bestMed = m
			}
			p("| %s | %.2f | %.2f | %.3f | %.3f |\n", oosNames[m], me, md, le, ld)
		}
		p("\nLowest mean absolute error: %s; lowest median: %s.", oosNames[bestMean], oosNames[bestMed])
		if means[1] > 10*meds[1]+10 || means[2] > 10*meds[2]+10 {
			p(" The Weibull or Duane mean is more than ten times its median: a few extrapolations explode (a window ending\n")
			p("in a burst extrapolates its power law; the published window rate bounds such rates by MaxRateRatio × N(t)/t).")
		}
		p("\n\n")
	}
}

// TestOutOfSampleSmoke checks the out-of-sample scorer against known
// truth: on a homogeneous Poisson process of one point per hour scored over
// 10-hour horizons, the whole-history predictor's mean absolute error is
// close to the Poisson mean absolute deviation of a Poisson(10) count
// (≈ 2.52), within 10 %.
func TestOutOfSampleSmoke(t *testing.T) {
	cfg := windows.DefaultConfig()
	var ls [][]float64
	for o := 0; o < 100; o++ {
		ev := sim.Poisson{Rate: 1.0 / 3600}.Events(sim.NewRand(uint64(o), 41), 400*3600, nil)
		for i := range ev {
			ev[i] += 1.7e9
		}
		ls = append(ls, ev)
	}
	r := outOfSample("poisson", ls, 10*3600, &cfg)
	me, _ := meanMedian(r.errs[4])
	// E|X − 10| for X ~ Poisson(10) = 2·e^{−10}·10^{11}/10! ≈ 2.5021
	if math.Abs(me/2.5021-1) > 0.10 {
		t.Errorf("whole-history mean abs error %.3f, want 2.50 ± 10 %%", me)
	}
	if len(r.errs[0]) < 3000 {
		t.Errorf("%d checkpoints scored", len(r.errs[0]))
	}
}
