package main

import (
	"testing"
	"time"
)

// TestTargets checks that each of issue 13's verdicts follows its numbers:
// on either side of every bound, and that a figure not measured in the run
// gets no row.
func TestTargets(t *testing.T) {
	run := func(obs int64, secs, procCPU, redisCPU float64) runResult {
		return runResult{Committed: obs, Elapsed: time.Duration(secs * float64(time.Second)), ProcCPU: procCPU, RedisCPU: redisCPU}
	}
	lat := func(p99 float64) latResult { return latResult{Recv: [4]float64{10, 20, p99, 2 * p99}} }
	for _, c := range []struct {
		name string
		r    report
		want map[string]bool // row (target's what) → met
	}{
		{"all met", report{
			live:      []liveResult{{Rate: 310_000, KcatRate: 600_000}, {Rate: 320_000, KcatRate: 610_000}},
			pipeline:  []runResult{run(1_000_000, 1.9, 3, 1)}, // 526k obs/s, 4 µs/obs
			naive:     []runResult{run(100_000, 1, 3, 1.1)},   // 41 µs/obs: 10.25×
			liveLarge: &liveResult{Objects: 1_000_000, PeakRSS: 999_000_000},
			liveLat:   []latResult{lat(300), lat(100), lat(249)}, // median 249
		}, map[string]bool{
			"live-crawl shape, every observation publishing (median obs/s)":                                 true,
			"live-crawl shape ÷ kcat reading the same topic (median of per-run ratios)":                     true,
			"history-replay shape (median obs/s)":                                                           true,
			"naive GET + Lua ÷ pipeline, total CPU per observation":                                         true,
			"aggregator peak RSS per object, live shape, 1000000 objects":                                   true,
			"p99 produce-to-estimate at half the live rate, producer in its own process (median of 3 runs)": true,
		}},
		{"none met", report{
			live:      []liveResult{{Rate: 150_000, KcatRate: 500_000}},
			pipeline:  []runResult{run(1_000_000, 2.1, 3, 1)}, // 476k obs/s
			naive:     []runResult{run(100_000, 1, 2.9, 1)},   // 39 µs/obs: 9.75×
			liveLarge: &liveResult{Objects: 1_000_000, PeakRSS: 1_001_000_000},
			liveLat:   []latResult{lat(251)},
		}, map[string]bool{
			"live-crawl shape, every observation publishing (median obs/s)":                                 false,
			"live-crawl shape ÷ kcat reading the same topic (median of per-run ratios)":                     false,
			"history-replay shape (median obs/s)":                                                           false,
			"naive GET + Lua ÷ pipeline, total CPU per observation":                                         false,
			"aggregator peak RSS per object, live shape, 1000000 objects":                                   false,
			"p99 produce-to-estimate at half the live rate, producer in its own process (median of 1 runs)": false,
		}},
		{"nothing measured", report{}, map[string]bool{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]bool{}
			for _, tg := range c.r.targets() {
				got[tg.what] = tg.met
			}
			if len(got) != len(c.want) {
				t.Errorf("%d rows, want %d: %v", len(got), len(c.want), got)
			}
			for what, met := range c.want {
				if g, ok := got[what]; !ok || g != met {
					t.Errorf("%q: met %v (row present %v), want %v", what, g, ok, met)
				}
			}
		})
	}
}

func TestPollWait(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		done, want float64
		elapsed    time.Duration
		wait       time.Duration
	}{
		{0, 1000, 0, 100 * ms},           // nothing yet
		{100, 1000, 100 * ms, 250 * ms},  // 900 ms to go: capped
		{500, 1000, 200 * ms, 100 * ms},  // 200 ms to go: half of it
		{990, 1000, 1000 * ms, 20 * ms},  // 10 ms to go: the floor
		{1000, 1000, 1000 * ms, 20 * ms}, // done (the caller stops first)
	} {
		if got := pollWait(c.done, c.want, c.elapsed); got != c.wait {
			t.Errorf("pollWait(%v, %v, %v) = %v; want %v", c.done, c.want, c.elapsed, got, c.wait)
		}
	}
}
