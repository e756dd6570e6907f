package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// openStore opens the configured state store.
func openStore(ctx context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	if cfg.Store == "redis" {
		return openRedis(ctx, cfg, logger, reg)
	}
	return state.NewMemory(state.MemoryConfig{IdleTTL: cfg.IdleTTL, Now: time.Now}, reg)
}

// runService is the production mode: Kafka in, Kafka out, Redis state.
func runService(ctx context.Context, cfg *config, logger *slog.Logger, reg *prometheus.Registry) error {
	setMemoryLimit(logger)
	setGCPercent(logger)
	kc := cfg.kafkaConfig()
	if err := kc.Validate(); err != nil {
		return usageError{fmt.Errorf("config: %s", options.KafkaError(err))}
	}
	if cfg.Store == "redis" {
		// Before any connection: a bad Redis option is a configuration
		// error, whatever state Kafka is in.
		if err := cfg.redisConfig().Validate(); err != nil {
			return usageError{fmt.Errorf("config: %s", options.RedisError(err, "IDLE_TTL"))}
		}
	}
	// The store is opened and checked (durability) before anything is
	// changed on the brokers: a refused Redis leaves no topics behind.
	store, err := openStore(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	defer store.Close()
	if cfg.CreateTopics {
		created, err := stream.EnsureTopics(ctx, kc, topicSpecs(cfg))
		if err != nil {
			// kafka-go names its method ("kafka.(*Client).Metadata: dial
			// tcp ...: connection refused"); the user needs the option.
			msg := strings.ReplaceAll(err.Error(), "kafka.(*Client).Metadata: ", "")
			return fmt.Errorf("cannot create the topics on the Kafka brokers %s (%s): %s", strings.Join(cfg.Kafka.Brokers, ","), opt("KAFKA_BROKERS"), msg)
		}
		if len(created) > 0 {
			logger.Info("created topics", "topics", created)
		}
	}
	kp, err := newKafkaPipeline(cfg, kc, store, logger, reg)
	if err != nil {
		return err
	}
	defer kp.close()
	rebuild := func(ctx context.Context, _ *httpServer, _ context.CancelFunc) error {
		if cfg.HTTP.Addr == "" {
			return nil
		}
		if err := rebuildIndex(ctx, cfg, kc, kp.tee, logger); err != nil && ctx.Err() == nil {
			// Not fatal: the index fills with the estimates published from now on.
			logger.Warn("query index not rebuilt; /v1/top, /v1/plan and /v1/alerts show only estimates published from now on", "err", err)
		}
		return nil
	}
	return serve(ctx, cfg, kp, logger, reg, rebuild)
}

// kafkaPipeline is the service's wiring: a consumer-group source and a
// Kafka sink around a Processor.
type kafkaPipeline struct {
	sink  *stream.KafkaSink
	src   *stream.KafkaSource
	proc  *aggregate.Processor
	store state.Store
	api   *query.Server
	tee   *query.TeeSink // indexes the records read back from the output topics (rebuildIndex)
}

func newKafkaPipeline(cfg *config, kc stream.KafkaConfig, store state.Store, logger *slog.Logger, reg prometheus.Registerer) (*kafkaPipeline, error) {
	sink, err := stream.NewKafkaSink(kc, logger, reg)
	if err != nil {
		return nil, err
	}
	sink.DeclareTopics(cfg.TopicEstimates, cfg.TopicAccessReports, cfg.TopicAlerts, cfg.Topics.DeadLetter, cfg.TopicLate)
	src, err := stream.NewKafkaSource(kc, []string{cfg.Topics.Observations}, logger, reg)
	if err != nil {
		sink.Close()
		return nil, err
	}
	q, err := newQuery(cfg, store, sink, kafkaLocator(cfg, kc), logger)
	if err != nil {
		src.Close()
		sink.Close()
		return nil, err
	}
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, q.sink, logger, reg, time.Now, aggregate.WithEstimateIndex(q.idx))
	if err != nil {
		src.Close()
		sink.Close()
		return nil, err
	}
	return &kafkaPipeline{sink: sink, src: src, proc: proc, store: store, api: q.srv, tee: q.records}, nil
}

func (k *kafkaPipeline) close() {
	k.src.Close()
	k.sink.Close()
}

// serve runs the source, the HTTP server and, when given, one more task
// under one errgroup until ctx ends (SIGTERM) or one of them fails;
// in-flight batches drain first. The task may call stop to end everything
// without an error.
func serve(ctx context.Context, cfg *config, kp *kafkaPipeline, logger *slog.Logger, reg *prometheus.Registry,
	task func(ctx context.Context, srv *httpServer, stop context.CancelFunc) error) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(runCtx)
	var srv *httpServer
	if cfg.HTTP.Addr != "" {
		routes := []func(*http.ServeMux){kp.api.Register}
		if cfg.Pprof {
			routes = append(routes, pprofRoutes)
		}
		srv = newHTTPServer(cfg.HTTP.Addr, cfg.maxHeaderBytes(), reg, kp.proc, logger, routes...)
		srv.source = kp.src.Status
		if p, ok := kp.store.(pinger); ok {
			srv.store = newStoreProbe(p.Ping, storeProbeInterval, time.Now)
		}
		if err := srv.listen(); err != nil {
			return err
		}
		g.Go(func() error { return srv.run(gctx) })
	}
	g.Go(func() error {
		if srv != nil {
			srv.setReady(true)
			defer srv.setReady(false)
		}
		err := kp.src.Run(gctx, kp.proc.Handle)
		if errors.Is(err, context.Canceled) || errors.Is(err, stream.ErrClosed) {
			return nil
		}
		return err
	})
	if task != nil {
		g.Go(func() error { return task(gctx, srv, stop) })
	}
	err := g.Wait()
	logger.Info("aggregator stopped", "committed", kp.proc.Committed(), "err", err)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func topicSpecs(cfg *config) []stream.TopicSpec {
	rf := cfg.ReplicationFactor
	return []stream.TopicSpec{
		{Name: cfg.Topics.Observations, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.TopicEstimates, Partitions: cfg.Partitions, ReplicationFactor: rf, Compacted: true},
		{Name: cfg.TopicAccessReports, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.TopicAlerts, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.Topics.DeadLetter, Partitions: 1, ReplicationFactor: rf},
		{Name: cfg.TopicLate, Partitions: 1, ReplicationFactor: rf},
	}
}
