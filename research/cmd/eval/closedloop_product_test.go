package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
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
// (the same functions on the same inputs; no tolerance). It also checks
// that the script exercises both paths: some pages planned on the pooled
// estimate, some on their own, and that the pooled ones with no change
// seen are planned at their rate alone (query.CandidateOf ranks them at a
// lower bound of 0).
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
	for _, v := range vs {
		ts := float64(v.t.UnixMilli()) / 1e3
		ps.observe(names[v.i], v.i, ts, v.changed)
		st.est[v.i].Visit(estimators.Visit{Time: ts, Changed: v.changed})
	}
	ps.refresh(names)
	got := ps.pages(st, false)

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
		if e, ok := ps.objs[i].ChangeEstimateAsOf(names[i], &ps.m, &ps.site, time.Time{}, &ps.scratch); ok {
			switch {
			case e.Estimator == estimators.KeyPooled && e.Changes == 0:
				pooled++
				if want[k].Shape != 0 || !(want[k].Rate > 0) {
					t.Errorf("%s: pooled with no change seen planned as %+v, want its rate alone", c.Object, want[k])
				}
			case e.Estimator == estimators.KeyPooled:
				pooled++
				if !(want[k].Shape > 0) {
					t.Errorf("%s: pooled with %d changes planned without a posterior: %+v", c.Object, e.Changes, want[k])
				}
			default:
				own++
			}
		}
		if want[k].Shape == 0 {
			point++
		}
	}
	if pooled < 6 || own < 3 || point < 4 {
		t.Errorf("script exercises %d pooled pages (want ≥ 6), %d own (≥ 3), %d planned at a point (≥ 4)", pooled, own, point)
	}
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
