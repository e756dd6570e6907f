package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/state"
)

// The I/O floor of a live run: the work no implementation of the pipeline
// can skip, measured in the same run on the same broker and Redis, each
// process on its own:
//
//   - read: kcat reads the observations topic (runLive's kcat read);
//   - publish: kcat produces the estimate records the aggregator published
//     (read back from its estimates topic first, not measured) to the same
//     broker;
//   - state: this program sends Redis as many state writes as the
//     aggregator's commits wrote (changerate_state_commit_batch_objects),
//     each an HSET of a value of the mean state size (plus the 6-byte
//     stamp) into a bucket of the bucketed layout, pipelined 1000 to a
//     round trip; the buckets are as many as the aggregator's run used
//     (the partitions' meta hashes and their stored bucket counts,
//     floorBuckets), so that the floor's keys are the run's.
//
// The pipeline's CPU per observation is then compared with the floor's,
// per process: aggregator ÷ (the kcat reader + the kcat producer + the
// HSET client), broker ÷ broker (reading and producing), Redis ÷ Redis.

// floorResult is the floor's CPU, µs per observation of the run.
type floorResult struct {
	ReadClient, ReadBroker   float64 // kcat -C and the broker while it reads
	PubClient, PubBroker     float64 // kcat -P and the broker while it produces
	Published                int     // estimate records produced
	StateClient, StateRedis  float64 // the HSET client (this process) and redis-server
	StateWrites              int64
	StateValueBytes          int
	Parts, Buckets           int   // partitions and buckets per partition of the run (floorBuckets)
	UsedBefore, UsedAfter    int64 // Redis used_memory before the aggregator started and at its end
	UsedPerObject            float64
	PipelineAgg, PipelineRed float64 // copies of the run's, for the ratios
}

// client, broker and redis are the floor's per-process sums.
func (f floorResult) client() float64 { return f.ReadClient + f.PubClient + f.StateClient }
func (f floorResult) broker() float64 { return f.ReadBroker + f.PubBroker }
func (f floorResult) total() float64  { return f.client() + f.broker() + f.StateRedis }

// childCPU returns the CPU seconds (user + system) of a finished command.
func childCPU(c *exec.Cmd) float64 {
	if c.ProcessState == nil {
		return 0
	}
	return (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
}

// floorPublish exports the estimates topic with kcat (not measured) and
// produces the same records to the same topic with kcat -P, measuring
// kcat's CPU and the broker's; n is the observations of the run.
func floorPublish(ctx context.Context, lp *liveProcs, n float64, f *floorResult) error {
	file, err := os.CreateTemp("", "benchreport-estimates-*.txt")
	if err != nil {
		return err
	}
	defer os.Remove(file.Name())
	exp := exec.CommandContext(ctx, "kcat", "-C", "-b", lp.addr, "-t", "estimates", "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n")
	exp.Stdout = file
	if err := exp.Run(); err != nil {
		file.Close()
		return fmt.Errorf("floor: kcat export of the estimates: %w", err)
	}
	if err := file.Close(); err != nil {
		return err
	}
	b, err := os.ReadFile(file.Name())
	if err != nil {
		return err
	}
	f.Published = bytes.Count(b, []byte{'\n'})
	in, err := os.Open(file.Name())
	if err != nil {
		return err
	}
	defer in.Close()
	pr := exec.CommandContext(ctx, "kcat", "-P", "-b", lp.addr, "-t", "estimates", "-K", "\t", "-z", "none")
	pr.Stdin = bufio.NewReaderSize(in, 1<<20)
	brk0 := procCPU(lp.broker.Process.Pid)
	if err := pr.Run(); err != nil {
		return fmt.Errorf("floor: kcat produce: %w", err)
	}
	f.PubBroker = (procCPU(lp.broker.Process.Pid) - brk0) / n * 1e6
	f.PubClient = childCPU(pr) / n * 1e6
	return nil
}

// floorBuckets returns the partitions of the run in Redis (their meta
// hashes, "{tag}:meta") and their bucket count (the "nb" each stored at
// its first claim), which must be the same for all. A run in a per-object
// layout stores no bucket count: its floor is the same writes into
// state.DefaultBuckets buckets, the work the default layout needs.
func floorBuckets(ctx context.Context, e *env) (parts, nb int, err error) {
	it := e.rc.Scan(ctx, 0, "*:meta", 1000).Iterator()
	perObject := 0
	for it.Next(ctx) {
		s, err := e.rc.HGet(ctx, it.Val(), "nb").Result()
		if errors.Is(err, redis.Nil) {
			perObject++
			parts++
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("floor: bucket count of %s: %w", it.Val(), err)
		}
		b, err := strconv.Atoi(s)
		if err != nil || b <= 0 || (nb != 0 && b != nb) {
			return 0, 0, fmt.Errorf("floor: bucket count %q of %s (others: %d)", s, it.Val(), nb)
		}
		nb = b
		parts++
	}
	if err := it.Err(); err != nil {
		return 0, 0, fmt.Errorf("floor: scanning the meta hashes: %w", err)
	}
	if parts == 0 {
		return 0, 0, fmt.Errorf("floor: no partition meta hash in Redis")
	}
	switch {
	case perObject == parts:
		nb = state.DefaultBuckets
	case perObject > 0:
		return 0, 0, fmt.Errorf("floor: %d of %d partitions store no bucket count", perObject, parts)
	}
	return parts, nb, nil
}

// floorState sends writes HSETs of valueBytes-byte values of objects
// objects (fields cycling over them, as the run's updates do) over parts
// partitions' nb buckets, pipelined, and measures Redis's CPU and this
// process's; n is the observations of the run. Redis is flushed after.
func floorState(ctx context.Context, e *env, writes int64, objects, valueBytes, parts, nb int, n float64, f *floorResult) error {
	f.StateWrites, f.StateValueBytes, f.Parts, f.Buckets = writes, valueBytes, parts, nb
	value := bytes.Repeat([]byte{'s'}, valueBytes+6)
	const batch = 1000
	keys := make([]string, parts*nb)
	for i := range keys {
		keys[i] = fmt.Sprintf("{F%d}:%d", i/nb, i%nb)
	}
	self0, red0 := procCPU(os.Getpid()), e.cpu(ctx).redis
	field := make([]byte, 10)
	for i := int64(0); i < writes; {
		pipe := e.rc.Pipeline()
		for j := 0; j < batch && i < writes; j, i = j+1, i+1 {
			// An object's field (10 bytes, like a compact field) in its
			// bucket; the writes cycle over the objects.
			o := i % int64(objects)
			strconv.AppendInt(field[:0], o+1e9, 10)
			pipe.HSet(ctx, keys[int(o)%len(keys)], string(field), value)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("floor: HSET pipeline: %w", err)
		}
	}
	f.StateClient = (procCPU(os.Getpid()) - self0) / n * 1e6
	f.StateRedis = (e.cpu(ctx).redis - red0) / n * 1e6
	return e.rc.FlushAll(ctx).Err()
}

// commandCalls returns Redis's calls per command (INFO commandstats,
// lower case: "hset", "exec", ...); nil if INFO fails.
func commandCalls(ctx context.Context, e *env) map[string]int64 {
	s, err := e.rc.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, l := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		if v, err := strconv.ParseInt(n, 10, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// writeFloor writes the floor table of the live runs.
func writeFloor(p func(string, ...any), live []liveResult) {
	p("\n### The I/O floor, measured in the same runs\n\n")
	p("The work no implementation can skip, on the same broker and Redis after each run: `kcat -C` reading the observations (above),\n")
	p("`kcat -P -z none` producing the estimate records the aggregator published (exported from its topic first, not measured),\n")
	p("and as many state writes as the aggregator's commits wrote, each one `HSET` of a value of the mean state size (+ the\n")
	p("6-byte stamp) into one of the run's buckets (its partitions × the bucket count stored in their meta hashes), pipelined\n")
	p("1000 to a round trip from this program (go-redis); *HSET calls* are Redis's (`INFO commandstats`) in the run's measured\n")
	p("interval, with the state writes per call, and the floor's (one per write). Each process's\n")
	p("CPU per observation of the run; *pipeline ÷ floor* divides the aggregator's by the three clients' sum, the broker's by the\n")
	p("broker's and Redis's by Redis's. Redis memory: `used_memory` at the end of the run minus before it, per object.\n\n")
	p("| run | kcat read µs/obs | kcat produce µs/obs | HSET client µs/obs | broker µs/obs | redis µs/obs | floor total µs/obs | state writes | estimates | buckets | HSET calls (writes per call) | aggregator ÷ clients | broker ÷ broker | redis ÷ redis | total ÷ total | redis B/object |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, l := range live {
		f := l.Floor
		if f == nil {
			continue
		}
		pipe := l.AggCPU + l.BrokerCPU + l.RedisCPU
		p("| l%d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %d | %d × %d | %d (%.1f) | %.2f | %.2f | %.2f | **%.2f** | **%.0f** |\n", i+1,
			f.ReadClient, f.PubClient, f.StateClient, f.broker(), f.StateRedis, f.total(), f.StateWrites, f.Published,
			f.Parts, f.Buckets, l.HSETCalls, ratio(float64(f.StateWrites), float64(l.HSETCalls)),
			ratio(l.AggCPU, f.client()), ratio(l.BrokerCPU, f.broker()), ratio(l.RedisCPU, f.StateRedis), ratio(pipe, f.total()), f.UsedPerObject)
	}
}

// floorAfterRun measures the floor after a live run (see floorResult).
func floorAfterRun(ctx context.Context, e *env, lp *liveProcs, res *liveResult, usedBefore int64) {
	f := &floorResult{UsedBefore: usedBefore}
	res.Floor = f
	n := float64(res.Measured)
	if u, err := usedMemory(ctx, e); err == nil {
		f.UsedAfter = u
		f.UsedPerObject = float64(u-usedBefore) / float64(res.Objects)
	}
	writes := int64(lp.metric("changerate_state_commit_batch_objects_sum"))
	sb, sc := lp.metric("changerate_aggregator_state_bytes_sum"), lp.metric("changerate_aggregator_state_bytes_count")
	valueBytes := 100
	if sc > 0 {
		valueBytes = int(sb/sc + 0.5)
	}
	// The aggregator is stopped first: the floor runs alone.
	_ = lp.agg.Process.Signal(os.Interrupt)
	_ = lp.agg.Wait()
	lp.agg = nil
	f.ReadClient, f.ReadBroker = res.kcatCPU/n*1e6, res.kcatBrokerCPU/n*1e6
	if err := floorPublish(ctx, lp, n, f); err != nil {
		res.Err = strings.TrimSpace(res.Err + " " + err.Error())
	}
	parts, nb, err := floorBuckets(ctx, e)
	if err != nil {
		res.Err = strings.TrimSpace(res.Err + " " + err.Error())
		return
	}
	if err := floorState(ctx, e, writes, res.Objects, valueBytes, parts, nb, n, f); err != nil {
		res.Err = strings.TrimSpace(res.Err + " " + err.Error())
	}
}

// floorTargets are issue 35's targets, judged on the live runs (medians of
// per-run values) and, for memory, on the large run: Redis CPU per
// observation, Redis used_memory per object at the large run's objects,
// the rate against kcat's read of the same topic, and the pipeline's CPU
// against the floor's.
func floorTargets(live []liveResult, large *liveResult) []target {
	var red, q, fl []float64
	for _, l := range live {
		red = append(red, l.RedisCPU)
		q = append(q, ratio(l.Rate, l.KcatRate))
		if l.Floor != nil {
			fl = append(fl, ratio(l.AggCPU+l.BrokerCPU+l.RedisCPU, l.Floor.total()))
		}
	}
	out := []target{
		{"redis CPU per observation, live shape (median)", "≤ 1.0 µs", fmt.Sprintf("%.2f µs", median(red)), median(red) <= 1.0},
		{"live shape ÷ kcat reading the same topic (median of per-run ratios)", "≥ 0.45", fmt.Sprintf("%.2f", median(q)), median(q) >= 0.45},
	}
	if len(fl) > 0 {
		out = append(out, target{"pipeline CPU ÷ I/O floor CPU per observation, all processes (median)", "≤ 2", fmt.Sprintf("%.2f", median(fl)), median(fl) <= 2})
	}
	if large != nil && large.Floor != nil {
		u := large.Floor.UsedPerObject
		out = append(out, target{fmt.Sprintf("redis used_memory growth per object, %d objects", large.Objects), "≤ 150 B", fmt.Sprintf("%.0f B", u), u <= 150})
	}
	return out
}

// writeFloorTargets writes floorTargets as a table.
func writeFloorTargets(p func(string, ...any), live []liveResult, large *liveResult) {
	p("\n**Issue 35's targets** (this session's live runs; the naive design's ratio is the throughput section's):\n\n")
	p("| target | wanted | measured | verdict |\n|---|---|---:|---|\n")
	for _, t := range floorTargets(live, large) {
		v := "✗ missed"
		if t.met {
			v = "✓ met"
		}
		p("| %s | %s | %s | %s |\n", t.what, t.bound, t.measured, v)
	}
}
