package query_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
)

// BenchmarkTeeSinkObserve is the cost the query index adds to every
// published estimate (TeeSink decodes what it indexes).
func BenchmarkTeeSinkObserve(b *testing.B) {
	const rec = `{"object":"https://golden.example.org/crawl/0","site":"golden.example.org","kind":"change","as_of":"2026-10-01T10:44:57.453Z","rate_per_s":0.000045291536108716845,"estimator":"bayes_beta","ci95":[0.000007095451436932297,0.00018039389894152925],"estimates":{"bayes_beta":0.000045291536108716845,"cgm_improved":0.000045291536108716845,"intuitive":0.00004122613280015188,"naive":0.000041226132800339906},"intervals":{"bayes_beta":[0.000007095451436932297,0.00018039389894152925],"naive":[0.0000010437553141738412,0.00022969731035098315]},"observations":2,"changes":1,"window":{"state":"forming","start":"2026-10-01T04:00:40.994Z","points":1,"rate_per_s":0.00004122613280015188,"model":"intuitive","next_update":"2026-10-01T17:29:13.912Z"},"next_visit":"2026-10-01T16:52:56.633481Z","ttl_s":3600}`
	tee := query.NewTeeSink(stream.NewMemorySink(), query.NewIndex(query.IndexConfig{}), "estimates", "alerts", slog.New(slog.DiscardHandler))
	msgs := []stream.Message{{Topic: "estimates", Key: []byte("https://golden.example.org/crawl/0"), Value: []byte(rec)}}
	b.ReportAllocs()
	for b.Loop() {
		tee.Observe(msgs, nil)
	}
}

// BenchmarkIndexEstimates is the cost of indexing one published estimate
// handed over by the processor (Index.IndexEstimates) in the live shape:
// 100,000 objects on 1,000 sites, each updated in turn with a new
// interval.
func BenchmarkIndexEstimates(b *testing.B) {
	const objects, batch = 100_000, 1000
	names := make([]string, objects)
	for i := range names {
		names[i] = fmt.Sprintf("https://site%d.example.org/crawl/page-%d.html", i%1000, i)
	}
	idx := query.NewIndex(query.IndexConfig{})
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ests := make([]aggregate.PublishedEstimate, batch)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for k := range ests {
			rate := r.ExpFloat64() * 1e-5
			ests[k] = aggregate.PublishedEstimate{Object: names[n%objects], Kind: "change", AsOf: at.Add(time.Duration(n) * time.Millisecond),
				Rate: rate, HasRate: true, CI95: [2]float64{rate * r.Float64(), rate * (1 + r.Float64())}, HasCI: true}
			n++
		}
		idx.IndexEstimates(ests)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/estimate")
}
