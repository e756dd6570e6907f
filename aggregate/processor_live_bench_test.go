package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// liveLog returns the JSON observations of a daily crawl of objects URLs,
// visits visits each (a day apart, ± 2 h), in time order: the live-crawl
// shape, where every observation publishes an estimate.
func liveLog(objects, visits int) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for v := 0; v < visits; v++ {
		for i := 0; i < objects; i++ {
			name := fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
			t := t0.Add(time.Duration(v)*24*time.Hour + time.Duration(float64(i)/float64(objects)*float64(20*time.Hour)))
			version := int(math.Floor(float64(v) * float64(i%7) / 6))
			o := records.Observation{Object: name, Site: Site(name), Time: t, Kind: records.KindVisit,
				Digest: fmt.Sprintf("sha1:%032d", version), Status: 200, Format: "heritrix", Source: "/crawl.log@1", Offset: int64(v*objects+i) * 200}
			if err := enc.Encode(o); err != nil {
				panic(err)
			}
		}
	}
	return buf.Bytes()
}

// BenchmarkProcessorLive runs the Processor (default configuration) over
// the live-crawl shape, 20,000 objects × 4 daily visits, every observation
// publishing an estimate, with the in-memory store and a discarding sink:
// the aggregator's own CPU per observation in that shape, without I/O.
func BenchmarkProcessorLive(b *testing.B) {
	const objects, visits = 20000, 4
	in := liveLog(objects, visits)
	n := int64(objects * visits)
	b.ReportAllocs()
	for b.Loop() {
		store := newMemoryB(b)
		p, err := NewProcessor(noFutureCheck(DefaultConfig()), store, discardSink{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), func() time.Time { return t0 })
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*n), "ns/obs")
}
