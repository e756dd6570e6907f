package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/research/forget"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// TestProductPagesMatchV1Plan: for a scripted crawl of 14 hostless pages
// (4 never changing, 4 changing 2–5 times, 6 changing often: pages that
// publish the pooled estimate under the population's prior and pages that
// publish their own), the closed loop's planning pages equal what /v1/plan
// plans on when the aggregator (aggregate.Processor, --emit=final) has
// read the same visits into a memory store and published them to the
// query index: same rate, shape, weight and host for every page, exactly
// (the same functions on the same inputs; no tolerance). Every page is
// planned on its tempered posterior Gamma(α₀ + ωX, β₀ + ωE) (estimators/
// tempered.go T1) at the ω of the site state's prequential scores, and
// those scores equal an independent tally of (T3) over the script's
// visits. It also checks that the script exercises both kinds of pages:
// some publishing the pooled estimate (some with no change seen), some
// their own.
func TestProductPagesMatchV1Plan(t *testing.T) {
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	const n, days = 14, 60
	names := make([]string, n)
	for k := range names {
		names[k] = fmt.Sprintf("reference/p%02d.xml", k)
	}
	changedOn := func(k, d int) bool {
		switch {
		case k < 4:
			return false
		case k < 8:
			return d%(11+k) == 0
		}
		return d%(k-6) == 0
	}
	type visit struct {
		i       int
		t       time.Time
		changed bool
	}
	var vs []visit
	for d := 0; d <= days; d++ {
		for k := 0; k < n; k++ {
			vs = append(vs, visit{k, t0.Add(time.Duration(d)*24*time.Hour + time.Duration(k)*time.Minute), d > 0 && changedOn(k, d)})
		}
	}
	sort.Slice(vs, func(a, b int) bool { return vs[a].t.Before(vs[b].t) })

	// The loop's side.
	ps := newProductState(n)
	st := &loopState{est: make([]estimators.Change, n), cfg: newEstConfig()}
	// An independent tally of (T3): every visit after a page's first,
	// scored under the population's prior refitted from every page's
	// evidence before it and the page's own evidence before it, with
	// research/forget's predictive.
	score := make([]float64, len(temperGrid))
	scored := 0
	for _, v := range vs {
		ts := float64(v.t.UnixMilli()) / 1e3
		if prior, ok := st.populationPrior(); ok && st.est[v.i].Visits() > 0 {
			if ev, ok := st.est[v.i].Evidence(st.cfg); ok {
				d := ts - st.est[v.i].LastVisit()
				for k, w := range temperGrid {
					score[k] += forget.LogPredictive(prior.Shape+w*ev.X, prior.Rate+w*ev.E, d, v.changed)
				}
				scored++
			}
		}
		ps.observe(names[v.i], v.i, ts, v.changed)
		st.est[v.i].Visit(estimators.Visit{Time: ts, Changed: v.changed})
	}
	// The site state's sums are the tally's (relative tolerance 1e-9: the
	// prior's sums are kept by adding and removing evidence, the tally's
	// refitted from scratch) and pick the same ω.
	for k := range score {
		if d := math.Abs(ps.site.Temper[k] - score[k]); !(d <= 1e-9*math.Abs(score[k])) {
			t.Errorf("ω %v: the site state's score %v, the tally's %v", temperGrid[k], ps.site.Temper[k], score[k])
		}
	}
	omega, _ := estimators.TemperChoose(&ps.site.Temper)
	if want := temperGrid[argmaxLast(score)]; omega != want || scored < 500 {
		t.Errorf("ω %v, the tally's %v (%d visits scored)", omega, want, scored)
	}
	prior, _ := ps.site.Pool.Prior()
	ps.refresh(names)
	got := ps.pages(st, false, false)

	// The product's side: the same visits as the aggregator reads them.
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	digests := make([]int, n)
	for _, v := range vs {
		if v.changed {
			digests[v.i]++
		}
		obs := records.Observation{Object: names[v.i], Time: v.t, Kind: records.KindVisit, Status: 200,
			Digest: "d" + strconv.Itoa(digests[v.i]), Format: "jsonl"}
		if err := enc.Encode(obs); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.DiscardHandler)
	cfg := aggregate.DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = aggregate.EmitFinal, 0, 0
	cfg.MaxFuture = 0
	store, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := query.NewIndex(query.IndexConfig{})
	tee := query.NewTeeSink(stream.NewMemorySink(), idx, cfg.EstimatesTopic, cfg.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(cfg, store, tee, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.NewReaderSource(stream.TopicObservations, &in, 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	cands := idx.Candidates("", 0)
	if len(cands) != n {
		t.Fatalf("/v1/plan lists %d candidates, want %d", len(cands), n)
	}
	want := query.PlanPages(cands, query.PlanRequest{Policy: query.PolicyFreshness}, query.PlanConfig{})
	pooled, own, point := 0, 0, 0
	for k, c := range cands {
		i := sort.SearchStrings(names, c.Object)
		if i == n || names[i] != c.Object {
			t.Fatalf("unknown candidate %q", c.Object)
		}
		if got[i] != want[k] {
			t.Errorf("%s: loop plans on %+v, /v1/plan on %+v (candidate %+v)", c.Object, got[i], want[k], c)
		}
		// Every page, pooled or not, is planned on its tempered posterior
		// (estimators/tempered.go T1) at the site's ω, and its published
		// rate is not that posterior's (relative tolerance 1e-12: one
		// division each side).
		ev, _ := st.est[i].Evidence(st.cfg)
		a, b := prior.Shape+omega*ev.X, prior.Rate+omega*ev.E
		if math.Abs(want[k].Shape-a) > 1e-12*a || math.Abs(want[k].Rate-a/b) > 1e-12*a/b || !c.HasPlan || c.Prior.Omega != omega {
			t.Errorf("%s: planned on %+v (candidate %+v), want Gamma(%v, %v) at ω %v", c.Object, want[k], c, a, b, omega)
		}
		if e, ok := ps.objs[i].ChangeEstimateAsOf(names[i], &ps.m, &ps.site, time.Time{}, &ps.scratch); ok {
			switch {
			case e.Estimator == estimators.KeyPooled:
				pooled++
				if e.Changes == 0 {
					point++ // before the tempered plan, planned at its rate alone
				}
			default:
				own++
			}
			if e.RatePerS != nil && *e.RatePerS == want[k].Rate && omega < 1 {
				t.Errorf("%s: planned at its published rate %v with ω %v < 1", c.Object, *e.RatePerS, omega)
			}
		}
	}
	if pooled < 6 || own < 3 || point < 4 {
		t.Errorf("script exercises %d pooled pages (want ≥ 6), %d own (≥ 3), %d pooled with no change seen (≥ 4)", pooled, own, point)
	}
	t.Logf("ω %v; scores %v", omega, score)
	// The product's pages are not the page's own posteriors (the row
	// before): the pooled pages differ.
	ownPages := st.posteriors(float64(t0.Add(days*24*time.Hour).Unix()), false)
	differ := 0
	for i := range got {
		if got[i] != ownPages[i] {
			differ++
		}
	}
	if differ < pooled {
		t.Errorf("%d of the loop's pages differ from the own-estimate posteriors, want at least the %d pooled ones", differ, pooled)
	}
}

// argmaxLast is the index of xs's largest value, the last of equals
// (estimators.TemperChoose's ties toward the larger ω).
func argmaxLast(xs []float64) int {
	k := len(xs) - 1
	for j := len(xs) - 2; j >= 0; j-- {
		if xs[j] > xs[k] {
			k = j
		}
	}
	return k
}
