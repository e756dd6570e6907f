package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// latencyTopic is the input topic of the latency runs (the throughput
// workload stays in the observations topic).
const latencyTopic = "observations-latency"

// latResult is one latency run.
type latResult struct {
	Label          string
	Rate, Achieved float64 // target and achieved produce rate, obs/s
	Duration       time.Duration
	Produced       int64
	Committed      int64
	Samples        int
	// Percentiles of (consumer receive time − as_of) and (estimate
	// record's Kafka timestamp − as_of), in milliseconds.
	Recv, Stamp    [4]float64 // p50, p90, p99, max
	BacklogAtEnd   int64      // produced − committed when production stopped
	EmitInterval   time.Duration
	EstimatesTotal int
	// Live runs only: CPU µs per committed observation of the aggregator,
	// broker and Redis processes (producer and consumer excluded, their
	// broker requests included) and the aggregator's peak RSS.
	AggCPU, BrokerCPU, RedisCPU float64
	// SelfCPU is this process's CPU per committed observation: the
	// producer and the latency consumer, which share the machine.
	SelfCPU float64
	PeakRSS int64
}

// runLatency produces the workload's observations at rate per second for
// dur, each with event time = its produce time, through the real pipeline
// with EmitInterval emit, and measures when the estimates they cause reach
// a consumer of the estimates topic. Estimates of the first warm of the run
// are not counted.
func runLatency(ctx context.Context, e *env, name string, w *workload, rate float64, dur, warm, emit time.Duration) (latResult, error) {
	res := latResult{Rate: rate, Duration: dur, EmitInterval: emit}
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return res, err
	}
	reg := prometheus.NewRegistry()
	store, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatBuckets), nil, reg)
	if err != nil {
		return res, err
	}
	defer store.Close()
	kc := e.kafkaConfig("latency-" + name)
	sink, err := stream.NewKafkaSink(kc, nil, reg)
	if err != nil {
		return res, err
	}
	defer sink.Close()
	src, err := stream.NewKafkaSource(kc, []string{latencyTopic + "-" + name}, nil, reg)
	if err != nil {
		return res, err
	}
	defer src.Close()
	cfg := aggregate.DefaultConfig()
	t := topicsFor(name)
	cfg.EstimatesTopic, cfg.AccessReportsTopic, cfg.AlertsTopic, cfg.DeadLetterTopic = t.estimates, t.reports, t.alerts, t.dead
	cfg.Model.EmitInterval = emit
	if emit == 0 {
		cfg.Model.EmitInterval = 0
	}
	// The reorder buffer would hold every observation for REORDER_WINDOW
	// (a minute) of event time, by design: longer than the run, so no
	// estimate would be measured. Latency is measured without it.
	cfg.ReorderWindow = 0
	proc, err := aggregate.NewProcessor(cfg, store, sink, slog.New(slog.DiscardHandler), reg, time.Now)
	if err != nil {
		return res, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- src.Run(rctx, proc.Handle) }()
	// Wait until every partition is claimed.
	for deadline := time.Now().Add(30 * time.Second); len(proc.Owned()) < e.parts; {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("latency %s: %d of %d partitions claimed", name, len(proc.Owned()), e.parts)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Consumer of the estimates topic.
	cons, err := e.client(kgo.ConsumeTopics(t.estimates), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(10*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer cons.Close()
	col := collectLatencies(ctx, cons)
	defer col.stop()

	prod, err := e.client(kgo.ProducerLinger(0))
	if err != nil {
		return res, err
	}
	defer prod.Close()
	start := time.Now()
	col.from.Store(start.Add(warm).UnixNano())
	var produced int64
	var perr atomic.Value
	var buf []byte
	tick := time.NewTicker(time.Millisecond)
	topic := latencyTopic + "-" + name
	for now := start; now.Sub(start) < dur; now = <-tick.C {
		target := int64(rate * now.Sub(start).Seconds())
		for ; produced < target; produced++ {
			at := time.Now().UTC()
			obs := w.next(at.Sub(start).Seconds(), at)
			buf = appendJSON(buf[:0], &obs)
			r := &kgo.Record{Topic: topic, Key: []byte(obs.Object), Value: bytes.Clone(buf)}
			prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.CompareAndSwap(nil, err)
				}
			})
		}
	}
	tick.Stop()
	end := time.Now()
	col.to.Store(end.UnixNano())
	if err := prod.Flush(ctx); err != nil {
		return res, err
	}
	if v := perr.Load(); v != nil {
		return res, fmt.Errorf("latency produce: %w", v.(error))
	}
	res.Produced = produced
	res.Achieved = float64(produced) / end.Sub(start).Seconds()
	res.BacklogAtEnd = produced - proc.Committed()
	// Let the pipeline finish what was produced, then the consumer.
	for deadline := time.Now().Add(20 * time.Second); proc.Committed() < produced && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	res.Committed = proc.Committed()
	time.Sleep(500 * time.Millisecond)
	recv, stamp, total := col.stop()
	cancel()
	<-done
	res.Samples, res.EstimatesTotal = len(recv), total
	res.Recv, res.Stamp = percentiles(recv), percentiles(stamp)
	return res, nil
}

// latencyCollector reads estimate records and keeps, for those whose
// as_of lies in [from, to] (Unix ns), receive time − as_of and the record's
// Kafka timestamp − as_of, in milliseconds.
type latencyCollector struct {
	from, to atomic.Int64
	cancel   context.CancelFunc
	done     chan struct{}

	mu          sync.Mutex
	recv, stamp []float64
	total       int // every estimate record read
}

// collectLatencies starts reading cons until stop; the window is empty
// until from and to are set.
func collectLatencies(ctx context.Context, cons *kgo.Client) *latencyCollector {
	c := &latencyCollector{done: make(chan struct{})}
	c.from.Store(1 << 62)
	c.to.Store(1 << 62)
	cctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	go func() {
		defer close(c.done)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				asOf, ok := asOfOf(r.Value)
				c.mu.Lock()
				defer c.mu.Unlock()
				c.total++
				if !ok || asOf.UnixNano() < c.from.Load() || asOf.UnixNano() > c.to.Load() {
					return
				}
				c.recv = append(c.recv, float64(now.Sub(asOf))/1e6)
				c.stamp = append(c.stamp, float64(r.Timestamp.Sub(asOf))/1e6)
			})
		}
	}()
	return c
}

// stop ends the reading (it may be called again) and returns what was
// collected.
func (c *latencyCollector) stop() (recv, stamp []float64, total int) {
	c.cancel()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recv, c.stamp, c.total
}

// asOfOf extracts the as_of time of an estimate record without a full
// decode.
func asOfOf(v []byte) (time.Time, bool) {
	const k = `"as_of":"`
	i := bytes.Index(v, []byte(k))
	if i < 0 {
		return time.Time{}, false
	}
	rest := v[i+len(k):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil
}

func percentiles(xs []float64) [4]float64 {
	if len(xs) == 0 {
		return [4]float64{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return [4]float64{q(0.5), q(0.9), q(0.99), s[len(s)-1]}
}
