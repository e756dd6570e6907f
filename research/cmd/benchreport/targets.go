package main

import "fmt"

// liveTarget is issue 13's live-crawl throughput, observations/s.
const liveTarget = 300_000

// target is one of issue 13's figures: what is measured, the bound, and
// whether this run's number meets it. Each verdict is computed from the
// run's numbers; the bounds are the issue's, without tolerance.
type target struct {
	what, bound, measured string
	met                   bool
}

// targets returns issue 13's targets that benchreport measures (the
// estimate and cache benchmarks are judged by scripts/bench.sh after its
// go test -bench runs).
func (r *report) targets() []target {
	var ts []target
	if len(r.live) > 0 {
		rates, ratios := make([]float64, len(r.live)), make([]float64, len(r.live))
		for i, l := range r.live {
			rates[i], ratios[i] = l.Rate, ratio(l.Rate, l.KcatRate)
		}
		m, q := median(rates), median(ratios)
		ts = append(ts,
			target{"live-crawl shape, every observation publishing (median obs/s)", "≥ 300,000", fmt.Sprintf("%.0f", m), m >= liveTarget},
			target{"live-crawl shape ÷ kcat reading the same topic (median of per-run ratios)", "≥ 0.5", fmt.Sprintf("%.2f", q), q >= 0.5})
	}
	if len(r.pipeline) > 0 {
		pr := median(rates(r.pipeline))
		ts = append(ts, target{"history-replay shape (median obs/s)", "≥ 500,000", fmt.Sprintf("%.0f", pr), pr >= 500_000})
		pt := cpuMedian(r.pipeline)
		for _, d := range []struct {
			name string
			rs   []runResult
		}{{"naive GET + Lua", r.naive}, {"naive cached (1 round trip)", r.naiveCache}} {
			if len(d.rs) == 0 {
				continue
			}
			x := cpuMedian(d.rs)[2] / pt[2]
			ts = append(ts, target{d.name + " ÷ pipeline, total CPU per observation", "≥ 10×", fmt.Sprintf("%.1f×", x), x >= 10})
		}
	}
	if lg := r.liveLarge; lg != nil && lg.Objects > 0 {
		b := float64(lg.PeakRSS) / float64(lg.Objects)
		ts = append(ts, target{fmt.Sprintf("aggregator peak RSS per object, live shape, %d objects", lg.Objects), "≤ 1,000 B", fmt.Sprintf("%.0f B", b), b <= 1000})
	}
	if len(r.liveLat) > 0 {
		m := medianP99(r.liveLat)
		ts = append(ts, target{fmt.Sprintf("p99 produce-to-estimate at half the live rate, producer in its own process (median of %d runs)", len(r.liveLat)),
			fmt.Sprintf("≤ %.0f ms", liveLatencyTarget), fmt.Sprintf("%.1f ms", m), m <= liveLatencyTarget})
	}
	return ts
}

// writeTargets writes the targets table.
func writeTargets(p func(string, ...any), ts []target) {
	if len(ts) == 0 {
		return
	}
	p("## Issue 13's targets in this run\n\n")
	p("Each verdict is computed from this run's numbers against the issue's bound (no tolerance); the sections below give\n")
	p("the runs. The estimate's cost (≤ 2 µs) and the cache's bytes per object (≤ 400 B) come from `go test -bench`, judged at\n")
	p("the end of the report. `make bench` regenerates this table; `-live-only` and `-pipeline-only` do not.\n\n")
	p("| target | bound | measured | verdict |\n|---|---:|---:|---|\n")
	for _, t := range ts {
		v := "✗ not met"
		if t.met {
			v = "✓ met"
		}
		p("| %s | %s | %s | %s |\n", t.what, t.bound, t.measured, v)
	}
	p("\n")
}

// medianP99 is the median over runs of their p99 latency, ms.
func medianP99(runs []latResult) float64 {
	p99s := make([]float64, len(runs))
	for i, lr := range runs {
		p99s[i] = lr.Recv[2]
	}
	return median(p99s)
}
