package main

// The query API's part of the report: latency of GET
// /v1/objects under concurrent load while an aggregator consumes into the
// same Redis, and the memory of the top/plan index per object. It is self
// contained (its own redis-server, processor and HTTP server), so that it
// does not depend on the rest of the report's environment.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// queryBenchConfig sizes the query benchmark.
type queryBenchConfig struct {
	Objects      int           // objects in the store
	Visits       int           // visits per object before the measured phase
	Clients      int           // concurrent HTTP clients
	Duration     time.Duration // measured phase
	IndexObjects int           // objects in the index-memory measurement
}

func defaultQueryBench() queryBenchConfig {
	return queryBenchConfig{Objects: 20000, Visits: 20, Clients: 16, Duration: 10 * time.Second, IndexObjects: 200000}
}

type queryReport struct {
	cfg             queryBenchConfig
	busy, idle      phaseResult
	consumedDuring  int64
	consumedPerS    float64
	idxBytesPerObj  float64 // heap bytes per indexed object, names included
	idxNameBytes    float64 // mean name length
	idxObjects      int
	idxHeapTotalMiB float64
}

// crawlLine is one visit of object i at time t.
func crawlLine(enc *json.Encoder, i int, t time.Time, version int) error {
	name := fmt.Sprintf("http://site%d.example/section/%d/page-%d.html", i%50, i%7, i)
	return enc.Encode(records.Observation{Object: name, Time: t, Kind: records.KindVisit, Digest: fmt.Sprintf("sha1:%d", version), Format: "jsonl"})
}

func objectName(i int) string {
	return fmt.Sprintf("http://site%d.example/section/%d/page-%d.html", i%50, i%7, i)
}

// runQueryBench measures the query API.
func runQueryBench(ctx context.Context, cfg queryBenchConfig) (queryReport, error) {
	rep := queryReport{cfg: cfg}
	rs, err := redistest.Launch()
	if err != nil {
		return rep, err
	}
	defer rs.Stop()
	logger := slog.New(slog.DiscardHandler)
	store, err := state.NewRedis(state.RedisConfig{Addrs: []string{rs.Addr}, KeyPrefix: "qb:"}, logger, nil)
	if err != nil {
		return rep, err
	}
	defer store.Close()
	pc := aggregate.DefaultConfig()
	idx := query.NewIndex(query.IndexConfig{})
	// The outputs are indexed (the estimates handed over by the processor,
	// the alerts through the TeeSink), then dropped.
	sink := query.NewTeeSink(discardSink{}, idx, "", pc.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(pc, store, sink, logger, prometheus.NewRegistry(), time.Now, aggregate.WithEstimateIndex(idx))
	if err != nil {
		return rep, err
	}
	pr, pw := io.Pipe()
	srcDone := make(chan error, 1)
	go func() { srcDone <- stream.NewReaderSource(stream.TopicObservations, pr, 0).Run(ctx, proc.Handle) }()

	// Feed: visits to every object, hourly, with a change every few visits;
	// first the history, then continuously during the measured phase.
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var fed atomic.Int64
	stopFeed := make(chan struct{})
	feedDone := make(chan error, 1)
	historyFed := make(chan struct{})
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		enc := json.NewEncoder(bw)
		r := rand.New(rand.NewPCG(12, 12))
		for v := 0; ; v++ {
			if v == cfg.Visits {
				if err := bw.Flush(); err != nil {
					feedDone <- err
					return
				}
				close(historyFed)
			}
			for i := 0; i < cfg.Objects; i++ {
				t := t0.Add(time.Duration(v)*time.Hour + time.Duration(i)*time.Millisecond)
				if err := crawlLine(enc, i, t, v/(1+r.IntN(8))); err != nil {
					feedDone <- err
					return
				}
				fed.Add(1)
			}
			select {
			case <-stopFeed:
				feedDone <- bw.Flush()
				pw.Close()
				return
			default:
			}
		}
	}()
	<-historyFed
	history := int64(cfg.Objects * cfg.Visits)
	for proc.Committed() < history-int64(pc.BatchSize) {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}

	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, pc.Model, idx, logger)
	if err != nil {
		return rep, err
	}
	mux := http.NewServeMux()
	qs.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}}

	startCommitted := proc.Committed()
	busy, err := loadPhase(ctx, srv.URL, client, cfg, cfg.Duration)
	rep.consumedDuring = proc.Committed() - startCommitted
	close(stopFeed)
	if err := <-feedDone; err != nil {
		return rep, err
	}
	if err := <-srcDone; err != nil {
		return rep, err
	}
	if err != nil {
		return rep, err
	}
	rep.busy = busy
	rep.consumedPerS = float64(rep.consumedDuring) / busy.elapsed.Seconds()
	// The same load with the aggregator idle: the ratio shows what the
	// concurrent consumption costs, measured in the same run.
	if rep.idle, err = loadPhase(ctx, srv.URL, client, cfg, cfg.Duration/2); err != nil {
		return rep, err
	}

	rep.idxObjects = cfg.IndexObjects
	rep.idxBytesPerObj, rep.idxNameBytes, rep.idxHeapTotalMiB = indexMemory(cfg.IndexObjects)
	return rep, nil
}

// discardSink acknowledges and drops every message.
type discardSink struct{}

func (discardSink) Write(context.Context, ...stream.Message) error { return nil }
func (discardSink) Close() error                                   { return nil }

// indexMemory fills an Index with n objects that have a change and an
// access estimate (and a shift for one in ten) and returns the heap growth
// per object, the mean name length, and the total in MiB.
func indexMemory(n int) (perObj, nameLen, totalMiB float64) {
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	idx := query.NewIndex(query.IndexConfig{MaxObjects: n})
	t := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	names := 0
	for i := 0; i < n; i++ {
		r, lo, hi := 1e-5*float64(1+i%97), 0.5e-5*float64(1+i%97), 2e-5*float64(1+i%97)
		name := objectName(i)
		names += len(name)
		nv := t.Add(time.Hour)
		idx.AddEstimate(&records.Estimate{Object: name, Site: aggregate.Site(name), Kind: records.EstimateChange, AsOf: t,
			RatePerS: &r, CI95: &[2]float64{lo, hi}, NextVisit: &nv})
		idx.AddEstimate(&records.Estimate{Object: name, Site: aggregate.Site(name), Kind: records.EstimateAccess, AsOf: t,
			RatePerS: &r, CI95: &[2]float64{lo, hi}})
		if i%10 == 0 {
			idx.AddAlert(&records.Alert{Object: name, Site: aggregate.Site(name), Kind: records.EstimateAccess, AsOf: t,
				RateBefore: r, RateAfter: 10 * r, Before: records.Window{Start: t.Add(-48 * time.Hour), Points: 20},
				After: records.Window{Start: t.Add(-2 * time.Hour), Points: 20}, PValue: 0.001, Test: "cusum"}, []byte(`{}`))
		}
	}
	after := heap()
	runtime.KeepAlive(idx)
	grow := float64(after) - float64(before)
	return grow / float64(n), float64(names) / float64(n), grow / (1 << 20)
}

// writeQueryReport runs the query benchmark and appends its section to w.
func writeQueryReport(ctx context.Context, w io.Writer, cfg queryBenchConfig) error {
	logf("query API: %d objects × %d visits in Redis, %d clients for %s", cfg.Objects, cfg.Visits, cfg.Clients, cfg.Duration)
	loadBefore := loadavg()
	r, err := runQueryBench(ctx, cfg)
	loadAfter := loadavg()
	if err != nil {
		return fmt.Errorf("query bench: %w", err)
	}
	logf("query API: p50 %.2f ms p99 %.2f ms, %.0f req/s; aggregator consumed %.0f obs/s meanwhile; idle: p50 %.2f ms p99 %.2f ms",
		r.busy.p50, r.busy.p99, r.busy.reqPerS, r.consumedPerS, r.idle.p50, r.idle.p99)
	logf("query index: %.0f bytes per object (%d objects)", r.idxBytesPerObj, r.idxObjects)
	fmt.Fprintf(w, "\n## Query API (`/v1/objects`) and the top/plan index\n\n")
	fmt.Fprintf(w, "`cmd/benchreport/query.go`: a real redis-server holding %d crawled objects (%d hourly visits each), an aggregator\n"+
		"(Processor → Redis, estimates handed to the index, alerts through its TeeSink) consuming more visits as fast as it can, and %d concurrent\n"+
		"HTTP clients calling `GET /v1/objects?url=` for random objects for %s (each request: URL canonicalisation, one\n"+
		"Redis MGET, decoding and the estimate built as the aggregator builds it). Wall-clock latencies on the shared 2-core\n"+
		"machine, client and server in one process (load average %s before, %s after: compare the two phases of one run,\n"+
		"not runs). While consuming, the API shares the cores with the aggregator and Redis with its batch commits (one\n"+
		"Lua script per batch of up to BatchSize objects); which of the two makes the tail is not measured here.\n\n", cfg.Objects, cfg.Visits, cfg.Clients, cfg.Duration, loadBefore, loadAfter)
	fmt.Fprintf(w, "| phase | requests | errors | req/s | p50 ms | p90 ms | p99 ms | observations consumed meanwhile | obs/s meanwhile |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| aggregator consuming | %d | %d | %.0f | %.2f | %.2f | %.2f | %d | %.0f |\n", r.busy.requests, r.busy.errors, r.busy.reqPerS,
		r.busy.p50, r.busy.p90, r.busy.p99, r.consumedDuring, r.consumedPerS)
	fmt.Fprintf(w, "| aggregator idle (same run, after) | %d | %d | %.0f | %.2f | %.2f | %.2f | 0 | 0 |\n\n", r.idle.requests, r.idle.errors, r.idle.reqPerS,
		r.idle.p50, r.idle.p90, r.idle.p99)
	fmt.Fprintf(w, "Index memory (`query.Index`, which `/v1/top` and `/v1/plan` read): %d objects with a change and an access\n"+
		"estimate (one in ten with a shift alert) take %.1f MiB of Go heap: **%.0f bytes per object**, of which %.0f are the\n"+
		"object's name (mean length). It is bounded by `API_INDEX_OBJECTS` (default 200,000: about %.0f MiB at this size).\n",
		r.idxObjects, r.idxHeapTotalMiB, r.idxBytesPerObj, r.idxNameBytes, r.idxBytesPerObj*2e5/(1<<20))
	return nil
}

// queryHook is main's hook: the section is appended to out after the rest
// of the report, skipped with -query=skip, or written alone (to -out, or
// stdout) with -query=only (out nil).
func queryHook(ctx context.Context, o options, out io.Writer) error {
	if o.query == "skip" {
		return nil
	}
	if out == nil {
		out = os.Stdout
		if o.out != "-" {
			f, err := os.Create(o.out)
			if err != nil {
				return err
			}
			defer f.Close()
			out = f
		}
	}
	return writeQueryReport(ctx, out, defaultQueryBench())
}

// phaseResult is one load phase.
type phaseResult struct {
	requests, errors int64
	p50, p90, p99    float64 // ms
	reqPerS          float64
	elapsed          time.Duration
}

// loadPhase runs cfg.Clients clients calling /v1/objects for random objects
// for d.
func loadPhase(ctx context.Context, base string, client *http.Client, cfg queryBenchConfig, d time.Duration) (phaseResult, error) {
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	var lat []float64
	var wg sync.WaitGroup
	var reqs, errs atomic.Int64
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 3))
			var mine []float64
			for time.Now().Before(deadline) && ctx.Err() == nil {
				u := base + "/v1/objects?url=" + url.QueryEscape(objectName(r.IntN(cfg.Objects)))
				t := time.Now()
				resp, err := client.Get(u)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				mine = append(mine, float64(time.Since(t).Microseconds())/1000)
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(seed(c))
	}
	wg.Wait()
	res := phaseResult{requests: reqs.Load(), errors: errs.Load(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	sort.Float64s(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	res.p50, res.p90, res.p99 = pct(0.5), pct(0.9), pct(0.99)
	res.reqPerS = float64(res.requests) / res.elapsed.Seconds()
	return res, nil
}

func seed(c int) uint64 { return uint64(c) + 1 }
