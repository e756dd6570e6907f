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
	PeakRSS                     int64
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
	store, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatCompact), nil, reg)
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
		cfg.Model.EmitInterval = aggregate.ZeroDuration
	}
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
	var mu sync.Mutex
	var recv, stamp []float64
	var measureFrom, measureTo atomic.Int64
	measureTo.Store(1 << 62)
	total := 0
	cctx, ccancel := context.WithCancel(ctx)
	cdone := make(chan struct{})
	go func() {
		defer close(cdone)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				asOf, ok := asOfOf(r.Value)
				mu.Lock()
				defer mu.Unlock()
				total++
				if !ok || asOf.UnixNano() < measureFrom.Load() || asOf.UnixNano() > measureTo.Load() {
					return
				}
				recv = append(recv, float64(now.Sub(asOf))/1e6)
				stamp = append(stamp, float64(r.Timestamp.Sub(asOf))/1e6)
			})
		}
	}()

	prod, err := e.client(kgo.ProducerLinger(0))
	if err != nil {
		ccancel()
		return res, err
	}
	defer prod.Close()
	start := time.Now()
	measureFrom.Store(start.Add(warm).UnixNano())
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
	measureTo.Store(end.UnixNano())
	if err := prod.Flush(ctx); err != nil {
		ccancel()
		return res, err
	}
	if v := perr.Load(); v != nil {
		ccancel()
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
	ccancel()
	<-cdone
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	res.Samples, res.EstimatesTotal = len(recv), total
	res.Recv, res.Stamp = percentiles(recv), percentiles(stamp)
	return res, nil
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
