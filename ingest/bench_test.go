package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/cputime"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

type discardSink struct{ n int }

func (s *discardSink) Write(_ context.Context, msgs ...stream.Message) error {
	s.n += len(msgs)
	return nil
}
func (s *discardSink) Close() error { return nil }

// benchFile writes n Squid native lines over k URLs.
func benchFile(b *testing.B, n, k int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "access.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(f, "%d.%03d   %4d 10.105.21.%d TCP_MISS/200 10182 GET http://www.site%d.com/path/to/page%d.html badeyek DIRECT/175.16.199.61 text/html\n",
			1157689320+i/1000, i%1000, i%5000, i%250, (i%k)%50, i%k)
	}
	f.Close()
	return p
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func benchRun(b *testing.B, sink stream.Sink, batch int) {
	const lines = 200000
	p := benchFile(b, lines, 20000)
	cfg := Config{Format: "squid", Paths: []string{p}, BatchSize: batch, ProgressInterval: -1}
	b.ReportAllocs()
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sum, err := Run(context.Background(), cfg, sink, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Inputs[0].Observations != lines {
			b.Fatalf("%d observations", sum.Inputs[0].Observations)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(b.N*lines)/(cputime.Process()-cpu0).Seconds(), "lines/cpu-s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRunSquidDiscard: file → parse → JSON → batch, into a sink that
// drops the messages (the pipeline's own cost).
func BenchmarkRunSquidDiscard(b *testing.B) { benchRun(b, &discardSink{}, 1000) }

// BenchmarkRunSquidKafka: the same into an in-process Kafka-protocol broker
// (kfake, 8 partitions of "observations", acks=all), through the project's
// KafkaSink. The broker runs in this process and shares its CPUs.
func BenchmarkRunSquidKafka(b *testing.B) {
	for _, batch := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			c := kafkatest.Start(b, kafkatest.Topic{Name: stream.TopicObservations, Partitions: 8}, kafkatest.Topic{Name: stream.TopicDeadLetter, Partitions: 1})
			sink, err := stream.NewKafkaSink(stream.KafkaConfig{Brokers: c.Addrs(), Linger: time.Millisecond, BatchSize: batch}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			benchRun(b, sink, batch)
		})
	}
}

// BenchmarkRunSquidCheckpoint: as BenchmarkRunSquidDiscard, with the
// checkpoint rewritten after every acknowledged batch of 1000 lines.
func BenchmarkRunSquidCheckpoint(b *testing.B) {
	const lines = 200000
	p := benchFile(b, lines, 20000)
	cp := filepath.Join(b.TempDir(), "cp.json")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.Remove(cp)
		if _, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, CheckpointPath: cp, ProgressInterval: -1}, &discardSink{}, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(0, "ns/op")
}
