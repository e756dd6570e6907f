package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// planLog: objects on 4 sites, visited hourly (changing with object-specific
// probabilities) and requested at object-specific rates.
func planLog() []byte { return planLogSites(4) }

// planLogSites is planLog's objects on the given number of sites.
func planLogSites(sites int) []byte {
	r := rand.New(rand.NewPCG(33, 1))
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	for i := range 24 {
		name := fmt.Sprintf("http://s%d.example/p%d", i%sites, i)
		p := 0.02 + 0.04*float64(i%6)
		version := 0
		for h := range 96 {
			at := t0.Add(time.Duration(h)*time.Hour + time.Duration(r.IntN(600000))*time.Millisecond)
			if r.Float64() < p {
				version++
			}
			o := records.Observation{Object: name, Time: at, Kind: records.KindVisit, Digest: fmt.Sprintf("sha1:%d", version), Status: 200}
			line, _ := json.Marshal(o)
			b.Write(line)
			b.WriteByte('\n')
			for k := 0; k < i%5; k++ {
				a := records.Observation{Object: name, Time: at.Add(time.Duration(k+1) * time.Minute), Kind: records.KindAccess}
				line, _ := json.Marshal(a)
				b.Write(line)
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

// TestPlanOutEqualsAPI: the filter mode's --plan-out is what /v1/plan
// answers on an index holding the same published estimates, for the
// default and lambdacrawl policies, access and given weights, a host cap
// that binds, and the default on one site of 24 objects, which has a prior
// and so plans every object on its tempered posterior (the plan reports
// the site's ω and no fallback).
func TestPlanOutEqualsAPI(t *testing.T) {
	dir := t.TempDir()
	weights := filepath.Join(dir, "weights.tsv")
	if err := os.WriteFile(weights, []byte("# site or object\ts1.example\t5\nhttp://s2.example/p2\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		query string
	}{
		{"default", nil, "budget=60&period=24h"},
		{"one site", nil, "budget=60&period=24h"},
		{"capped", []string{"--plan-host-cap=10"}, "budget=60&period=24h&host_cap=10"},
		{"access", []string{"--plan-weights=access", "--plan-policy=lambdacrawl"}, "budget=60&period=24h&weights=access&policy=lambdacrawl"},
		{"given", []string{"--plan-weights=" + weights}, "budget=60&period=24h&weights=given"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := planLog()
			if c.name == "one site" {
				in = planLogSites(1)
			}
			est := filepath.Join(dir, c.name+".est")
			planPath := filepath.Join(dir, c.name+".plan")
			args := append([]string{"--in=-", "--store=memory", "--out=" + est, "--emit=final", "--log-level=warn",
				"--plan-out=" + planPath, "--plan-budget=60", "--plan-period=24h"}, c.args...)
			var stderr bytes.Buffer
			if err := run(context.Background(), args, bytes.NewReader(in), io.Discard, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var offline query.PlanResult
			b, err := os.ReadFile(planPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &offline); err != nil {
				t.Fatal(err)
			}
			// The same estimates into a fresh index behind /v1/plan.
			cfg := newConfig()
			for _, a := range c.args {
				if v, ok := strings.CutPrefix(a, "--plan-weights="); ok {
					cfg.PlanWeights = v
				}
			}
			if err := cfg.validatePlan(); err != nil {
				t.Fatal(err)
			}
			idx := query.NewIndex(query.IndexConfig{})
			tee := query.NewTeeSink(stream.NewWriterSink(nil, nil), idx, cfg.TopicEstimates, cfg.TopicAlerts, slog.Default())
			eb, err := os.ReadFile(est)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(bytes.TrimSpace(eb), []byte("\n")) {
				tee.Observe([]stream.Message{{Topic: cfg.TopicEstimates, Value: line}}, nil)
			}
			store, _ := state.NewMemory(state.MemoryConfig{}, nil)
			srv, err := query.NewServer(cfg.queryConfig(), store, query.SinglePartition{Topic: "observations"}, cfg.processorConfig().Model, idx, slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			srv.Register(mux)
			ts := httptest.NewServer(mux)
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/v1/plan?" + c.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var online query.PlanResult
			if err := json.NewDecoder(resp.Body).Decode(&online); err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d: %v", resp.StatusCode, err)
			}
			if len(offline.Visits) == 0 || offline.Objects != 24 {
				t.Fatalf("offline plan: %d visits over %d objects", len(offline.Visits), offline.Objects)
			}
			if !reflect.DeepEqual(offline, online) {
				ob, _ := json.Marshal(offline)
				nb, _ := json.Marshal(online)
				t.Errorf("--plan-out differs from /v1/plan:\n%s\n%s", ob, nb)
			}
			switch c.name {
			case "default":
				if offline.OmegaFallback != 24 || len(offline.Omega) != 0 {
					t.Errorf("6 objects a site (no prior): ω %+v, fallback %d, want none and 24", offline.Omega, offline.OmegaFallback)
				}
			case "one site":
				if offline.OmegaFallback != 0 || len(offline.Omega) != 1 || offline.Omega[0].Objects != 24 || offline.Omega[0].Site != "s0.example" || offline.OmegaRule != query.OmegaRule {
					t.Errorf("one site of 24: ω %+v, fallback %d, want one ω for 24 objects", offline.Omega, offline.OmegaFallback)
				}
			case "capped":
				if len(offline.CappedHosts) == 0 {
					t.Errorf("no capped host with 10 visits a host of 60")
				}
			case "given":
				if offline.Weights != query.WeightsGiven || !strings.Contains(string(b), `"reason": "no weight"`) {
					t.Errorf("given weights: %s, and p2 (weight 0) not left out for want of weight", offline.Weights)
				}
			}
		})
	}
}
