package query_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
)

// filterRun runs log (observations as JSON lines) through a Processor
// with cfg over a fresh memory store, as `aggregator --in=- --store=memory`
// does, and serves that store: the API's server, its validated env and the
// records the Processor published.
func filterRun(t *testing.T, cfg aggregate.Config, log []byte) (*query.Server, *env, *stream.MemorySink) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := newMemoryStore(t)
	mem := stream.NewMemorySink()
	proc, err := aggregate.NewProcessor(cfg, store, mem, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(log), 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, cfg.Model,
		query.NewIndex(query.IndexConfig{}), logger)
	if err != nil {
		t.Fatal(err)
	}
	return qs, serve(t, qs), mem
}
