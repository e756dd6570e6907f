// Command benchreport measures the aggregator end to end on this machine and
// writes the performance report (docs/bench.md; `make bench` runs it through
// scripts/bench.sh, which appends the hot-path `go test -bench` results).
//
// It starts a real redis-server (internal/redistest) and an in-process
// Kafka-protocol broker (kfake), produces a seeded synthetic workload of
// proxy-like and crawl-like observations into the observations topic, and
// measures, in one process and one run:
//
//   - sustained throughput of the real path: stream.KafkaSource →
//     aggregate.Processor → state.Redis (one Lua commit per batch) and
//     stream.KafkaSink, from the first partition claim until every message
//     is committed, over several runs;
//   - the same workload through a naive design with one Redis round trip
//     per observation (GET + one Lua compare-and-set write, and a variant
//     with an in-process cache whose only round trip is the Lua write),
//     interleaved with the pipeline runs so that ratios compare runs made
//     under the same machine load;
//   - latency from produce to estimate at half the measured throughput
//     (event time = produce time, EmitInterval 0);
//   - MEMORY USAGE per object in Redis for crawl-like, proxy-like and mixed
//     objects, after a throughput run and for objects with long histories.
//
// Usage:
//
//	go run ./cmd/benchreport [-out docs/bench.md] [-runs 3] [-observations 1000000] [-objects 100000]
//
// Only this command reads flags; it does not read the environment.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/changerate/changerate/aggregate"
)

type options struct {
	out          string
	keepFrom     string
	runs         int
	observations int
	objects      int
	partitions   int
	span         time.Duration
	naiveLimit   time.Duration
	latDur       time.Duration
	latWarm      time.Duration
	matureObjs   int
	matureDays   int
	population   int
	popDays      int
	sample       int
	cpuprofile   string
	trace        string
	batch        int
	fetch        int
	buffer       int64
	inflight     int64
	linger       time.Duration
	timeout      time.Duration
	skipLatency  bool
	skipNaive    bool
	query        string // "", "skip" or "only": the query API's section (query.go)
	aggregator   string
	liveObjects  int
	liveVisits   int
	liveRuns     int
	liveLarge    int
	liveHeld     int
	liveHTTP     string
	liveOnly     bool
	pipelineOnly bool
	liveLatRate  float64
	liveLatRuns  int
	liveEnv      string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-broker-child" {
		brokerChild(os.Args[2:])
		return
	}
	var o options
	fs := flag.NewFlagSet("benchreport", flag.ExitOnError)
	fs.StringVar(&o.out, "out", "docs/bench.md", "report file (- for stdout)")
	fs.StringVar(&o.keepFrom, "keep-from", "docs/bench.md", "earlier report whose one-off sections (optimisation history) are carried over; empty: none")
	fs.IntVar(&o.runs, "runs", 3, "measured runs of the pipeline and of each naive design (medians are reported)")
	fs.IntVar(&o.observations, "observations", 1000000, "observations in the throughput workload")
	fs.IntVar(&o.objects, "objects", 100000, "objects in the throughput workload")
	fs.IntVar(&o.partitions, "partitions", 12, "partitions of the observations topic")
	fs.DurationVar(&o.span, "span", 5*time.Minute, "event time covered by the throughput workload")
	fs.DurationVar(&o.naiveLimit, "naive-time", 6*time.Second, "how long each naive run is measured")
	fs.DurationVar(&o.latDur, "latency-time", 20*time.Second, "duration of the latency run")
	fs.DurationVar(&o.latWarm, "latency-warmup", 3*time.Second, "latency samples of the first part of the run are dropped")
	fs.IntVar(&o.matureObjs, "mature-objects", 10000, "objects per class with long histories for the memory table")
	fs.IntVar(&o.matureDays, "mature-days", 30, "days of history of those objects")
	fs.IntVar(&o.population, "population", 1000000, "objects (a third per class) in the population memory run")
	fs.IntVar(&o.popDays, "population-days", 7, "days of history of the population's objects")
	fs.IntVar(&o.sample, "sample", 2000, "objects per class sampled with MEMORY USAGE")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the last pipeline run (warm: the first one also grows the heap) to this file")
	fs.StringVar(&o.trace, "trace", "", "write an execution trace of the first pipeline run to this file")
	fs.Int64Var(&o.inflight, "inflight-bytes", 0, "Processor InflightBytes (0: the default)")
	fs.IntVar(&o.fetch, "fetch-max-bytes", 0, "KafkaConfig.FetchMaxBytes of the pipeline's source (0: the default)")
	fs.Int64Var(&o.buffer, "fetch-buffer-bytes", 0, "KafkaConfig.FetchBufferBytes of the pipeline's source (0: aggregate.FetchAheadBytes of the Processor's InflightBytes, as the aggregator sets it)")
	fs.DurationVar(&o.linger, "linger", 0, "KafkaConfig.Linger of the output sink (0: the default, direct produce)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up (exit 2, with a goroutine dump) after this long")
	fs.IntVar(&o.batch, "batch", 0, "Processor BatchSize (0: the default)")
	fs.BoolVar(&o.skipLatency, "skip-latency", false, "skip the latency run")
	fs.BoolVar(&o.skipNaive, "skip-naive", false, "skip the naive runs")
	fs.StringVar(&o.query, "query", "", "the query API section: skip, or only (just that section)")
	fs.StringVar(&o.aggregator, "aggregator", "", "aggregator binary for the live-crawl runs (go build -o ... ./cmd/aggregator); empty: no live runs")
	fs.IntVar(&o.liveObjects, "live-objects", 100000, "objects of the live-crawl shape")
	fs.IntVar(&o.liveVisits, "live-visits", 4, "daily visits per object in the live-crawl shape")
	fs.IntVar(&o.liveRuns, "live-runs", 2, "live-crawl runs")
	fs.IntVar(&o.liveLarge, "live-large-objects", 1_000_000, "objects of one more live-crawl run, for memory per object as the objects grow (0: none)")
	fs.IntVar(&o.liveHeld, "live-held-runs", 2, "runs of the live shape with its estimates held back (EMIT_INTERVAL "+heldInterval+": each object publishes once), for the CPU budget table (0: none)")
	fs.StringVar(&o.liveHTTP, "live-http", "127.0.0.1:18131", "HTTP address of the aggregator in the live runs (its /metrics is polled)")
	fs.BoolVar(&o.pipelineOnly, "pipeline-only", false, "run only the pipeline and naive runs (the history-replay shape) and write only the throughput section")
	fs.BoolVar(&o.liveOnly, "live-only", false, "run only the live-crawl sections (needs -aggregator) and write only them")
	fs.Float64Var(&o.liveLatRate, "live-latency-rate", 0, "produce rate of the live latency run, obs/s (0: half the median live rate)")
	fs.IntVar(&o.liveLatRuns, "live-latency-runs", 3, "live latency runs (the verdict is on the median p99)")
	fs.StringVar(&o.liveEnv, "live-env", "", "extra environment of the live runs' aggregator, NAME=VALUE separated by spaces")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Watchdog: make bench must end even if a component hangs.
	watchdog := time.AfterFunc(o.timeout, func() {
		dumpGoroutines("benchreport-timeout.txt")
		fmt.Fprintf(os.Stderr, "benchreport: not done after %s; goroutines in %s\n", o.timeout, os.TempDir()+"/benchreport-timeout.txt")
		os.Exit(2)
	})
	defer watchdog.Stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// report collects everything the Markdown report shows.
type report struct {
	opts       options
	machine    machine
	started    time.Time
	elapsed    time.Duration
	produceR   float64
	kinds      map[string]int
	classes    [numClasses]int
	pipeline   []runResult
	naive      []runResult
	naiveCache []runResult
	latency    []latResult
	afterRun   [numClasses]dist
	mature     matureResult
	population matureResult
	notes      []string
	kept       string // keptSections of the previous report
	live       []liveResult
	liveLarge  *liveResult  // the run with -live-large-objects
	liveHeld   []liveResult // the runs with the estimates held back (-live-held-runs)
	liveLat    []latResult
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	if o.query == "only" {
		return queryHook(ctx, o, nil)
	}
	rep := &report{opts: o, machine: describeMachine(), started: time.Now()}
	var names []string
	for i := range o.runs {
		names = append(names, "r"+strconv.Itoa(i+1))
	}
	for k := range latencyCases(1) {
		names = append(names, latName(k))
	}
	e, err := startEnv(o.partitions, names)
	if err != nil {
		return err
	}
	defer e.close()
	e.linger, e.fetch, e.buffer = o.linger, o.fetch, o.buffer
	if e.buffer == 0 { // as the aggregator sets it
		e.buffer = aggregate.FetchAheadBytes(inflightOr(o.inflight))
	}
	if o.liveOnly {
		if o.aggregator == "" {
			return errors.New("-live-only needs -aggregator")
		}
		if err := runLiveSections(ctx, e, o, rep); err != nil {
			return err
		}
		return rep.writeLiveOnly(o.out)
	}

	logf("generating %d observations over %d objects", o.observations, o.objects)
	wcfg := workloadConfig{Seed: 1, Objects: o.objects, Observations: o.observations,
		Start: time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC), Span: o.span, Zipf: 0.8}
	w := newWorkload(wcfg)
	msgs := w.generate()
	counts := map[string]int{}
	rep.kinds = map[string]int{}
	cls := w.classes()
	for _, m := range msgs {
		counts[string(m.key)]++
	}
	for n := range counts {
		rep.classes[cls[n]]++
	}
	for _, m := range msgs {
		rep.kinds[kindOf(m.value)]++
	}
	logf("producing into kfake (%d partitions)", o.partitions)
	if rep.produceR, err = e.produceAll(ctx, msgs); err != nil {
		return err
	}
	logf("produced at %.0f obs/s", rep.produceR)

	mutate := func(c *aggregate.Config) {
		if o.batch > 0 {
			c.BatchSize = o.batch
		}
		if o.inflight > 0 {
			c.InflightBytes = o.inflight
		}
	}
	var prof *os.File
	if o.cpuprofile != "" {
		if prof, err = os.Create(o.cpuprofile); err != nil {
			return err
		}
		defer prof.Close()
	}
	want := int64(len(msgs))
	for i := range o.runs {
		name := names[i]
		// The CPU profile covers the last pipeline run only (not the
		// naive designs): the first run also pays for growing the heap,
		// which the median run does not.
		last := i == o.runs-1
		if last && prof != nil {
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		if i == 0 && o.trace != "" {
			f, err := os.Create(o.trace)
			if err != nil {
				return err
			}
			if err := trace.Start(f); err != nil {
				return err
			}
		}
		pr, err := runPipeline(ctx, e, name, want, mutate, 5*time.Minute)
		if i == 0 && o.trace != "" {
			trace.Stop()
		}
		if last && prof != nil {
			pprof.StopCPUProfile()
		}
		if errors.Is(err, errStalled) {
			logf("%v", err)
			rep.notes = append(rep.notes, fmt.Sprintf("**Pipeline run %s stalled** and is left out: %v.", name, err))
			continue
		}
		if err != nil {
			return err
		}
		logf("pipeline %s: %d in %s: %.0f obs/s (total incl. group join %s); %0.f estimates", name, pr.Committed, pr.Elapsed.Round(time.Millisecond), pr.rate(), pr.Total.Round(time.Millisecond), pr.Estimates)
		cp, cr, ct := pr.cpuPerObs()
		logf("  CPU per observation: %.2f µs process + %.2f µs redis = %.2f µs", cp, cr, ct)
		logf("  %d batches, mean %.1f ms: output write %.1f ms, store get %.1f ms, commit %.1f ms; in-flight budget learned %.0f B per message", pr.Batches, pr.BatchS*1e3, pr.SinkS*1e3, pr.GetS*1e3, pr.CommitS*1e3, pr.PerMessage)
		rep.pipeline = append(rep.pipeline, pr)
		if i == o.runs-1 && !o.pipelineOnly {
			// Keep the last run's state for the memory sample.
			logf("sampling MEMORY USAGE after the run")
			if rep.afterRun, err = memoryAfterRun(ctx, e, w, counts, o.sample); err != nil {
				return err
			}
		}
		if o.skipNaive {
			continue
		}
		nr, err := runNaive(ctx, e, name+"-get", false, want, o.naiveLimit)
		if err != nil {
			return err
		}
		cp, cr, ct = nr.cpuPerObs()
		logf("naive GET+Lua %s: %d in %s: %.0f obs/s; CPU %.1f + %.1f = %.1f µs/obs", name, nr.Committed, nr.Elapsed.Round(time.Millisecond), nr.rate(), cp, cr, ct)
		rep.naive = append(rep.naive, nr)
		nc, err := runNaive(ctx, e, name+"-cache", true, want, o.naiveLimit)
		if err != nil {
			return err
		}
		cp, cr, ct = nc.cpuPerObs()
		logf("naive cached Lua %s: %d in %s: %.0f obs/s; CPU %.1f + %.1f = %.1f µs/obs", name, nc.Committed, nc.Elapsed.Round(time.Millisecond), nc.rate(), cp, cr, ct)
		rep.naiveCache = append(rep.naiveCache, nc)
	}
	if o.pipelineOnly {
		return rep.writePipelineOnly(o.out)
	}
	if !o.skipLatency {
		rates := make([]float64, len(rep.pipeline))
		for i, r := range rep.pipeline {
			rates[i] = r.rate()
		}
		half := median(rates) / 2
		for k, c := range latencyCases(half) {
			lw := newWorkload(workloadConfig{Seed: uint64(2 + k), Objects: o.objects, Observations: 1, Start: time.Now(), Span: time.Second, Zipf: 0.8})
			logf("latency %s: %.0f obs/s for %s, EmitInterval %s", c.label, c.rate, o.latDur, c.emit)
			lr, err := runLatency(ctx, e, latName(k), lw, c.rate, o.latDur, o.latWarm, c.emit)
			if err != nil {
				return err
			}
			lr.Label = c.label
			logf("latency: p50 %.1f ms p99 %.1f ms (%d samples, backlog at end %d)", lr.Recv[0], lr.Recv[2], lr.Samples, lr.BacklogAtEnd)
			rep.latency = append(rep.latency, lr)
		}
	}
	logf("memory: population of %d objects with %d days of history", o.population, o.popDays)
	if rep.population, err = memoryMature(ctx, e, (o.population+numClasses-1)/numClasses, o.popDays, o.sample); err != nil {
		return err
	}
	logf("memory: %.0f bytes of used_memory per object", rep.population.UsedPerObj)
	logf("memory: %d objects per class with %d days of history", o.matureObjs, o.matureDays)
	if rep.mature, err = memoryMature(ctx, e, o.matureObjs, o.matureDays, o.sample); err != nil {
		return err
	}
	if o.aggregator != "" {
		e.closeKafka() // the live runs start a broker of their own
		if err := runLiveSections(ctx, e, o, rep); err != nil {
			return err
		}
	}
	rep.machine.LoadAfter = loadavg()
	rep.elapsed = time.Since(rep.started)
	// Before -out is truncated: it is usually the same file.
	if rep.kept, err = previousSections(o.keepFrom); err != nil {
		return err
	}
	var out io.Writer = os.Stdout
	if o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	if err := rep.write(out); err != nil {
		return err
	}
	return queryHook(ctx, o, out)
}

func kindOf(v []byte) string {
	for _, k := range []string{"access", "visit", "revalidation", "snapshot"} {
		if bytes.Contains(v, []byte(`"kind":"`+k+`"`)) {
			return k
		}
	}
	return "?"
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type latencyCase struct {
	label string
	rate  float64
	emit  time.Duration
}

// latencyCases are the latency runs: half and a quarter of the measured
// throughput with the default EmitInterval 10m (in a short run: the
// estimate of each object's first observation), an eighth of it with
// EmitInterval 0 (every batch
// publishes the estimates of every object it changed), and half with
// EmitInterval 0, which does not keep up and so runs last (its backlog
// would disturb the others).
func latencyCases(half float64) []latencyCase {
	return []latencyCase{
		{"half load, EmitInterval 10m (default)", half, 10 * time.Minute},
		{"1/4 load, EmitInterval 10m (default)", half / 2, 10 * time.Minute},
		{"1/8 load, EmitInterval 0", half / 4, 0},
		{"half load, EmitInterval 0", half, 0},
	}
}

func latName(k int) string { return "lat" + strconv.Itoa(k+1) }

// runLiveSections runs the live-crawl runs and, unless -skip-latency, the
// live latency run, into rep.
func runLiveSections(ctx context.Context, e *env, o options, rep *report) error {
	env := strings.Fields(o.liveEnv)
	for i := 0; i < o.liveRuns; i++ {
		logf("live crawl %d: %d objects x %d daily visits, aggregator binary %s", i+1, o.liveObjects, o.liveVisits, o.aggregator)
		lr, err := runLive(ctx, e, o.aggregator, o.liveObjects, o.liveVisits, o.partitions, o.liveHTTP, env...)
		if err != nil {
			return err
		}
		logf("live: %.0f obs/s (kcat %.0f obs/s); CPU µs/obs aggregator %.2f broker %.2f redis %.2f; peak RSS %d B (%.0f B/object)",
			lr.Rate, lr.KcatRate, lr.AggCPU, lr.BrokerCPU, lr.RedisCPU, lr.PeakRSS, float64(lr.PeakRSS)/float64(lr.Objects))
		logFloor(lr)
		rep.live = append(rep.live, lr)
	}
	for i := 0; i < o.liveHeld; i++ {
		logf("live crawl, estimates held back %d: EMIT_INTERVAL %s", i+1, heldInterval)
		lr, err := runLive(ctx, e, o.aggregator, o.liveObjects, o.liveVisits, o.partitions, o.liveHTTP, append(env, "CHANGERATE_EMIT_INTERVAL="+heldInterval)...)
		if err != nil {
			return err
		}
		logf("live, held back: %.0f obs/s (kcat %.0f obs/s), %.0f estimates; CPU µs/obs aggregator %.2f broker %.2f redis %.2f",
			lr.Rate, lr.KcatRate, lr.Estimates, lr.AggCPU, lr.BrokerCPU, lr.RedisCPU)
		rep.liveHeld = append(rep.liveHeld, lr)
	}
	if o.liveLarge > 0 && o.liveLarge != o.liveObjects {
		logf("live crawl, memory at scale: %d objects x %d daily visits", o.liveLarge, o.liveVisits)
		lr, err := runLive(ctx, e, o.aggregator, o.liveLarge, o.liveVisits, o.partitions, o.liveHTTP, env...)
		if err != nil {
			return err
		}
		logf("live (%d objects): %.0f obs/s; peak RSS %d B (%.0f B/object)", o.liveLarge, lr.Rate, lr.PeakRSS, float64(lr.PeakRSS)/float64(lr.Objects))
		logFloor(lr)
		rep.liveLarge = &lr
	}
	if o.skipLatency || (len(rep.live) == 0 && o.liveLatRate <= 0) {
		return nil
	}
	rate := o.liveLatRate
	if rate <= 0 {
		rates := make([]float64, len(rep.live))
		for i, l := range rep.live {
			rates[i] = l.Rate
		}
		rate = median(rates) / 2
	}
	for i := range max(o.liveLatRuns, 1) {
		logf("live latency %d: %.0f obs/s for %s from a separate producer process, EMIT_INTERVAL 0", i+1, rate, o.latDur)
		lr, err := runLiveLatency(ctx, e, o.aggregator, o.liveObjects, o.partitions, o.liveHTTP, rate, o.latDur, o.latWarm, env...)
		if err != nil {
			return err
		}
		logf("live latency %d: p50 %.1f ms p99 %.1f ms (%d samples, backlog at end %d); CPU µs/obs aggregator %.2f broker %.2f redis %.2f producer+consumer %.2f; peak RSS %d B",
			i+1, lr.Recv[0], lr.Recv[2], lr.Samples, lr.BacklogAtEnd, lr.AggCPU, lr.BrokerCPU, lr.RedisCPU, lr.SelfCPU, lr.PeakRSS)
		rep.liveLat = append(rep.liveLat, lr)
	}
	return nil
}

// logFloor logs a live run's I/O floor (floor.go).
func logFloor(l liveResult) {
	f := l.Floor
	if f == nil {
		return
	}
	logf("floor: µs/obs kcat read %.2f, kcat produce %.2f (%d records), HSET client %.2f (%d writes of %d B into %d × %d buckets), broker %.2f, redis %.2f; run's Redis calls: HSET %d (%.2f writes each), EXEC %d, EVALSHA %d; pipeline ÷ floor: aggregator %.2f broker %.2f redis %.2f total %.2f; redis used_memory %.0f B/object; %s",
		f.ReadClient, f.PubClient, f.Published, f.StateClient, f.StateWrites, f.StateValueBytes, f.Parts, f.Buckets, f.broker(), f.StateRedis,
		l.HSETCalls, ratio(float64(f.StateWrites), float64(l.HSETCalls)), l.EXECCalls, l.EvalCalls,
		ratio(l.AggCPU, f.client()), ratio(l.BrokerCPU, f.broker()), ratio(l.RedisCPU, f.StateRedis), ratio(l.AggCPU+l.BrokerCPU+l.RedisCPU, f.total()), f.UsedPerObject, l.Err)
}
