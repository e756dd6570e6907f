package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// queryConfig maps the flat configuration onto query.Config.
func (c *config) queryConfig() query.Config {
	return query.Config{
		Token: c.APIToken, Timeout: c.APITimeout, MaxRequestBytes: c.APIMaxRequestBytes, Profile: c.URLProfile,
		Plan: query.PlanConfig{MinRevisit: c.MinRevisit, MaxRevisit: c.MaxRevisit, Budget: c.PlanBudget, Period: c.PlanPeriod},
	}
}

// validateQuery checks the query API's options (called by validate).
func (c *config) validateQuery() error {
	switch c.OutFormat {
	case "json", "table":
	default:
		return fmt.Errorf("config: %s_OUT_FORMAT (--out-format) must be json or table, got %q", envPrefix, c.OutFormat)
	}
	if c.APIIndexObjects < 0 || c.APIAlerts < 0 {
		return fmt.Errorf("config: %s_API_INDEX_OBJECTS and %s_API_ALERTS must not be negative", envPrefix, envPrefix)
	}
	if c.MinRevisit <= 0 || c.MaxRevisit < c.MinRevisit {
		return fmt.Errorf("config: %s_MIN_REVISIT (%s) must be positive and at most %s_MAX_REVISIT (%s)", envPrefix, c.MinRevisit, envPrefix, c.MaxRevisit)
	}
	if c.PlanBudget < 1 || c.PlanPeriod < time.Minute {
		return fmt.Errorf("config: %s_PLAN_BUDGET must be at least 1 and %s_PLAN_PERIOD at least 1m", envPrefix, envPrefix)
	}
	if err := c.queryConfig().Validate(); err != nil {
		return fmt.Errorf("config: %s_API_*: %w", envPrefix, err)
	}
	return nil
}

// newQuery returns the query API over store and the sink that feeds its
// index with what the processor writes to sink.
func newQuery(cfg *config, store state.Store, sink stream.Sink, loc query.Locator, logger *slog.Logger) (*query.Server, stream.Sink, error) {
	idx := query.NewIndex(query.IndexConfig{MaxObjects: cfg.APIIndexObjects, MaxAlerts: cfg.APIAlerts})
	srv, err := query.NewServer(cfg.queryConfig(), store, loc, cfg.processorConfig().Model, idx, logger.With("component", "query"))
	if err != nil {
		return nil, nil, err
	}
	return srv, query.NewTeeSink(sink, idx, cfg.TopicEstimates, cfg.TopicAlerts, logger), nil
}

// kafkaLocator finds objects' partitions as the observations' producers do.
func kafkaLocator(cfg *config, kc stream.KafkaConfig) query.Locator {
	return &query.KafkaLocator{Topic: cfg.TopicObservations, Partitions: func(ctx context.Context) ([]int, error) {
		return stream.TopicPartitions(ctx, kc, cfg.TopicObservations)
	}}
}
