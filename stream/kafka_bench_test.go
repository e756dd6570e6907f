package stream_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/cputime"
	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// benchValue returns a JSON observation-like value for object i, padded to
// size bytes (at least ~220).
func benchValue(i, size int) []byte {
	v := fmt.Sprintf(`{"object":"https://www.example.org/section/%d/page-%d.html","time":"2026-11-21T12:%02d:%02d.%03dZ",`+
		`"status":200,"changed":%t,"etag":"\"%016x\"","length":%d,"source":"proxy","client":"10.1.%d.%d","pad":"`,
		i%97, i, (i/60)%60, i%60, i%1000, i%3 == 0, uint64(i)*0x9e3779b97f4a7c15, 1000+i%5000, (i/256)%256, i%256)
	return []byte(v + strings.Repeat("x", max(size-len(v)-2, 0)) + `"}`)
}

// valueSizes are the benchmarked value sizes: a lean observation and the
// ~1 KB JSON of a verbose proxy log line.
var valueSizes = []int{256, 1024}

func benchMessages(topic string, n, size int) []stream.Message {
	msgs := make([]stream.Message, n)
	for i := range msgs {
		msgs[i] = stream.Message{Topic: topic, Key: []byte(fmt.Sprintf("https://www.example.org/page-%d", i%10000)), Value: benchValue(i, size)}
	}
	return msgs
}

// BenchmarkKafkaSinkWrite measures produce throughput into kfake (acks=all)
// for Write calls of batch messages; b.N counts messages.
func BenchmarkKafkaSinkWrite(b *testing.B) {
	for _, mode := range sinkModes {
		for _, size := range valueSizes {
			for _, batch := range []int{1, 100, 1000} {
				b.Run(fmt.Sprintf("%s/value=%dB/batch=%d", mode.name, size, batch), func(b *testing.B) {
					benchSinkWrite(b, mode.linger, size, batch)
				})
			}
		}
	}
}

func benchSinkWrite(b *testing.B, linger time.Duration, size, batch int) {
	c := kafkatest.Start(b, kafkatest.Topic{Name: "bench", Partitions: 8})
	cfg := testConfig(c, "bench")
	cfg.Linger = linger
	sink := newSink(b, cfg, nil)
	pool := benchMessages("bench", 10000, size)
	ctx := context.Background()
	b.SetBytes(int64(len(pool[0].Value) + len(pool[0].Key)))
	lat := make([]time.Duration, 0, b.N/batch+1)
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		off := i % (len(pool) - batch)
		t0 := time.Now()
		if err := sink.Write(ctx, pool[off:off+n]...); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkKafkaSinkWriteParallel runs Write calls of 100 messages from
// GOMAXPROCS×4 goroutines.
func BenchmarkKafkaSinkWriteParallel(b *testing.B) {
	for _, mode := range sinkModes {
		b.Run(mode.name, func(b *testing.B) { benchSinkWriteParallel(b, mode.linger) })
	}
}

func benchSinkWriteParallel(b *testing.B, linger time.Duration) {
	c := kafkatest.Start(b, kafkatest.Topic{Name: "bench", Partitions: 8})
	cfg := testConfig(c, "bench")
	cfg.Linger = linger
	sink := newSink(b, cfg, nil)
	pool := benchMessages("bench", 10000, 1024)
	b.SetBytes(int64(len(pool[0].Value) + len(pool[0].Key)))
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		const batch = 100
		var buf []stream.Message
		for pb.Next() {
			buf = append(buf, pool[next.Add(1)%int64(len(pool))])
			if len(buf) == batch {
				if err := sink.Write(context.Background(), buf...); err != nil {
					b.Error(err)
					return
				}
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			if err := sink.Write(context.Background(), buf...); err != nil {
				b.Error(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkKafkaSourceFetch measures consumption throughput from kfake: b.N
// messages in 8 partitions are produced first (not timed), then one source
// joins the group and fetches them all with Fetch(ctx, 1000). The timed part
// includes the group join.
func BenchmarkKafkaSourceFetch(b *testing.B) {
	for _, size := range valueSizes {
		b.Run(fmt.Sprintf("value=%dB", size), func(b *testing.B) { benchSourceFetch(b, size) })
	}
}

func benchSourceFetch(b *testing.B, size int) {
	c := kafkatest.Start(b, kafkatest.Topic{Name: "bench", Partitions: 8})
	cfg := testConfig(c, "bench")
	sink := newSink(b, cfg, nil)
	pool := benchMessages("bench", 10000, size)
	ctx := context.Background()
	for i := 0; i < b.N; i += 1000 {
		n := min(1000, b.N-i)
		if err := sink.Write(ctx, pool[:n]...); err != nil {
			b.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	src := newSource(b, cfg, "bench", reg)
	var count atomic.Int64
	var batches atomic.Int64
	done := make(chan struct{})
	b.SetBytes(int64(len(pool[0].Value) + len(pool[0].Key)))
	cpu0 := cputime.Process()
	b.ResetTimer()
	stop := runSource(b, src, func(ctx context.Context, cl stream.Claim) error {
		if err := cl.SeekTo(-1); err != nil {
			return err
		}
		for {
			msgs, err := cl.Fetch(ctx, 1000)
			if err != nil {
				return err
			}
			batches.Add(1)
			if count.Add(int64(len(msgs))) == int64(b.N) {
				close(done)
			}
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("read %d of %d messages", count.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(b.N)/float64(batches.Load()), "msgs/Fetch")
	if n := metricCount(b, reg, "changerate_kafka_fetch_batch_messages"); n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "msgs/request")
	}
	_ = stop()
}

// BenchmarkKfakeFranzGoReadAll is the baseline for BenchmarkKafkaSourceFetch:
// franz-go (kgo) reading the same data from kfake without a group.
func BenchmarkKfakeFranzGoReadAll(b *testing.B) {
	c := kafkatest.Start(b, kafkatest.Topic{Name: "bench", Partitions: 8})
	sink := newSink(b, testConfig(c, "bench"), nil)
	pool := benchMessages("bench", 10000, 1024)
	for i := 0; i < b.N; i += 1000 {
		if err := sink.Write(context.Background(), pool[:min(1000, b.N-i)]...); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(pool[0].Value) + len(pool[0].Key)))
	b.ResetTimer()
	if n := len(c.ReadAll(b, "bench")); n != b.N {
		b.Fatalf("read %d of %d", n, b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// metricCount returns the sample count of a histogram in reg.
func metricCount(t testing.TB, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	return 0
}
