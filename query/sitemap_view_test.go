package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestViewSiteSitemap: the object view shows its site's sitemap trust. A
// page that changes at every daily visit (06:00), in a sitemap (fetched at
// 12:00) whose lastmod never moves. The checks start with the first
// sitemap: day 0's visit precedes it, day 1's is the first the checks
// see, and from day 2 on each fetch follows a visit that saw a change the
// lastmod does not date ("a digest change without a lastmod move"): 8 days
// give 6 disagreements, trust 1/8 and an untrusted site.
func TestViewSiteSitemap(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	cfg := aggregate.DefaultConfig()
	cfg.MaxFuture = 0
	store := newMemoryStore(t)
	idx := query.NewIndex(query.IndexConfig{})
	tee := query.NewTeeSink(stream.NewMemorySink(), idx, cfg.EstimatesTopic, cfg.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(cfg, store, tee, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	const page = "https://stale.example/page"
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var log bytes.Buffer
	for d := 0; d < 8; d++ {
		day := start.Add(time.Duration(d) * 24 * time.Hour)
		for _, o := range []records.Observation{
			{Object: page, Site: "stale.example", Time: day.Add(6 * time.Hour), Kind: records.KindVisit, Digest: fmt.Sprintf("sha1:V%d", d), Status: 200, Format: "cdx"},
			{Object: page, Site: "stale.example", Time: day.Add(12 * time.Hour), Kind: records.KindVisit, Format: "sitemap",
				LastModified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), ChangeFreq: "daily"},
		} {
			b, _ := json.Marshal(o)
			log.Write(append(b, '\n'))
		}
	}
	if err := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(log.Bytes()), 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, cfg.Model, idx, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, qs)
	var v query.ObjectView
	if err := json.Unmarshal(e.get(t, "/v1/objects/view?url="+q(page), 200), &v); err != nil {
		t.Fatal(err)
	}
	want := query.SiteSitemap{Agree: 0, Disagree: 6, Trust: 1.0 / 8, Trusted: false}
	if v.SiteSitemap == nil || *v.SiteSitemap != want {
		t.Fatalf("site_sitemap %+v, want %+v", v.SiteSitemap, want)
	}
}
