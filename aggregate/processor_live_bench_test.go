package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/cputime"
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
	benchmarkLive(b, liveLog(objects, visits), objects*visits)
}

// benchmarkLive runs the Processor (default configuration, in-memory
// store, discarding sink) over the n observations of in per iteration and
// reports ns/obs, and cpu-ns/obs: the process's CPU time (all threads, the
// garbage collector's too) per observation, which depends much less than
// the wall clock on what else the machine runs.
func benchmarkLive(b *testing.B, in []byte, n int) {
	b.ReportAllocs()
	c0 := cputime.Process()
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
		if p.Committed() != int64(n) {
			b.Fatalf("committed %d of %d", p.Committed(), n)
		}
	}
	b.ReportMetric(float64((cputime.Process()-c0).Nanoseconds())/float64(b.N*n), "cpu-ns/obs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/obs")
}

// poissonLiveLog is liveLog with the content of benchreport's live shape
// (research/cmd/benchreport, liveWorkload): each object's digest changes
// as a Poisson process with a mean interval uniform in 6 h – 30 days, the
// visits a day apart at the object's time of day ± 2 h, 97 sites. Most
// objects are seen to change 0–4 times, so most publish the pooled
// estimate of their site's prior (siteprior.go). Seeded.
func poissonLiveLog(objects, visits int) []byte {
	r := rand.New(rand.NewPCG(13, 13))
	type obj struct {
		name       string
		mean, next float64
		version    int
		offset     float64
	}
	objs := make([]obj, objects)
	for i := range objs {
		o := &objs[i]
		o.name = fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
		o.mean = 6 * 3600 * (1 + r.Float64()*119)
		o.next = r.ExpFloat64() * o.mean
		o.offset = r.Float64() * 86400
	}
	type ev struct {
		t float64
		i int
	}
	day := make([]ev, objects)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for v := 0; v < visits; v++ {
		for i := range objs {
			day[i] = ev{float64(v)*86400 + objs[i].offset + (r.Float64()-0.5)*4*3600, i}
		}
		sort.Slice(day, func(a, b int) bool { return day[a].t < day[b].t })
		for k, d := range day {
			o := &objs[d.i]
			for o.next <= d.t {
				o.version++
				o.next += r.ExpFloat64() * o.mean
			}
			obs := records.Observation{Object: o.name, Site: Site(o.name), Time: t0.Add(time.Duration(d.t * 1e9)), Kind: records.KindVisit,
				Digest: fmt.Sprintf("sha1:%032d", o.version), Status: 200, Format: "heritrix", Source: "/crawl.log@1", Offset: int64(v*objects+k) * 200}
			if err := enc.Encode(obs); err != nil {
				panic(err)
			}
		}
	}
	return buf.Bytes()
}

// BenchmarkProcessorLivePoisson is BenchmarkProcessorLive on
// poissonLiveLog, benchreport's live shape (20,000 objects × 4 visits):
// the site prior's pooled estimate is published for most observations.
func BenchmarkProcessorLivePoisson(b *testing.B) {
	const objects, visits = 20000, 4
	benchmarkLive(b, poissonLiveLog(objects, visits), objects*visits)
}
