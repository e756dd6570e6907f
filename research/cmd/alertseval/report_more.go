package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// stepPage returns a page's visits: a Poisson change rate of r0 (per day)
// until day stepDay and r1 after it, visited every visitH hours by a
// crawler that reports whether the content changed (aggregate's
// TestRateFollowsStep world); each page on a site of its own.
func stepPage(seed uint64, r0, r1, stepDay, days, visitH float64) []records.Observation {
	rng := sim.NewRand(seed, 5)
	ev := sim.Poisson{Rate: r0 / 86400}.Events(rng, stepDay*86400, nil)
	for _, t := range (sim.Poisson{Rate: r1 / 86400}).Events(rng, (days-stepDay)*86400, nil) {
		ev = append(ev, stepDay*86400+t)
	}
	visits := sim.Regular{Interval: visitH * 3600}.Times(rng, 0, days*86400, nil)
	t0 := float64(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Unix())
	ms := func(s float64) time.Time { return time.UnixMilli(int64(math.Round((t0 + s) * 1000))).UTC() }
	var obs []records.Observation
	for _, v := range sim.Observe(ev, visits, false, nil) {
		o := records.Observation{Object: fmt.Sprintf("http://step%d.example/p", seed), Kind: records.KindVisit, Time: ms(v.Time), Changed: records.Unchanged}
		if !v.First && v.Changed {
			o.Changed = records.Changed
		}
		obs = append(obs, o)
	}
	return obs
}

// step is section 5: the published rate after a step in a change rate.
func (r *report) step(ctx context.Context) error {
	p := r.p
	p("\n## 5. The published rate after a 4× step in a change rate\n\n")
	p("200 pages per row, crawled every 2 h (existence of change), one change rate for 30 days and another after (rows),\n")
	p("scored at day 90: median |log(published rate_per_s / true current rate)|. Target ≤ 0.2 after the step, ≤ 0.15 on\n")
	p("stationary pages (aggregate.TestRateFollowsStep checks them, and that the whole-history estimator, what\n")
	p("rate_per_s was before issue 14, does worse after a step).\n\n")
	p("| pages | published rate | pages publishing the window rate |\n|---|---|---|\n")
	rows := []struct {
		name   string
		r0, r1 float64
	}{{"4× up (1 → 4 a day)", 1, 4}, {"4× down (4 → 1 a day)", 4, 1}, {"stationary (1 a day)", 1, 1}}
	for _, c := range rows {
		// the 200 pages of a row in one run: pages are independent
		var obs []records.Observation
		for i := 0; i < 200; i++ {
			obs = append(obs, stepPage(uint64(20000+i), c.r0, c.r1, 30, 90, 2)...)
		}
		sortObservations(obs)
		res, err := run(ctx, slice(obs), aggregate.DefaultModel())
		if err != nil {
			return err
		}
		var pub []float64
		follow := 0
		for _, e := range res.estimates {
			if e.Kind != records.EstimateChange || e.RatePerS == nil {
				continue
			}
			pub = append(pub, math.Abs(math.Log(*e.RatePerS*86400/c.r1)))
			if e.Estimator == "intuitive" || e.Estimator == "weibull" || e.Estimator == "duane" {
				follow++
			}
		}
		p("| %s | %.3f | %d/%d |\n", c.name, median(pub), follow, len(pub))
	}
	return nil
}

// nasa is section 6: the NASA-HTTP day, before and after.
func (r *report) nasa(ctx context.Context) error {
	p := r.p
	p("\n## 6. The NASA-HTTP day (1995-08-01), before and after\n\n")
	obs, err := loadReal(filepath.Join(r.data, "nasa-http-19950801", "nasa_19950801.tsv.gz"), "nasa-tsv")
	if err != nil {
		p("NASA data not available: %v\n", err)
		return nil
	}
	p("%d requests of one day (`ingest --format=nasa-tsv`), one partition. Alerts by hour (UTC) of `as_of`:\n\n", len(obs))
	flatF := aggregate.DefaultModel()
	flatF.Seasonal.LearningPeriod = 0
	cases := []struct {
		name string
		m    aggregate.Model
	}{{"before issue 14", beforeModel()}, {"defaults (7-day learning)", aggregate.DefaultModel()}, {"`--seasonal-learning=0` (flat baseline, filters)", flatF}}
	out := make([]result, len(cases))
	if err := r.parallel(len(cases), func(i int) error {
		var err error
		out[i], err = run(ctx, slice(obs), cases[i].m)
		return err
	}); err != nil {
		return err
	}
	p("| configuration | alerts | up | down | site alerts | 11:00–18:00 UTC | by hour |\n|---|---|---|---|---|---|---|\n")
	for i, c := range cases {
		as := out[i].alerts
		up, down, site, mid := 0, 0, 0, 0
		hours := map[int]int{}
		for _, a := range as {
			if a.Test == "cusum-binomial-up" {
				up++
			} else {
				down++
			}
			if a.Scope == records.AlertScopeSite {
				site++
			}
			h := a.AsOf.UTC().Hour()
			hours[h]++
			if h >= 11 && h < 18 {
				mid++
			}
		}
		var hs []string
		for h := 0; h < 24; h++ {
			if hours[h] > 0 {
				hs = append(hs, fmt.Sprintf("%02d:%d", h, hours[h]))
			}
		}
		p("| %s | %d | %d | %d | %d | %d | %s |\n", c.name, len(as), up, down, site, mid, strings.Join(hs, " "))
	}
	p("\nOne day cannot teach a weekly (or even a daily) profile: with the defaults the whole day is the learning period and\n")
	p("no access alert is raised. With a flat baseline the filters and the per-site grouping leave the morning ramp as a\n")
	p("few site alerts instead of dozens of object alerts; with a week of history the ramp becomes part of the baseline\n")
	p("(section 1).\n")
	return nil
}
