package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// queryConfig maps the options onto query.Config (their to tags), with
// PLAN_WEIGHTS's file.
func (c *config) queryConfig() query.Config {
	lib := defaultLibraries()
	cliconfig.Apply(&c.Aggregator, lib.targets())
	qc := lib.query
	qc.Plan.Weights = c.planWeights
	return qc
}

// indexConfig maps the options onto query.IndexConfig.
func (c *config) indexConfig() query.IndexConfig {
	lib := defaultLibraries()
	cliconfig.Apply(&c.Aggregator, lib.targets())
	return lib.index
}

// headerFieldBytes is the room for header fields that the HTTP server
// allows besides the longest request target of the query API.
const headerFieldBytes = 64 << 10

// maxHeaderBytes is the HTTP server's MaxHeaderBytes: a request target of
// up to API_MAX_REQUEST_BYTES and 64 KiB of header fields, so that the
// query API reads every target it accepts, and answers a longer one with
// its JSON 414, up to this limit. Beyond it (plus net/http's 4 KiB of
// read slack), net/http answers a plain-text 431 Request Header Fields Too
// Large itself, before any handler runs (net/http.(*conn).serve).
func (c *config) maxHeaderBytes() int {
	return c.queryConfig().WithDefaults().MaxRequestBytes + headerFieldBytes
}

// validateQuery checks what the query API's options' declarations do
// not (called by validate).
func (c *config) validateQuery() []error {
	var errs []error
	if c.APIMaxRequestBytes != 0 && c.APIMaxRequestBytes < 256 {
		errs = append(errs, fmt.Errorf("%s must be at least 256 (0: the default), got %d", opt("API_MAX_REQUEST_BYTES"), c.APIMaxRequestBytes))
	}
	if c.MaxRevisit < c.MinRevisit {
		errs = append(errs, fmt.Errorf("%s (%s) must be at least %s (%s)", opt("MAX_REVISIT"), c.MaxRevisit, opt("MIN_REVISIT"), c.MinRevisit))
	}
	if err := c.validatePlan(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// queryAPI is the query API and what feeds its index.
type queryAPI struct {
	srv *query.Server
	// idx is the index, fed the processor's estimates directly
	// (aggregate.WithEstimateIndex).
	idx *query.Index
	// sink is the processor's sink: it writes to the sink newQuery was
	// given and indexes the alerts written.
	sink *query.TeeSink
	// records indexes estimate and alert records read back from the
	// output topics (rebuildIndex).
	records *query.TeeSink
}

// newQuery returns the query API over store and what feeds its index with
// what the processor writes to sink.
func newQuery(cfg *config, store state.Store, sink stream.Sink, loc query.Locator, logger *slog.Logger) (*queryAPI, error) {
	idx := query.NewIndex(cfg.indexConfig())
	srv, err := query.NewServer(cfg.queryConfig(), store, loc, cfg.processorConfig().Model, idx, logger.With("component", "query"))
	if err != nil {
		return nil, err
	}
	return &queryAPI{srv: srv, idx: idx,
		sink:    query.NewTeeSink(sink, idx, "", cfg.TopicAlerts, logger),
		records: query.NewTeeSink(sink, idx, cfg.TopicEstimates, cfg.TopicAlerts, logger)}, nil
}

// kafkaLocator finds objects' partitions as the observations' producers do.
func kafkaLocator(cfg *config, kc stream.KafkaConfig) query.Locator {
	return &query.KafkaLocator{Topic: cfg.Topics.Observations, Partitions: func(ctx context.Context) ([]int, error) {
		return stream.TopicPartitions(ctx, kc, cfg.Topics.Observations)
	}}
}

// rebuildIndex fills the query index, after a start, with what the
// aggregators published before: the compacted estimates topic (the latest
// estimate of every object) and the last API_ALERTS alerts of each alerts
// partition, oldest first. Live records that arrive meanwhile win over
// older ones (Index.AddEstimate keeps the newest as_of).
func rebuildIndex(ctx context.Context, cfg *config, kc stream.KafkaConfig, tee *query.TeeSink, logger *slog.Logger) error {
	start := time.Now()
	n := 0
	err := stream.ReadTopic(ctx, kc, cfg.TopicEstimates, 0, func(m stream.Message) error {
		if m.Value != nil { // tombstones (nil values) delete keys: nothing to index
			tee.Observe([]stream.Message{m}, nil)
			n++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("query: rebuild the index from %s: %w", cfg.TopicEstimates, err)
	}
	var alerts []stream.Message
	err = stream.ReadTopic(ctx, kc, cfg.TopicAlerts, int64(max(cfg.APIAlerts, 1)), func(m stream.Message) error {
		alerts = append(alerts, m)
		return nil
	})
	if err != nil {
		return fmt.Errorf("query: rebuild the index from %s: %w", cfg.TopicAlerts, err)
	}
	// Oldest first by event time (partitions interleave), so that the
	// index's ring serves the newest first.
	keys := make([]time.Time, len(alerts))
	for i := range alerts {
		var a struct {
			AsOf time.Time `json:"as_of"`
		}
		_ = json.Unmarshal(alerts[i].Value, &a) // undecodable alerts sort first; Observe logs them
		keys[i] = a.AsOf
	}
	idx := make([]int, len(alerts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]].Before(keys[idx[b]]) })
	sorted := make([]stream.Message, len(alerts))
	for k, i := range idx {
		sorted[k] = alerts[i]
	}
	alerts = sorted
	tee.Observe(alerts, nil)
	logger.Info("query index rebuilt from the output topics", "estimates", n, "alerts", len(alerts), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
