package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// queryConfig maps the flat configuration onto query.Config.
func (c *config) queryConfig() query.Config {
	return query.Config{
		Token: c.APIToken, Timeout: c.APITimeout, MaxRequestBytes: int(c.APIMaxRequestBytes), Profile: c.URLProfile,
		Plan: query.PlanConfig{MinRevisit: c.MinRevisit, MaxRevisit: c.MaxRevisit, Budget: c.PlanBudget, Period: c.PlanPeriod,
			HostCap: c.PlanHostCap, Weights: c.planWeights},
	}
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

// validateQuery checks the query API's options (called by validate).
func (c *config) validateQuery() error {
	switch c.OutFormat {
	case "json", "table":
	default:
		return fmt.Errorf("config: %s_OUT_FORMAT (--out-format) must be json or table, got %q", envPrefix, c.OutFormat)
	}
	if c.APIIndexObjects < 0 {
		return fmt.Errorf("config: %s must not be negative, got %d", opt("API_INDEX_OBJECTS"), c.APIIndexObjects)
	}
	if c.APIAlerts < 0 {
		return fmt.Errorf("config: %s must not be negative, got %d", opt("API_ALERTS"), c.APIAlerts)
	}
	if c.APITimeout < 0 {
		return fmt.Errorf("config: %s must be a positive duration (0: the default), got %s", opt("API_TIMEOUT"), c.APITimeout)
	}
	if c.APIMaxRequestBytes != 0 && c.APIMaxRequestBytes < 256 {
		return fmt.Errorf("config: %s must be at least 256 (0: the default), got %d", opt("API_MAX_REQUEST_BYTES"), c.APIMaxRequestBytes)
	}
	switch c.URLProfile {
	case "", parse.ProfileChangerate, parse.ProfileWHATWG, parse.ProfileSemantic:
	default:
		return fmt.Errorf("config: %s must be changerate, whatwg or semantic (as ingest's --profile), got %q", opt("URL_PROFILE"), c.URLProfile)
	}
	if c.MinRevisit <= 0 {
		return fmt.Errorf("config: %s must be a positive duration, got %s", opt("MIN_REVISIT"), c.MinRevisit)
	}
	if c.MaxRevisit < c.MinRevisit {
		return fmt.Errorf("config: %s (%s) must be at least %s (%s)", opt("MAX_REVISIT"), c.MaxRevisit, opt("MIN_REVISIT"), c.MinRevisit)
	}
	if c.PlanBudget < 1 {
		return fmt.Errorf("config: %s must be at least 1, got %d", opt("PLAN_BUDGET"), c.PlanBudget)
	}
	if c.PlanPeriod < time.Minute {
		return fmt.Errorf("config: %s must be at least 1m, got %s", opt("PLAN_PERIOD"), c.PlanPeriod)
	}
	if err := c.validatePlan(); err != nil {
		return err
	}
	if err := c.queryConfig().Validate(); err != nil {
		return fmt.Errorf("config: %s_API_*: %w", envPrefix, err)
	}
	return nil
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
	idx := query.NewIndex(query.IndexConfig{MaxObjects: cfg.APIIndexObjects, MaxAlerts: cfg.APIAlerts})
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
