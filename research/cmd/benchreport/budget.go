package main

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// heldInterval is the EMIT_INTERVAL of the live runs whose estimates are
// held back: far beyond the workload's four days of event time, so that
// each object publishes the estimate of its first observation only.
const heldInterval = "100000h"

// liveCPU is the median CPU per observation of a set of live runs, by
// process (µs), their median rate and their median ratio to kcat's rate
// (of per-run ratios, as the targets table has it).
type liveCPU struct{ agg, broker, redis, total, rate, byKcat float64 }

func medianLiveCPU(runs []liveResult) liveCPU {
	var a, b, r, t, q, k []float64
	for _, l := range runs {
		a, b, r = append(a, l.AggCPU), append(b, l.BrokerCPU), append(r, l.RedisCPU)
		t, q, k = append(t, l.AggCPU+l.BrokerCPU+l.RedisCPU), append(q, l.Rate), append(k, ratio(l.Rate, l.KcatRate))
	}
	return liveCPU{median(a), median(b), median(r), median(t), median(q), median(k)}
}

// writeLiveBudget writes where the live shape's CPU goes against what
// issue 13's live target allows on this machine: at liveTarget
// observations/s on cpus cores, the aggregator, the broker and Redis may
// spend cpus/liveTarget seconds of CPU per observation in all (if every
// core were theirs alone). The runs with the estimates held back measure
// the pipeline without the per-observation estimate (its computation, its
// JSON, its produce and the broker's storing it); the difference to the
// live runs is what the estimates cost.
func writeLiveBudget(p func(string, ...any), live, held []liveResult, cpus int) {
	budget := float64(cpus) / liveTarget * 1e6
	l, h := medianLiveCPU(live), medianLiveCPU(held)
	p("\n### The CPU budget of the live target\n\n")
	p("To commit %s observations/s on this machine's %d cores, the aggregator, the broker and Redis may spend **%.2f µs** of CPU\n", humanize.Comma(liveTarget), cpus, budget)
	p("per observation in all (and only if the cores were theirs alone). The same shape was run %d more time(s) with\n", len(held))
	p("`CHANGERATE_EMIT_INTERVAL=%s`: each object publishes the estimate of its first observation only, so the difference to the\n", heldInterval)
	p("runs above is what publishing every observation costs (computing and encoding the estimate, producing it, the broker\n")
	p("storing it); the rest (fetching and decoding observations, applying them, encoding and committing the states) remains.\n")
	p("Medians over the runs; reproduce with the command above (`-live-held-runs`).\n\n")
	p("| runs | obs/s | ÷ kcat | aggregator µs/obs | broker µs/obs | redis µs/obs | total µs/obs | total ÷ budget |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range []struct {
		name string
		m    liveCPU
		n    int
	}{{"every observation publishes", l, len(live)}, {"estimates held back", h, len(held)}} {
		p("| %s (%d) | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f× |\n", c.name, c.n, c.m.rate, c.m.byKcat, c.m.agg, c.m.broker, c.m.redis, c.m.total, c.m.total/budget)
	}
	p("| difference: the per-observation estimates | | | %.2f | %.2f | %.2f | %.2f | |\n\n", l.agg-h.agg, l.broker-h.broker, l.redis-h.redis, l.total-h.total)
	verdict := "fits within"
	if h.total > budget {
		verdict = fmt.Sprintf("is %.2f×", h.total/budget)
	}
	p("Without the per-observation estimates the pipeline spends %.2f µs per observation, which %s the budget of %.2f µs; Redis\n", h.total, verdict, budget)
	p("alone (one state write per object and batch: the commit script's `SET`, and an `MGET` for objects not cached) spends %.2f µs,\n", h.redis)
	p("%.0f %% of the budget.\n", 100*h.redis/budget)
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
