package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/cputime"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
)

// valueSize is the size of a realistic encoded object state.
const valueSize = 180

// objectName returns a realistic URL of object i.
func objectName(i int) string {
	return fmt.Sprintf("https://www.example.org/articles/%07d/index.html", i)
}

// fill commits n objects with valueSize-byte pseudo-random values to p in
// batches of 1000, starting from offset -1 (p must be claimed with epoch
// 1 and empty), and returns the next offset.
func fill(tb testing.TB, s state.Store, p state.Partition, n int, seed uint64) int64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	pool := make([]byte, 1<<16)
	for k := range pool {
		pool[k] = byte(rng.Uint32())
	}
	from := int64(-1)
	w := make([]state.Write, 0, 1000)
	for i := 0; i < n; i += 1000 {
		w = w[:0]
		for j := i; j < i+1000 && j < n; j++ {
			off := rng.IntN(len(pool) - valueSize)
			w = append(w, state.Write{Object: objectName(j), Value: pool[off : off+valueSize]})
		}
		to := from + int64(len(w)) + 1
		if err := s.Commit(ctx, p, 1, from, to, w); err != nil {
			tb.Fatal(err)
		}
		from = to
	}
	return from
}

// memoryPerObject returns the mean MEMORY USAGE of sample objects of the
// n in p, chosen evenly.
func memoryPerObject(tb testing.TB, r *state.Redis, p state.Partition, n, sample int) float64 {
	tb.Helper()
	if sample > n {
		sample = n
	}
	var sum int64
	for i := 0; i < sample; i++ {
		u, err := r.MemoryUsage(ctx, p, objectName(i*n/sample))
		if err != nil {
			tb.Fatal(err)
		}
		if u == 0 {
			tb.Fatalf("object %d not stored", i*n/sample)
		}
		sum += u
	}
	return float64(sum) / float64(sample)
}

// TestMemoryUsage writes 20,000 objects with 180-byte values and checks
// MEMORY USAGE per object against the budget of 256 bytes for each key
// format that is meant to meet it.
func TestMemoryUsage(t *testing.T) {
	s := redistest.Start(t)
	for _, c := range []struct {
		format string
		budget float64 // 0: report only
	}{
		{state.KeyFormatReadable, 0},
		{state.KeyFormatCompact, 256},
	} {
		t.Run(c.format, func(t *testing.T) {
			r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "mu:", KeyFormat: c.format, IdleTTL: 24 * time.Hour})
			if _, err := r.Claim(ctx, part, 1); err != nil {
				t.Fatal(err)
			}
			const n = 20000
			fill(t, r, part, n, 1)
			if u, err := r.MemoryUsage(ctx, part, "missing"); err != nil || u != 0 {
				t.Fatalf("MemoryUsage of a missing object = %d, %v; want 0, nil", u, err)
			}
			avg := memoryPerObject(t, r, part, n, 2000)
			t.Logf("%s keys, %d-byte values: MEMORY USAGE %.1f bytes/object (e.g. key %q)", c.format, valueSize, avg, r.ObjectKey(part, objectName(0)))
			if avg < valueSize {
				t.Fatalf("MEMORY USAGE %.1f is less than the value", avg)
			}
			if c.budget > 0 && avg > c.budget {
				t.Fatalf("MEMORY USAGE %.1f bytes/object exceeds the budget %v", avg, c.budget)
			}
		})
	}
}

// BenchmarkMemoryPerObject writes 1,000,000 objects with 180-byte values
// through Commit (batches of 1000, IdleTTL set) into a fresh redis-server
// per key format and reports the mean MEMORY USAGE of 10,000 sampled keys
// and the server's used_memory growth per object. It does the work once per
// process; run with -benchtime=1x:
//
//	go test -bench MemoryPerObject -benchtime=1x -run '^$' ./state
func BenchmarkMemoryPerObject(b *testing.B) {
	for _, format := range []string{state.KeyFormatReadable, state.KeyFormatCompact, state.KeyFormatBuckets} {
		b.Run(format, func(b *testing.B) {
			res := memoryResult(b, format)
			for b.Loop() {
			}
			b.ReportMetric(res.usage, "bytes/object")
			b.ReportMetric(res.used, "used_memory/object")
			b.ReportMetric(res.objPerSec, "objects/s")
		})
	}
}

type memRes struct{ usage, used, objPerSec float64 }

var memOnce sync.Map // format → *memRes

func memoryResult(b *testing.B, format string) memRes {
	if v, ok := memOnce.Load(format); ok {
		return *v.(*memRes)
	}
	const n = 1_000_000
	s := redistest.Start(b)
	r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyFormat: format, IdleTTL: 24 * time.Hour, ExpiryEvents: state.ExpiryEventsOff}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Claim(ctx, part, 1); err != nil {
		b.Fatal(err)
	}
	before := usedMemory(b, s)
	start := time.Now()
	fill(b, r, part, n, 1)
	el := time.Since(start)
	res := &memRes{
		usage:     memoryPerObject(b, r, part, n, 10000),
		used:      float64(usedMemory(b, s)-before) / n,
		objPerSec: n / el.Seconds(),
	}
	memOnce.Store(format, res)
	return *res
}

func usedMemory(tb testing.TB, s *redistest.Server) int64 {
	tb.Helper()
	info, err := s.Client.Info(ctx, "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("no used_memory in INFO memory")
	return 0
}

// serverMicros returns the total microseconds redis-server spent in the
// commit's commands since the last CONFIG RESETSTAT (0 if c is not
// Redis): EVAL and EVALSHA (the scripts), and the transaction's WATCH,
// HMGET, MULTI, HSET, HDEL and EXEC (EXEC's own time, without the
// commands it runs, which are counted under their names).
func serverMicros(b *testing.B, st state.Store) float64 {
	r, ok := st.(*state.Redis)
	if !ok {
		return 0
	}
	info, err := r.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		switch name {
		case "cmdstat_evalsha", "cmdstat_eval", "cmdstat_watch", "cmdstat_hmget", "cmdstat_multi", "cmdstat_hset", "cmdstat_hdel", "cmdstat_exec":
		default:
			continue
		}
		for _, f := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}

// serverCPU returns redis-server's CPU seconds (used_cpu_user +
// used_cpu_sys: parsing, replies and the commands), 0 if st is not Redis.
func serverCPU(b *testing.B, st state.Store) float64 {
	r, ok := st.(*state.Redis)
	if !ok {
		return 0
	}
	info, err := r.Client().Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				x, _ := strconv.ParseFloat(v, 64)
				total += x
			}
		}
	}
	return total
}

func resetStats(b *testing.B, st state.Store) {
	if r, ok := st.(*state.Redis); ok {
		if err := r.Client().ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStores are the stores benchmarked: Memory, a fresh Redis with the
// bucketed layout (the default) and one with the previous release's
// compact per-object keys.
func benchStores(b *testing.B) map[string]state.Store {
	m, err := state.NewMemory(state.MemoryConfig{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]state.Store{"memory": m}
	for name, format := range map[string]string{"redis": state.KeyFormatBuckets, "redis-compact": state.KeyFormatCompact} {
		s := redistest.Start(b)
		r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyFormat: format, IdleTTL: time.Hour, ExpiryEvents: state.ExpiryEventsOff}, nil, prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = r.Close() })
		out[name] = r
	}
	return out
}

// BenchmarkCommit1000 commits batches of 1000 objects with 180-byte
// values (one Lua script or, in the bucketed layout, one transaction per
// batch) and reports objects/s and Redis's time and CPU per object.
func BenchmarkCommit1000(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			const batch = 1000
			from, err := s.Claim(ctx, part, 1)
			if err != nil {
				b.Fatal(err)
			}
			w := make([]state.Write, batch)
			for i := range w {
				w[i] = state.Write{Object: objectName(i), Value: make([]byte, valueSize)}
			}
			b.SetBytes(batch * valueSize)
			resetStats(b, s)
			c0 := serverCPU(b, s)
			p0 := cputime.Process()
			b.ResetTimer()
			for b.Loop() {
				if err := s.Commit(ctx, part, 1, from, from+batch, w); err != nil {
					b.Fatal(err)
				}
				from += batch
			}
			b.ReportMetric(float64(b.N)*batch/b.Elapsed().Seconds(), "objects/s")
			// The client's CPU (this process, all threads, the garbage
			// collector's too): on a shared machine a steadier measure
			// of the client's cost than the wall clock.
			b.ReportMetric(float64((cputime.Process()-p0).Nanoseconds())/(float64(b.N)*batch), "client-cpu-ns/object")
			if us := serverMicros(b, s); us > 0 {
				// Redis's own time per object: what bounds one Redis's
				// throughput when the client side scales out.
				b.ReportMetric(us*1000/(float64(b.N)*batch), "redis-ns/object")
				// Its CPU, parsing and replies included.
				b.ReportMetric((serverCPU(b, s)-c0)*1e9/(float64(b.N)*batch), "redis-cpu-ns/object")
			}
		})
	}
}

// BenchmarkCommit1000Parallel commits batches of 1000 objects to 8
// partitions from 8 goroutines, as the handlers of 8 partitions do, and
// reports the total objects/s.
func BenchmarkCommit1000Parallel(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			const batch, parts = 1000, 8
			w := make([]state.Write, batch)
			for i := range w {
				w[i] = state.Write{Object: objectName(i), Value: make([]byte, valueSize)}
			}
			var next atomic.Int32
			b.SetParallelism((parts + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			resetStats(b, s)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := state.Partition{Topic: "par", ID: next.Add(1)}
				from, err := s.Claim(ctx, p, 1)
				if err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					if err := s.Commit(ctx, p, 1, from, from+batch+1, w); err != nil {
						b.Error(err)
						return
					}
					from += batch + 1
				}
			})
			b.ReportMetric(float64(b.N)*batch/b.Elapsed().Seconds(), "objects/s")
			if us := serverMicros(b, s); us > 0 {
				b.ReportMetric(us*1000/(float64(b.N)*batch), "redis-ns/object")
			}
		})
	}
}

// BenchmarkGet1000 reads 1000 stored objects per call (compact: one
// MGET; buckets: one HMGET per bucket, pipelined) and reports Redis's CPU
// per object. (A read script of one HMGET per bucket instead of the
// pipeline cost Redis 3× more CPU: 1.2-1.5 µs per object against 0.4-0.5;
// MGET of per-object keys 0.2-0.26.)
func BenchmarkGet1000(b *testing.B) {
	for name, s := range benchStores(b) {
		b.Run(name, func(b *testing.B) {
			p := state.Partition{Topic: "get", ID: 0}
			next, err := s.Claim(ctx, p, 1)
			if err != nil {
				b.Fatal(err)
			}
			if next == -1 {
				fill(b, s, p, 1000, 2)
			}
			names := make([]string, 1000)
			for i := range names {
				names[i] = objectName(i)
			}
			dst := make([][]byte, 0, len(names))
			cpu0 := serverCPU(b, s)
			b.ResetTimer()
			for b.Loop() {
				if dst, err = s.Get(ctx, p, names, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "objects/s")
			if c := serverCPU(b, s) - cpu0; c > 0 {
				b.ReportMetric(c*1e9/(float64(b.N)*1000), "redis-cpu-ns/object")
			}
		})
	}
}

// BenchmarkCommitLargeKeyspace commits batches of 1000 objects drawn at
// random from 1,000,000 stored ones (180-byte values, IdleTTL set), the
// steady state of a large aggregator: Redis's time per object grows with
// the key space (cache misses), unlike BenchmarkCommit1000's 1000 keys.
// The 1M objects are written once per process; run with -benchtime=2s.
func BenchmarkCommitLargeKeyspace(b *testing.B) {
	const n, batch = 1_000_000, 1000
	for _, format := range []string{state.KeyFormatReadable, state.KeyFormatCompact} {
		b.Run(format, func(b *testing.B) {
			s := largeServer(b, format, n)
			r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyFormat: format, IdleTTL: 24 * time.Hour, ExpiryEvents: state.ExpiryEventsOff}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			from, err := r.Claim(ctx, part, 1)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			w := make([]state.Write, batch)
			val := make([]byte, valueSize)
			resetStats(b, r)
			b.ResetTimer()
			for b.Loop() {
				for i := range w {
					w[i] = state.Write{Object: objectName(rng.IntN(n)), Value: val}
				}
				if err := r.Commit(ctx, part, 1, from, from+batch, w); err != nil {
					b.Fatal(err)
				}
				from += batch
			}
			b.ReportMetric(float64(b.N)*batch/b.Elapsed().Seconds(), "objects/s")
			b.ReportMetric(serverMicros(b, r)*1000/(float64(b.N)*batch), "redis-ns/object")
		})
	}
}

var largeServers sync.Map // format → *redistest.Server, kept for the process

// largeServer returns a redis-server holding n objects of part in format,
// started and filled on first use and stopped when the process exits.
func largeServer(b *testing.B, format string, n int) *redistest.Server {
	if v, ok := largeServers.Load(format); ok {
		return v.(*redistest.Server)
	}
	s, err := redistest.Launch()
	if errors.Is(err, redistest.ErrNoRedis) && os.Getenv(redistest.RequireEnv) == "" {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	shared.extra = append(shared.extra, s)
	r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyFormat: format, IdleTTL: 24 * time.Hour, ExpiryEvents: state.ExpiryEventsOff}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Claim(ctx, part, 1); err != nil {
		b.Fatal(err)
	}
	fill(b, r, part, n, 5)
	largeServers.Store(format, s)
	return s
}
