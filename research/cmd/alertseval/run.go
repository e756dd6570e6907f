package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// result is what one run of the aggregator gave: its alerts, its final
// estimates, and its confirmed shifts by kind and outcome (the metric
// changerate_aggregator_alert_candidates_total).
type result struct {
	alerts     []records.Alert
	estimates  []records.Estimate
	candidates map[string]float64 // "kind outcome" → count
}

// run feeds obs (one partition, in time order) through an
// aggregate.Processor with model m, in-memory state and in-memory outputs,
// as `aggregator --in=… --store=memory --emit=final` does, and returns
// what it published.
func run(ctx context.Context, obs func(yield func(*records.Observation) bool), m aggregate.Model) (result, error) {
	reg := prometheus.NewRegistry()
	store, err := state.NewMemory(state.MemoryConfig{}, reg)
	if err != nil {
		return result{}, fmt.Errorf("alertseval: %w", err)
	}
	defer store.Close()
	sink := stream.NewMemorySink()
	cfg := aggregate.DefaultConfig()
	cfg.Model = m
	cfg.Emit = aggregate.EmitFinal
	cfg.CacheObjects, cfg.CacheBytes = 0, 0 // unbounded
	cfg.DisableReorder = true               // the input is in time order (the filter mode's sorted input)
	proc, err := aggregate.NewProcessor(cfg, store, sink, slog.New(slog.DiscardHandler), reg, time.Now, aggregate.WithLocalInput())
	if err != nil {
		return result{}, fmt.Errorf("alertseval: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		enc := json.NewEncoder(bw)
		var err error
		obs(func(o *records.Observation) bool {
			err = enc.Encode(o)
			return err == nil
		})
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	if err := stream.NewReaderSource(stream.TopicObservations, pr, 0).Run(ctx, proc.Handle); err != nil {
		pr.CloseWithError(err)
		return result{}, fmt.Errorf("alertseval: %w", err)
	}
	var res result
	for _, msg := range sink.Messages(stream.TopicAlerts) {
		var a records.Alert
		if err := json.Unmarshal(msg.Value, &a); err != nil {
			return result{}, fmt.Errorf("alertseval: alert record: %w", err)
		}
		res.alerts = append(res.alerts, a)
	}
	for _, msg := range sink.Messages(stream.TopicEstimates) {
		var e records.Estimate
		if err := json.Unmarshal(msg.Value, &e); err != nil {
			return result{}, fmt.Errorf("alertseval: estimate record: %w", err)
		}
		res.estimates = append(res.estimates, e)
	}
	if dl := sink.Messages(stream.TopicDeadLetter); len(dl) > 0 {
		return result{}, fmt.Errorf("alertseval: %d dead letters, the first %s", len(dl), dl[0].Value)
	}
	res.candidates = map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		return result{}, fmt.Errorf("alertseval: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "changerate_aggregator_alert_candidates_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var kind, outcome string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "kind":
					kind = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			res.candidates[kind+" "+outcome] += mt.GetCounter().GetValue()
		}
	}
	return res, nil
}

// slice yields the observations of a slice.
func slice(obs []records.Observation) func(func(*records.Observation) bool) {
	return func(yield func(*records.Observation) bool) {
		for i := range obs {
			if !yield(&obs[i]) {
				return
			}
		}
	}
}

// world is a simulated world's requests with what the scores need.
type world struct {
	evs          []sim.Event
	bursts       []sim.Burst
	names, sites []string
	learned      float64 // end of the learning period, Unix seconds
}

var simStart = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

func newWorld(w sim.AlertWorld) *world {
	evs, bursts, names, sites := w.Generate(simStart)
	return &world{evs: evs, bursts: bursts, names: names, sites: sites, learned: float64(simStart.Unix()) + w.LearnDays*86400}
}

// observations yields the world's requests as access observations.
func (w *world) observations(yield func(*records.Observation) bool) {
	var o records.Observation
	for _, e := range w.evs {
		o = records.Observation{Object: w.names[e.Obj], Site: w.sites[e.Obj], Kind: records.KindAccess,
			Time: time.UnixMilli(int64(math.Round(e.T * 1000))).UTC()}
		if !yield(&o) {
			return
		}
	}
}

// publish pairs the alerts with their publication times.
func (w *world) publish(as []records.Alert, period time.Duration) []sim.PublishedAlert {
	out := make([]sim.PublishedAlert, 0, len(as))
	for _, a := range as {
		at := math.Inf(1)
		if a.PeriodStart != nil {
			end := float64(a.PeriodStart.Add(period).UnixMilli()) / 1e3
			if i := sort.Search(len(w.evs), func(i int) bool { return w.evs[i].T >= end }); i < len(w.evs) {
				at = w.evs[i].T
			}
		}
		out = append(out, sim.PublishedAlert{Alert: a, At: at})
	}
	return out
}

// loadReal reads a real data file (gzip) with a format's parser, as ingest
// does, in time order: each observation gets the file's name and its line
// as source and offset (a git file changed twice in one second is two
// observations, not a duplicate).
func loadReal(path, format string) ([]records.Observation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	p, err := parse.New(format, parse.Config{})
	if err != nil {
		return nil, err
	}
	var out []records.Observation
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := int64(1); sc.Scan(); line++ {
		var o records.Observation
		if err := p.Parse(sc.Bytes(), &o); err != nil {
			if errors.Is(err, parse.ErrSkip) {
				continue
			}
			return nil, err
		}
		o.Source, o.Offset = filepath.Base(path), line
		out = append(out, o)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, sc.Err()
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	n := len(s)
	return (s[n/2-1] + s[n/2]) / 2
}
