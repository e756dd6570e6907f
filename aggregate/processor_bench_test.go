package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// benchLog returns n JSON observations of a proxy + crawler mix over
// objects objects (Zipf-like popularity), 5 minutes of event time, in the
// form ingest writes them.
func benchLog(n, objects int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.1, 1, uint64(objects-1))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := 0; i < n; i++ {
		k := int(z.Uint64())
		t := t0.Add(time.Duration(float64(i) / float64(n) * float64(5*time.Minute)))
		o := records.Observation{Time: t, Status: 200, Offset: int64(i) * 200}
		switch k % 3 {
		case 0:
			o.Object = fmt.Sprintf("https://news%d.example.org/section/article-%07d.html", k%97, k)
			o.Kind, o.Digest, o.Format, o.Source = records.KindVisit, fmt.Sprintf("sha1:%032d", (i/50+k)%7), "heritrix", "/crawl.log@1"
		default:
			o.Object = fmt.Sprintf("http://cdn%d.example.com/static/img/%07d.jpg", k%89, k)
			o.Kind, o.Format, o.Source = records.KindAccess, "squid", "/access.log@2"
			if i%7 == 0 {
				o.Kind, o.Changed = records.KindRevalidation, records.Unchanged
			}
		}
		o.Site = Site(o.Object)
		if err := enc.Encode(o); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

type discardSink struct{}

func (discardSink) Write(context.Context, ...stream.Message) error { return nil }
func (discardSink) Close() error                                   { return nil }

// BenchmarkProcessor runs the Processor (default configuration, update
// mode) over 100,000 observations of 10,000 objects from a reader source,
// with the in-memory store and a sink that discards: the per-observation
// cost of decoding, applying, publishing due estimates and encoding states,
// without I/O. It reports ns and allocations per observation.
func BenchmarkProcessor(b *testing.B) {
	const n = 100000
	in := benchLog(n, 10000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		cfg := DefaultConfig()
		store := newMemoryB(b)
		p, err := NewProcessor(noFutureCheck(cfg), store, discardSink{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), func() time.Time { return t0 })
		if err != nil {
			b.Fatal(err)
		}
		src := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0)
		if err := src.Run(context.Background(), p.Handle); err != nil {
			b.Fatal(err)
		}
		if p.Committed() != n {
			b.Fatalf("committed %d of %d", p.Committed(), n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/obs")
}

func newMemoryB(b *testing.B) *state.Memory {
	b.Helper()
	m, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return m
}
