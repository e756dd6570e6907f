package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// dist summarises a sample of sizes in bytes.
type dist struct {
	N                     int
	Mean                  float64
	P50, P90, P99, Max    float64
	ValueMean, ValueP99   float64 // encoded state size (STRLEN)
	ObsMean               float64 // observations per object in the sample
	OverBudget            int     // samples above 256 bytes
	ReadableMean, ReadP99 float64 // the same values under readable keys
}

func summarise(usage, value, obs, readable []float64) dist {
	d := dist{N: len(usage)}
	if len(usage) == 0 {
		return d
	}
	p := percentiles(usage)
	d.P50, d.P90, d.P99, d.Max = p[0], p[1], p[2], p[3]
	d.Mean = mean(usage)
	d.ValueMean, d.ValueP99 = mean(value), percentiles(value)[2]
	d.ObsMean = mean(obs)
	for _, u := range usage {
		if u > 256 {
			d.OverBudget++
		}
	}
	if len(readable) > 0 {
		d.ReadableMean, d.ReadP99 = mean(readable), percentiles(readable)[2]
	}
	return d
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// memoryAfterRun samples the objects of the workload that the last
// pipeline run left in Redis: MEMORY USAGE per class, and the same values
// under readable keys (written to a scratch prefix) for comparison.
func memoryAfterRun(ctx context.Context, e *env, w *workload, counts map[string]int, perClass int) ([numClasses]dist, error) {
	var out [numClasses]dist
	compact, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatCompact), nil, nil)
	if err != nil {
		return out, err
	}
	defer compact.Close()
	rcfg := storeConfig(state.KeyFormatReadable)
	rcfg.KeyPrefix = "rd:"
	readable, err := state.NewRedisFromClient(e.rc, rcfg, nil, nil)
	if err != nil {
		return out, err
	}
	defer readable.Close()
	r := rand.New(rand.NewPCG(5, 5))
	for cl := range numClasses {
		var names []string
		for _, o := range w.objs {
			if o.class == cl && counts[o.name] > 0 {
				names = append(names, o.name)
			}
		}
		r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		var usage, value, obs, rd []float64
		held := 0
		for _, n := range names {
			if len(usage) == perClass {
				break
			}
			p := state.Partition{Topic: stream.TopicObservations, ID: partitionOf(n, e.parts)}
			u, err := compact.MemoryUsage(ctx, p, n)
			if err != nil {
				return out, err
			}
			if u == 0 {
				// Its observations are all in the last REORDER_WINDOW of
				// event time: the partition's reorder buffer still holds
				// them, so the object has no state yet.
				held++
				continue
			}
			v, err := e.rc.Get(ctx, compact.ObjectKey(p, n)).Bytes()
			if err != nil {
				return out, err
			}
			rk := readable.ObjectKey(p, n)
			if err := e.rc.Set(ctx, rk, v, 720*time.Hour).Err(); err != nil {
				return out, err
			}
			ru, err := e.rc.MemoryUsage(ctx, rk, 0).Result()
			if err != nil {
				return out, err
			}
			usage = append(usage, float64(u))
			value = append(value, float64(len(v)))
			obs = append(obs, float64(counts[n]))
			rd = append(rd, float64(ru))
		}
		if held > 0 {
			logf("memory sample, class %d: %d objects skipped, still in the reorder buffer at the end of the run", cl, held)
		}
		out[cl] = summarise(usage, value, obs, rd)
	}
	return out, nil
}

// matureResult is the memory of objects with long histories.
type matureResult struct {
	Objects      int
	Days         int
	Classes      [numClasses]dist
	UsedPerObj   float64 // used_memory growth per object (compact keys)
	Observations int64
}

// memoryMature builds perClass objects of each class with days of history
// (crawl: visits every 1–12 h with digests; proxy: Poisson accesses every
// 10 min–1 day and revalidations every ~6 h; mixed: both) by applying
// observations with aggregate.Object directly, commits the states through
// state.Redis (compact keys) into an empty Redis, and samples MEMORY USAGE.
func memoryMature(ctx context.Context, e *env, perClass, days, sample int) (matureResult, error) {
	res := matureResult{Objects: perClass * numClasses, Days: days}
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return res, err
	}
	store, err := state.NewRedisFromClient(e.rc, storeConfig(state.KeyFormatCompact), nil, nil)
	if err != nil {
		return res, err
	}
	defer store.Close()
	rcfg := storeConfig(state.KeyFormatReadable)
	rcfg.KeyPrefix = "rd:"
	readable, err := state.NewRedisFromClient(e.rc, rcfg, nil, nil)
	if err != nil {
		return res, err
	}
	defer readable.Close()
	used0, err := usedMemory(ctx, e)
	if err != nil {
		return res, err
	}
	model := aggregate.DefaultModel()
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(11, 7))
	parts := e.parts
	for p := 0; p < parts; p++ {
		if _, err := store.Claim(ctx, state.Partition{Topic: "mature", ID: int32(p)}, 1); err != nil {
			return res, err
		}
	}
	pending := make([][]state.Write, parts)
	next := make([]int64, parts)
	for i := range next {
		next[i] = -1
	}
	flush := func(p int) error {
		if len(pending[p]) == 0 {
			return nil
		}
		part := state.Partition{Topic: "mature", ID: int32(p)}
		to := next[p] + int64(len(pending[p])) + 1
		if err := store.Commit(ctx, part, 1, next[p], to, pending[p]); err != nil {
			return err
		}
		next[p] = to
		pending[p] = pending[p][:0]
		return nil
	}
	type sampled struct {
		name  string
		class int
		obs   int
	}
	var samples []sampled
	var eff aggregate.Effects
	for i := 0; i < res.Objects; i++ {
		cl := i % numClasses
		name := fmt.Sprintf("https://site%d.example.org/%s/page-%07d.html", i%101, classNames[cl], i)
		var o aggregate.Object
		n := sim.History(r, sim.HistoryClass(cl), name, start, float64(days), func(obs *records.Observation) {
			eff.Reset()
			o.Apply(obs, &model, &eff)
		})
		res.Observations += int64(n)
		p := int(partitionOf(name, parts))
		pending[p] = append(pending[p], state.Write{Object: name, Value: o.AppendBinary(nil)})
		if len(pending[p]) >= 1000 {
			if err := flush(p); err != nil {
				return res, err
			}
		}
		if len(samples) < sample*numClasses {
			samples = append(samples, sampled{name, cl, n})
		}
	}
	for p := range parts {
		if err := flush(p); err != nil {
			return res, err
		}
	}
	used1, err := usedMemory(ctx, e)
	if err != nil {
		return res, err
	}
	res.UsedPerObj = float64(used1-used0) / float64(res.Objects)
	var usage, value, obs, rd [numClasses][]float64
	for _, s := range samples {
		p := state.Partition{Topic: "mature", ID: partitionOf(s.name, parts)}
		u, err := store.MemoryUsage(ctx, p, s.name)
		if err != nil {
			return res, err
		}
		if u == 0 {
			return res, fmt.Errorf("memory: %s not stored", s.name)
		}
		v, err := e.rc.Get(ctx, store.ObjectKey(p, s.name)).Bytes()
		if err != nil {
			return res, err
		}
		rk := readable.ObjectKey(p, s.name)
		if err := e.rc.Set(ctx, rk, v, 720*time.Hour).Err(); err != nil {
			return res, err
		}
		ru, err := e.rc.MemoryUsage(ctx, rk, 0).Result()
		if err != nil {
			return res, err
		}
		usage[s.class] = append(usage[s.class], float64(u))
		value[s.class] = append(value[s.class], float64(len(v)))
		obs[s.class] = append(obs[s.class], float64(s.obs))
		rd[s.class] = append(rd[s.class], float64(ru))
	}
	for cl := range numClasses {
		res.Classes[cl] = summarise(usage[cl], value[cl], obs[cl], rd[cl])
	}
	return res, nil
}

func usedMemory(ctx context.Context, e *env) (int64, error) {
	s, err := e.rc.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO")
}

var _ = sort.Float64s
