package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestAPIGone: an object whose visits answered 404 is served by
// /v1/objects as the aggregator published it, gone and without a rate,
// and the response conforms to api/openapi.yaml.
func TestAPIGone(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	cfg := aggregate.DefaultConfig()
	cfg.Model.EmitInterval = 0
	cfg.MaxFuture = 0
	store := newMemoryStore(t)
	idx := query.NewIndex(query.IndexConfig{})
	mem := stream.NewMemorySink()
	tee := query.NewTeeSink(mem, idx, cfg.EstimatesTopic, cfg.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(cfg, store, tee, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	const name = "http://gone.example/deleted"
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, st := range []int{200, 200, 404, 404} {
		obs := records.Observation{Object: name, Site: "gone.example", Time: t0.Add(time.Duration(i) * 24 * time.Hour),
			Kind: records.KindVisit, Status: st, Digest: "sha1:" + string(rune('A'+i)), Format: "jsonl"}
		if err := enc.Encode(obs); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.NewReaderSource(stream.TopicObservations, &in, 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, cfg.Model, idx, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, qs)
	body := bytes.TrimSpace(e.get(t, "/v1/objects?url="+q(name), 200))
	if want := mem.Latest(stream.TopicEstimates)[name]; !bytes.Equal(body, want) {
		t.Fatalf("/v1/objects:\n got %s\nwant %s", body, want)
	}
	var rec records.Estimate
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Gone || rec.RatePerS != nil || rec.TTLS != nil || rec.Observations != 2 {
		t.Fatalf("record %s", body)
	}
}
