// Command aggregator turns observations into change-rate and access-rate
// estimates. It runs in one of three modes:
//
//   - service: with KAFKA_BROKERS set, it consumes the observations topic in a
//     consumer group, keeps per-object state in Redis (or memory) and publishes
//     estimates, access reports, alerts and dead letters to Kafka, serving
//     /metrics, /healthz and /readyz over HTTP;
//   - filter: with --in (a file or - for stdin) it reads observations as JSON
//     lines and writes estimates as JSON lines to --out, with no Kafka:
//     `aggregator --in=- --store=memory --out=- --emit=final`;
//   - embedded demo: with neither, it starts an in-process Kafka-protocol
//     broker and the in-memory store, feeds generated sample logs with known
//     change rates through the real ingest → Kafka → aggregator path, prints
//     the estimates and keeps serving HTTP until interrupted.
//
// Every option is an environment variable (prefix CHANGERATE_) and a flag;
// flags win. `aggregator -h` lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// envPrefix prefixes every environment variable of the aggregator.
const envPrefix = "CHANGERATE"

// config is the aggregator's whole configuration; README's reference table
// is generated from these tags (go run ./cmd/aggregator -config-reference).
type config struct {
	In   string `envconfig:"IN" desc:"filter mode: read observations (JSON lines) from this file, or - for stdin, instead of Kafka"`
	Out  string `envconfig:"OUT" desc:"write estimates (JSON lines) to this file, or - for stdout, instead of the estimates topic"`
	Emit string `envconfig:"EMIT" default:"update" desc:"when estimates are published: update (after every batch, for the objects it changed) or final (once, when the input ends; filter mode)"`
	Demo bool   `envconfig:"DEMO" desc:"run the embedded demo (the default when neither KAFKA_BROKERS nor IN is set)"`

	Store    string        `envconfig:"STORE" desc:"state store: memory or redis (default: redis when REDIS_ADDRS is set, else memory)"`
	IdleTTL  time.Duration `envconfig:"IDLE_TTL" default:"720h" desc:"an object's state expires after this long without observations (0: never)"`
	HTTPAddr string        `envconfig:"HTTP_ADDR" default:":8080" desc:"address of the HTTP server (/metrics, /healthz, /readyz); empty disables it; not started in filter mode unless set explicitly"`

	KafkaBrokers        []string      `envconfig:"KAFKA_BROKERS" desc:"comma-separated Kafka bootstrap brokers (host:port); enables service mode"`
	KafkaGroup          string        `envconfig:"KAFKA_GROUP" default:"changerate-aggregator" desc:"consumer group of the aggregators"`
	KafkaClientID       string        `envconfig:"KAFKA_CLIENT_ID" default:"changerate-aggregator" desc:"Kafka client id"`
	KafkaTLS            bool          `envconfig:"KAFKA_TLS" desc:"connect to Kafka over TLS"`
	KafkaTLSCA          string        `envconfig:"KAFKA_TLS_CA" desc:"PEM CA bundle verifying the brokers (default: system roots)"`
	KafkaTLSCert        string        `envconfig:"KAFKA_TLS_CERT" desc:"PEM client certificate for mutual TLS"`
	KafkaTLSKey         string        `envconfig:"KAFKA_TLS_KEY" desc:"PEM key of KAFKA_TLS_CERT"`
	KafkaTLSServerName  string        `envconfig:"KAFKA_TLS_SERVER_NAME" desc:"server name verified in broker certificates (default: the broker host)"`
	KafkaTLSInsecure    bool          `envconfig:"KAFKA_TLS_INSECURE" desc:"skip broker certificate verification (testing only)"`
	KafkaSASLMechanism  string        `envconfig:"KAFKA_SASL_MECHANISM" desc:"SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: none)"`
	KafkaSASLUser       string        `envconfig:"KAFKA_SASL_USERNAME" desc:"SASL user name"`
	KafkaSASLPassword   string        `envconfig:"KAFKA_SASL_PASSWORD" desc:"SASL password"`
	KafkaSessionTimeout time.Duration `envconfig:"KAFKA_SESSION_TIMEOUT" default:"30s" desc:"consumer-group session timeout: how long a silent member keeps its partitions"`
	KafkaHeartbeat      time.Duration `envconfig:"KAFKA_HEARTBEAT" default:"3s" desc:"consumer-group heartbeat interval"`
	CreateTopics        bool          `envconfig:"CREATE_TOPICS" default:"true" desc:"create missing topics at start (estimates compacted)"`
	Partitions          int           `envconfig:"PARTITIONS" default:"12" desc:"partitions of topics created at start"`
	ReplicationFactor   int           `envconfig:"REPLICATION_FACTOR" default:"1" desc:"replication factor of topics created at start"`

	TopicObservations  string `envconfig:"OBSERVATIONS_TOPIC" default:"observations" desc:"input topic"`
	TopicEstimates     string `envconfig:"ESTIMATES_TOPIC" default:"estimates" desc:"compacted output topic of estimates (key = object; object#access for access estimates)"`
	TopicAccessReports string `envconfig:"ACCESS_REPORTS_TOPIC" default:"access-reports" desc:"output topic of per-period access reports"`
	TopicAlerts        string `envconfig:"ALERTS_TOPIC" default:"alerts" desc:"output topic of rate-shift alerts"`
	TopicDeadLetter    string `envconfig:"DEAD_LETTER_TOPIC" default:"dead-letter" desc:"output topic of undecodable inputs with the reason"`

	RedisAddrs    []string `envconfig:"REDIS_ADDRS" desc:"comma-separated Redis addresses (host:port); several with REDIS_CLUSTER for a cluster"`
	RedisCluster  bool     `envconfig:"REDIS_CLUSTER" desc:"use Redis Cluster"`
	RedisUsername string   `envconfig:"REDIS_USERNAME" desc:"Redis ACL user"`
	RedisPassword string   `envconfig:"REDIS_PASSWORD" desc:"Redis password (AUTH)"`
	RedisDB       int      `envconfig:"REDIS_DB" default:"0" desc:"Redis database (standalone only)"`
	RedisTLS      bool     `envconfig:"REDIS_TLS" desc:"connect to Redis over TLS"`
	RedisTLSCA    string   `envconfig:"REDIS_TLS_CA" desc:"PEM CA bundle verifying Redis (default: system roots)"`
	RedisTLSCert  string   `envconfig:"REDIS_TLS_CERT" desc:"PEM client certificate for Redis"`
	RedisTLSKey   string   `envconfig:"REDIS_TLS_KEY" desc:"PEM key of REDIS_TLS_CERT"`
	RedisPrefix   string   `envconfig:"REDIS_KEY_PREFIX" default:"cr:" desc:"prefix of every Redis key"`
	RedisKeyFmt   string   `envconfig:"REDIS_KEY_FORMAT" default:"compact" desc:"object key layout: compact (14-byte hashed keys, keeps an object within 256 bytes of Redis memory) or readable ({prefix topic:partition}:o:<object>, for debugging)"`

	BatchSize     int           `envconfig:"BATCH_SIZE" default:"5000" desc:"most observations per partition batch (one atomic state commit)"`
	CacheObjects  int           `envconfig:"CACHE_OBJECTS" default:"200000" desc:"objects kept in memory per partition between batches (0: unbounded; forced to 0 with EMIT=final)"`
	CacheBytes    byteSize      `envconfig:"CACHE_BYTES" default:"256MiB" desc:"memory of the cached object states of all partitions together, e.g. 512MiB (about 300 bytes per object; 0: unbounded; forced to 0 with EMIT=final); keep it under half the container's memory limit"`
	LateTolerance time.Duration `envconfig:"LATE_TOLERANCE" default:"1h" desc:"observations this much older than an object's latest are applied at its latest time; older ones are dropped as late"`
	ReportPeriod  time.Duration `envconfig:"REPORT_PERIOD" default:"1h" desc:"length of an access reporting period"`
	EmitInterval  time.Duration `envconfig:"EMIT_INTERVAL" default:"10m" desc:"least event time between two publications of an object's estimate (update mode); 0 publishes after every batch"`
	PStale        float64       `envconfig:"P_STALE" default:"0.1" desc:"target probability that a cached copy within its TTL is stale (sets ttl_s)"`
	IdleCheck     time.Duration `envconfig:"IDLE_CHECK" default:"5s" desc:"a partition idle this long checks that Redis still holds its last commit (and reloads if Redis lost writes); 0 disables"`
	TakeoverDelay time.Duration `envconfig:"TAKEOVER_DELAY" default:"10s" desc:"when a partition's stored epoch is above this member's generation (a consumer group deleted and created again), wait this long, then take it over unless the generation ended; must exceed KAFKA_HEARTBEAT"`
	DrainTimeout  time.Duration `envconfig:"DRAIN_TIMEOUT" default:"10s" desc:"on SIGTERM, time allowed to finish and commit in-flight batches"`

	AlertsOut        string `envconfig:"ALERTS_OUT" desc:"filter mode: write alerts to this file (- for stdout); default: not written"`
	AccessReportsOut string `envconfig:"ACCESS_REPORTS_OUT" desc:"filter mode: write access reports to this file (- for stdout); default: not written"`
	DeadLetterOut    string `envconfig:"DEAD_LETTER_OUT" default:"-" desc:"filter mode: write dead letters to this file; - means stderr"`

	LogLevel  string `envconfig:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
	LogFormat string `envconfig:"LOG_FORMAT" default:"text" desc:"text or json"`

	DemoPages int  `envconfig:"DEMO_PAGES" default:"5" desc:"demo: generated pages per change class (crawled and proxied each)"`
	DemoDays  int  `envconfig:"DEMO_DAYS" default:"30" desc:"demo: days of generated traffic"`
	DemoExit  bool `envconfig:"DEMO_EXIT" desc:"demo: exit after printing the estimates instead of serving HTTP until interrupted"`
}

func (c *config) validate() error {
	if c.In != "" && len(c.KafkaBrokers) > 0 {
		return fmt.Errorf("config: %s_IN (--in) and %s_KAFKA_BROKERS are exclusive: filter mode reads no Kafka", envPrefix, envPrefix)
	}
	switch c.Store {
	case "":
		c.Store = "memory"
		if len(c.RedisAddrs) > 0 {
			c.Store = "redis"
		}
	case "memory":
	case "redis":
		if len(c.RedisAddrs) == 0 {
			return fmt.Errorf("config: %s_STORE=redis needs %s_REDIS_ADDRS", envPrefix, envPrefix)
		}
	default:
		return fmt.Errorf("config: %s_STORE (--store) must be memory or redis, got %q", envPrefix, c.Store)
	}
	if c.Emit == aggregate.EmitFinal && c.In == "" {
		return fmt.Errorf("config: %s_EMIT=final needs a finite input: set %s_IN (--in)", envPrefix, envPrefix)
	}
	if c.DemoPages < 1 || c.DemoDays < 1 {
		return fmt.Errorf("config: %s_DEMO_PAGES and %s_DEMO_DAYS must be at least 1", envPrefix, envPrefix)
	}
	if c.TakeoverDelay <= c.KafkaHeartbeat && len(c.KafkaBrokers) > 0 {
		return fmt.Errorf("config: %s_TAKEOVER_DELAY (%s) must exceed %s_KAFKA_HEARTBEAT (%s)", envPrefix, c.TakeoverDelay, envPrefix, c.KafkaHeartbeat)
	}
	if c.Partitions < 1 {
		return fmt.Errorf("config: %s_PARTITIONS must be at least 1, got %d", envPrefix, c.Partitions)
	}
	if c.ReplicationFactor < 1 {
		return fmt.Errorf("config: %s_REPLICATION_FACTOR must be at least 1, got %d", envPrefix, c.ReplicationFactor)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("config: %s_LOG_FORMAT must be text or json, got %q", envPrefix, c.LogFormat)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("config: %s_LOG_LEVEL must be debug, info, warn or error, got %q", envPrefix, s)
	}
	return l, nil
}

// processorConfig maps the flat configuration onto aggregate.Config.
func (c *config) processorConfig() aggregate.Config {
	pc := aggregate.DefaultConfig()
	pc.BatchSize = c.BatchSize
	pc.Emit = c.Emit
	pc.CacheObjects = c.CacheObjects
	pc.CacheBytes = int64(c.CacheBytes)
	if c.Emit == aggregate.EmitFinal {
		pc.CacheObjects, pc.CacheBytes = 0, 0
	}
	pc.Model.LateTolerance = c.LateTolerance
	pc.Model.ReportPeriod = c.ReportPeriod
	pc.Model.PStale = c.PStale
	pc.Model.EmitInterval = c.EmitInterval
	pc.EstimatesTopic, pc.AccessReportsTopic = c.TopicEstimates, c.TopicAccessReports
	pc.AlertsTopic, pc.DeadLetterTopic = c.TopicAlerts, c.TopicDeadLetter
	pc.DrainTimeout = c.DrainTimeout
	pc.TakeoverDelay = c.TakeoverDelay
	pc.IdleCheck = c.IdleCheck
	return pc
}

// kafkaConfig maps the flat configuration onto stream.KafkaConfig.
func (c *config) kafkaConfig() stream.KafkaConfig {
	return stream.KafkaConfig{
		Brokers: c.KafkaBrokers, ClientID: c.KafkaClientID, GroupID: c.KafkaGroup,
		TLS: stream.KafkaTLSConfig{Enable: c.KafkaTLS, CAFile: c.KafkaTLSCA, CertFile: c.KafkaTLSCert, KeyFile: c.KafkaTLSKey,
			ServerName: c.KafkaTLSServerName, InsecureSkipVerify: c.KafkaTLSInsecure},
		SASL:              stream.KafkaSASLConfig{Mechanism: c.KafkaSASLMechanism, Username: c.KafkaSASLUser, Password: c.KafkaSASLPassword},
		SessionTimeout:    c.KafkaSessionTimeout,
		HeartbeatInterval: c.KafkaHeartbeat,
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "aggregator:", err)
		os.Exit(1)
	}
}

// run is main without the process: it is what the tests call.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ref := fs.Bool("config-reference", false, "print the configuration reference as a Markdown table and exit")
	if _, err := cliconfig.Load(envPrefix, &cfg, fs, args); err != nil {
		return err
	}
	if *ref {
		return cliconfig.WriteReference(stdout, envPrefix, &cfg)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	level, _ := parseLevel(cfg.LogLevel)
	hopts := &slog.HandlerOptions{Level: level}
	var logger *slog.Logger
	if cfg.LogFormat == "json" {
		logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	} else {
		logger = slog.New(slog.NewTextHandler(stderr, hopts))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	switch {
	case cfg.In != "":
		return runFilter(ctx, &cfg, stdin, stdout, stderr, logger, reg)
	case len(cfg.KafkaBrokers) > 0 && !cfg.Demo:
		return runService(ctx, &cfg, logger, reg)
	default:
		return runDemo(ctx, &cfg, stdout, logger, reg)
	}
}

// openStore opens the configured state store.
func openStore(ctx context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	if cfg.Store == "redis" {
		return openRedis(ctx, cfg, logger, reg)
	}
	return state.NewMemory(state.MemoryConfig{IdleTTL: cfg.IdleTTL, Now: time.Now}, reg)
}

// openOut opens a filter-mode output: "" → nil, "-" → std, else a file.
func openOut(path string, std io.Writer) (io.Writer, func() error, error) {
	switch path {
	case "":
		return nil, func() error { return nil }, nil
	case "-":
		return std, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open output: %w", err)
	}
	return f, f.Close, nil
}

// runFilter is the Unix-filter mode: JSON lines in, JSON lines out.
func runFilter(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger, reg *prometheus.Registry) error {
	in := stdin
	if cfg.In != "-" {
		f, err := os.Open(cfg.In)
		if err != nil {
			return fmt.Errorf("config: %s_IN: %w", envPrefix, err)
		}
		defer f.Close()
		in = f
	}
	routes := map[string]io.Writer{}
	var closers []func() error
	for _, o := range []struct {
		path, topic string
		std         io.Writer
	}{
		{cfg.Out, cfg.TopicEstimates, stdout},
		{cfg.AlertsOut, cfg.TopicAlerts, stdout},
		{cfg.AccessReportsOut, cfg.TopicAccessReports, stdout},
		{cfg.DeadLetterOut, cfg.TopicDeadLetter, stderr},
	} {
		w, closeFn, err := openOut(o.path, o.std)
		if err != nil {
			return err
		}
		closers = append(closers, closeFn)
		if w != nil {
			routes[o.topic] = w
		}
	}
	if cfg.Out == "" {
		routes[cfg.TopicEstimates] = stdout
	}
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	store, err := openStore(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	defer store.Close()
	sink := stream.NewWriterSink(routes, nil)
	defer sink.Close()
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, sink, logger, reg, time.Now)
	if err != nil {
		return err
	}
	src := stream.NewReaderSource(cfg.TopicObservations, in, 0)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	if os.Getenv(envPrefix+"_HTTP_ADDR") != "" && cfg.HTTPAddr != "" {
		srv := newHTTPServer(cfg.HTTPAddr, reg, proc, logger)
		g.Go(func() error { return srv.run(gctx) })
	}
	g.Go(func() error {
		defer cancel() // the input ended: stop the HTTP server too
		return src.Run(gctx, proc.Handle)
	})
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Debug("filter done", "committed", proc.Committed())
	return ctx.Err()
}

// runService is the production mode: Kafka in, Kafka out, Redis state.
func runService(ctx context.Context, cfg *config, logger *slog.Logger, reg *prometheus.Registry) error {
	setMemoryLimit(logger)
	kc := cfg.kafkaConfig()
	if err := kc.Validate(); err != nil {
		return fmt.Errorf("config: %s_KAFKA_*: %w", envPrefix, err)
	}
	if cfg.CreateTopics {
		created, err := stream.EnsureTopics(ctx, kc, topicSpecs(cfg))
		if err != nil {
			return err
		}
		if len(created) > 0 {
			logger.Info("created topics", "topics", created)
		}
	}
	store, err := openStore(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	defer store.Close()
	kp, err := newKafkaPipeline(cfg, kc, store, logger, reg)
	if err != nil {
		return err
	}
	defer kp.close()
	return serve(ctx, cfg, kp, logger, reg, nil)
}

// kafkaPipeline is the service's wiring: a consumer-group source and a
// Kafka sink around a Processor.
type kafkaPipeline struct {
	sink *stream.KafkaSink
	src  *stream.KafkaSource
	proc *aggregate.Processor
}

func newKafkaPipeline(cfg *config, kc stream.KafkaConfig, store state.Store, logger *slog.Logger, reg prometheus.Registerer) (*kafkaPipeline, error) {
	sink, err := stream.NewKafkaSink(kc, logger, reg)
	if err != nil {
		return nil, err
	}
	src, err := stream.NewKafkaSource(kc, []string{cfg.TopicObservations}, logger, reg)
	if err != nil {
		sink.Close()
		return nil, err
	}
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, sink, logger, reg, time.Now)
	if err != nil {
		src.Close()
		sink.Close()
		return nil, err
	}
	return &kafkaPipeline{sink: sink, src: src, proc: proc}, nil
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
	if cfg.HTTPAddr != "" {
		srv = newHTTPServer(cfg.HTTPAddr, reg, kp.proc, logger)
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
		{Name: cfg.TopicObservations, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.TopicEstimates, Partitions: cfg.Partitions, ReplicationFactor: rf, Compacted: true},
		{Name: cfg.TopicAccessReports, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.TopicAlerts, Partitions: cfg.Partitions, ReplicationFactor: rf},
		{Name: cfg.TopicDeadLetter, Partitions: 1, ReplicationFactor: rf},
	}
}
