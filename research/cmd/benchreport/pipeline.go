package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// storeConfig is the Redis store configuration of every run: compact keys
// (the format that meets the memory budget), the aggregator's default idle
// TTL, no expiry subscription.
func storeConfig(format string) state.RedisConfig {
	return state.RedisConfig{KeyPrefix: "cr:", KeyFormat: format, IdleTTL: 720 * time.Hour, ExpiryEvents: state.ExpiryEventsOff}
}

// errStalled marks a run that made no progress for stallAfter.
var errStalled = errors.New("stalled")

const stallAfter = 30 * time.Second

// dumpGoroutines writes every goroutine's stack to file (in the temporary
// directory), for diagnosing a stall.
func dumpGoroutines(file string) {
	f, err := os.Create(filepath.Join(os.TempDir(), file))
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
}

// runResult is one measured run.
type runResult struct {
	Name      string
	Committed int64
	// Elapsed is from the first partition claim to the last commit;
	// Total from starting the source (group join included).
	Elapsed, Total time.Duration
	Estimates      float64 // estimate records published
	Outputs        float64 // all output records
	CacheMisses    float64
	// Mean seconds per batch: whole batch, output write, store get and
	// commit; Batches is the number of batches.
	BatchS, SinkS, GetS, CommitS float64
	// PerMessage is the in-flight budget's learned bytes per message at
	// the end of the run (changerate_aggregator_inflight_bytes_per_message).
	PerMessage float64
	Batches    uint64
	// CPU seconds used during the run by this process (aggregator and
	// the in-process broker) and by redis-server.
	ProcCPU, RedisCPU float64
	// Run-queue wait of this process's and redis-server's threads.
	ProcWait, RedisWait float64
}

// cpuPerObs returns CPU microseconds per committed observation: process,
// Redis, total.
func (r runResult) cpuPerObs() (proc, redis, total float64) {
	n := float64(max(r.Committed, 1))
	return r.ProcCPU / n * 1e6, r.RedisCPU / n * 1e6, (r.ProcCPU + r.RedisCPU) / n * 1e6
}

func (r runResult) rate() float64 { return float64(r.Committed) / r.Elapsed.Seconds() }

// runPipeline runs the real aggregator path (KafkaSource → Processor →
// Redis state, KafkaSink) over the first want messages of the observations
// topic, from an empty Redis, until all of them are committed.
func runPipeline(ctx context.Context, e *env, name string, want int64, mutate func(*aggregate.Config), deadline time.Duration) (runResult, error) {
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return runResult{}, err
	}
	reg := prometheus.NewRegistry()
	store, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatCompact), nil, reg)
	if err != nil {
		return runResult{}, err
	}
	defer store.Close()
	kc := e.kafkaConfig("bench-" + name)
	sink, err := stream.NewKafkaSink(kc, nil, reg)
	if err != nil {
		return runResult{}, err
	}
	defer sink.Close()
	src, err := stream.NewKafkaSource(kc, []string{stream.TopicObservations}, nil, reg)
	if err != nil {
		return runResult{}, err
	}
	defer src.Close()
	cfg := aggregate.DefaultConfig()
	t := topicsFor(name)
	cfg.EstimatesTopic, cfg.AccessReportsTopic, cfg.AlertsTopic, cfg.DeadLetterTopic = t.estimates, t.reports, t.alerts, t.dead
	if mutate != nil {
		mutate(&cfg)
	}
	proc, err := aggregate.NewProcessor(cfg, store, sink, slog.New(slog.DiscardHandler), reg, time.Now)
	if err != nil {
		return runResult{}, err
	}
	var first atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0 := e.cpu(ctx)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- src.Run(rctx, func(ctx context.Context, c stream.Claim) error {
			first.CompareAndSwap(0, time.Now().UnixNano())
			return proc.Handle(ctx, c)
		})
	}()
	res := runResult{Name: name}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(deadline)
	last, lastMove := int64(-1), time.Now()
	for proc.Committed() < want {
		select {
		case err := <-done:
			return res, fmt.Errorf("pipeline %s: source stopped after %d of %d: %v", name, proc.Committed(), want, err)
		case <-limit:
			return res, fmt.Errorf("pipeline %s: only %d of %d committed after %s", name, proc.Committed(), want, deadline)
		case <-tick.C:
		}
		if n := proc.Committed(); n != last {
			last, lastMove = n, time.Now()
		} else if time.Since(lastMove) > stallAfter {
			dumpGoroutines("benchreport-stall-" + name + ".txt")
			return res, fmt.Errorf("%w: pipeline %s: %d of %d committed, no progress for %s (goroutines in %s)",
				errStalled, name, n, want, stallAfter, filepath.Join(os.TempDir(), "benchreport-stall-"+name+".txt"))
		}
	}
	end := time.Now()
	cpu1 := e.cpu(ctx)
	res.ProcCPU, res.RedisCPU = cpu1.proc-cpu0.proc, cpu1.redis-cpu0.redis
	res.ProcWait, res.RedisWait = cpu1.procWait-cpu0.procWait, cpu1.redisWait-cpu0.redisWait
	cancel()
	<-done
	res.Committed = proc.Committed()
	res.Elapsed = end.Sub(time.Unix(0, first.Load()))
	res.Total = end.Sub(start)
	res.Estimates = value(reg, "changerate_aggregator_estimates_out_total")
	res.Outputs = value(reg, "changerate_aggregator_output_records_total")
	res.CacheMisses = value(reg, "changerate_aggregator_cache_lookups_total", "result", "miss")
	res.BatchS, res.Batches = histMean(reg, "changerate_aggregator_batch_seconds")
	res.SinkS, _ = histMean(reg, "changerate_aggregator_output_write_seconds")
	res.GetS, _ = histMean(reg, "changerate_aggregator_store_seconds", "op", "get")
	res.CommitS, _ = histMean(reg, "changerate_aggregator_store_seconds", "op", "commit")
	res.PerMessage = value(reg, "changerate_aggregator_inflight_bytes_per_message")
	return res, nil
}

// naiveCommit is the naive design's per-observation atomic step: check the
// partition's epoch and offset, write the object's state and the next
// offset.
var naiveCommit = redis.NewScript(`
local st = redis.call('HMGET', KEYS[1], 'epoch', 'next')
if st[1] ~= ARGV[1] then return 1 end
if (st[2] or '-1') ~= ARGV[2] then return 2 end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
redis.call('HSET', KEYS[1], 'next', ARGV[3])
return 0
`)

// runNaive consumes the same topic with the same source and the same
// Object code, but one observation at a time: a state read (GET) and one
// atomic Lua write (state + offset, compare-and-set) per observation, or,
// with cached, an in-process cache of the partition's objects so that the
// Lua write is the only round trip (GET on a miss only). It publishes no
// outputs (which favours it). It stops after want messages or limit.
func runNaive(ctx context.Context, e *env, name string, cached bool, want int64, limit time.Duration) (runResult, error) {
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return runResult{}, err
	}
	reg := prometheus.NewRegistry()
	store, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatCompact), nil, reg)
	if err != nil {
		return runResult{}, err
	}
	defer store.Close()
	kc := e.kafkaConfig("naive-" + name)
	src, err := stream.NewKafkaSource(kc, []string{stream.TopicObservations}, nil, reg)
	if err != nil {
		return runResult{}, err
	}
	defer src.Close()
	if err := naiveCommit.Load(ctx, e.rc).Err(); err != nil {
		return runResult{}, err
	}
	model := aggregate.DefaultModel()
	ttl := fmt.Sprint((720 * time.Hour).Milliseconds())
	var committed atomic.Int64
	var first atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	handle := func(ctx context.Context, c stream.Claim) error {
		first.CompareAndSwap(0, time.Now().UnixNano())
		part := state.Partition{Topic: c.Topic(), ID: c.Partition()}
		next, err := store.Claim(ctx, part, c.Generation())
		if err != nil {
			return err
		}
		if err := c.SeekTo(next); err != nil {
			return err
		}
		meta := store.MetaKey(part)
		epoch := fmt.Sprint(c.Generation())
		var eff aggregate.Effects
		var obj aggregate.Object
		var buf []byte
		objs := map[string]aggregate.Object{}
		for {
			msgs, err := c.Fetch(ctx, 2000)
			if err != nil {
				return nil
			}
			for _, m := range msgs {
				if ctx.Err() != nil {
					return nil
				}
				to := m.Offset + 1
				obs, derr := records.DecodeObservation(m.Value)
				key := ""
				buf = buf[:0]
				if derr == nil {
					key = store.ObjectKey(part, obs.Object)
					var hit bool
					if cached {
						obj, hit = objs[obs.Object]
					}
					if !hit {
						v, err := e.rc.Get(ctx, key).Bytes()
						obj = aggregate.Object{}
						switch {
						case errors.Is(err, redis.Nil):
						case err != nil:
							return nil
						default:
							if err := obj.DecodeBinary(v); err != nil {
								obj = aggregate.Object{}
							}
						}
					}
					eff.Reset()
					obj.Apply(&obs, &model, &eff)
					buf = obj.AppendBinary(buf)
				} else {
					key = meta + ":dead" // keep the offset moving
				}
				code, err := naiveCommit.EvalSha(ctx, e.rc, []string{meta, key}, epoch, fmt.Sprint(next), fmt.Sprint(to), buf, ttl).Int()
				if err != nil || code != 0 {
					if ctx.Err() == nil {
						errMu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("naive commit %v@%d: code %d, %v", part, m.Offset, code, err)
						}
						errMu.Unlock()
					}
					return nil
				}
				next = to
				if cached && derr == nil {
					objs[obs.Object] = obj
				}
				committed.Add(1)
			}
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0 := e.cpu(ctx)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- src.Run(rctx, handle) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var stop <-chan time.Time
	res := runResult{Name: name}
loop:
	for committed.Load() < want {
		select {
		case err := <-done:
			return res, fmt.Errorf("naive %s: source stopped: %v", name, err)
		case <-stop:
			break loop
		case <-tick.C:
			if stop == nil && first.Load() != 0 {
				stop = time.After(limit)
			}
		}
	}
	end := time.Now()
	n := committed.Load()
	cpu1 := e.cpu(ctx)
	res.ProcCPU, res.RedisCPU = cpu1.proc-cpu0.proc, cpu1.redis-cpu0.redis
	res.ProcWait, res.RedisWait = cpu1.procWait-cpu0.procWait, cpu1.redisWait-cpu0.redisWait
	cancel()
	<-done
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return res, firstErr
	}
	res.Committed = n
	res.Elapsed = end.Sub(time.Unix(0, first.Load()))
	res.Total = end.Sub(start)
	return res, nil
}
