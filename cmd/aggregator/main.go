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
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/buildinfo"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
	"github.com/changerate/changerate/windows"
)

// envPrefix prefixes every environment variable of the aggregator.
const envPrefix = options.Prefix

// clientID is the aggregator's default Kafka client id.
const clientID = "changerate-aggregator"

// config is the aggregator's whole configuration; README's reference table
// is generated from these tags (go run ./cmd/aggregator -config-reference).
type config struct {
	In   string `envconfig:"IN" desc:"filter mode: read observations (JSON lines, plain or gzip) from this file, or - for stdin, instead of Kafka"`
	Out  string `envconfig:"OUT" desc:"write estimates (JSON lines) to this file, or - for stdout, instead of the estimates topic"`
	Emit string `envconfig:"EMIT" desc:"when estimates are published: update (after every batch, for the objects it changed) or final (once, when the input ends; filter mode)"`
	Demo bool   `envconfig:"DEMO" desc:"run the embedded demo (the default when neither KAFKA_BROKERS nor IN is set)"`

	Store   string        `envconfig:"STORE" desc:"state store: memory or redis (default: redis when REDIS_ADDRS is set, else memory)"`
	IdleTTL time.Duration `envconfig:"IDLE_TTL" default:"720h" desc:"an object's state expires after this long without observations (0: never)"`
	options.HTTP

	options.Kafka
	options.KafkaTimeouts
	CreateTopics      bool `envconfig:"CREATE_TOPICS" default:"true" desc:"create missing topics at start (estimates compacted)"`
	Partitions        int  `envconfig:"PARTITIONS" default:"12" desc:"partitions of topics created at start"`
	ReplicationFactor int  `envconfig:"REPLICATION_FACTOR" default:"1" desc:"replication factor of topics created at start"`

	options.Topics
	TopicEstimates     string `envconfig:"ESTIMATES_TOPIC" desc:"compacted output topic of estimates (key = object; object#access for access estimates)"`
	TopicAccessReports string `envconfig:"ACCESS_REPORTS_TOPIC" desc:"output topic of per-period access reports"`
	TopicAlerts        string `envconfig:"ALERTS_TOPIC" desc:"output topic of rate-shift alerts"`
	TopicLate          string `envconfig:"LATE_TOPIC" desc:"output topic of observations later than the allowed lateness, with the reason"`

	options.Redis

	BatchSize     int           `envconfig:"BATCH_SIZE" desc:"most observations per partition batch (one atomic state commit)"`
	CacheObjects  int           `envconfig:"CACHE_OBJECTS" desc:"objects kept in memory per partition between batches (0: unbounded; forced to 0 with EMIT=final)"`
	LateTolerance time.Duration `envconfig:"LATE_TOLERANCE" desc:"allowed lateness: an observation older than its object's latest applied one by at most this is applied at that latest time; older ones go to the late output (topic LATE_TOPIC, or --late-out in filter mode) with the reason"`
	CacheBytes    byteSize      `envconfig:"CACHE_BYTES" desc:"memory of the cached object states of all partitions together, e.g. 512MiB (about 300 bytes per object; 0: unbounded; forced to 0 with EMIT=final); keep it under half the container's memory limit"`
	InflightBytes byteSize      `envconfig:"INFLIGHT_BYTES" desc:"memory of the batches between fetch and commit (fetched messages, decoded observations, outputs and states waiting to be written and committed) of all partitions together, e.g. 64MiB; a partition waits for it before preparing its next batch (0: unbounded); messages fetched ahead of the partitions take at most half as much again"`
	ReportPeriod  time.Duration `envconfig:"REPORT_PERIOD" desc:"length of an access reporting period"`
	EmitInterval  time.Duration `envconfig:"EMIT_INTERVAL" desc:"least event time between two publications of an object's estimate (update mode); 0 publishes after every batch"`
	PStale        float64       `envconfig:"P_STALE" desc:"target probability that a cached copy within its TTL is stale (sets ttl_s)"`
	PoolSites     int           `envconfig:"POOL_SITES" default:"0" desc:"sites per partition whose pooled (empirical-Bayes) prior is kept, e.g. 10000; 0 (default) disables the experimental pooled estimate (not reproduced byte for byte across batch boundaries or restarts)"`
	PoolPublish   bool          `envconfig:"POOL_PUBLISH" desc:"publish the pooled estimate as the best one for objects with fewer than 5 changes (meets its target on simulated sites, not on php/doc-en: docs/eval)"`
	IdleCheck     time.Duration `envconfig:"IDLE_CHECK" desc:"a partition idle this long checks that Redis still holds its last commit (and reloads if Redis lost writes); 0 disables"`
	ReorderWindow time.Duration `envconfig:"REORDER_WINDOW" desc:"service mode: per partition, observations are held until the latest event time seen is this much later, then applied in event-time order (the watermark's bounded out-of-orderness; also how long, in event time, an estimate waits); older arrivals are applied at once, within LATE_TOLERANCE of their object's latest"`
	IdleRelease   time.Duration `envconfig:"IDLE_RELEASE" desc:"a partition without input this long applies the observations its reorder buffer holds (0: only when newer ones arrive)"`
	OnStateLoss   string        `envconfig:"ON_STATE_LOSS" desc:"when Redis has no offset for a partition that was processed before (the consumer group committed offsets: Redis restarted without persistence, was flushed or evicted): stop (exit with an error saying what to do) or replay (rebuild the partition from the earliest retained offset)"`
	TakeoverDelay time.Duration `envconfig:"TAKEOVER_DELAY" desc:"when a partition's stored epoch is above this member's generation (a consumer group deleted and created again), wait this long, then take it over unless the generation ended; must exceed KAFKA_HEARTBEAT"`
	DrainTimeout  time.Duration `envconfig:"DRAIN_TIMEOUT" desc:"on SIGTERM, time allowed to finish and commit in-flight batches"`
	// Alerts and seasonal baselines (README "Alerts").
	SeasonalLearning  time.Duration `envconfig:"SEASONAL_LEARNING" desc:"learning period of each site's daily and weekly access profile before its objects' access alerts start; 0 disables seasonal baselines (flat baseline, no learning period)"`
	SeasonalMinEvents float64       `envconfig:"SEASONAL_MIN_EVENTS" desc:"least (discounted) accesses of a site, per partition, for its profile to be used; fewer keep a flat baseline"`
	SeasonalDecay     float64       `envconfig:"SEASONAL_DECAY" desc:"weekly discount of a site profile's counts (memory about 1/(1-decay) weeks); in (0,1]"`
	AlertPeriod       time.Duration `envconfig:"ALERT_PERIOD" desc:"testing period of the false-discovery-rate adjustment; alerts are published when the partition's event time passes its end"`
	AlertFDR          float64       `envconfig:"ALERT_FDR" desc:"Benjamini-Hochberg false-discovery rate per period and partition; 1 keeps every shift that passes the other filters"`
	AlertMinRatio     float64       `envconfig:"ALERT_MIN_RATIO" desc:"least effect size: observed/expected count >= this (up) or <= its inverse (down)"`
	AlertMinEvents    int64         `envconfig:"ALERT_MIN_EVENTS" desc:"least observed (up) or expected (down) events since the change point"`
	AlertSiteObjects  int           `envconfig:"ALERT_SITE_OBJECTS" desc:"this many objects of one site shifting in one period become one site alert; 0 disables site alerts"`
	AlertSiteTop      int           `envconfig:"ALERT_SITE_TOP" desc:"objects listed in a site alert"`

	AlertsOut        string `envconfig:"ALERTS_OUT" desc:"filter mode: write alerts to this file (- for stdout); default: not written"`
	AccessReportsOut string `envconfig:"ACCESS_REPORTS_OUT" desc:"filter mode: write access reports to this file (- for stdout); default: not written"`
	DeadLetterOut    string `envconfig:"DEAD_LETTER_OUT" default:"-" desc:"filter mode: write dead letters to this file; - means stderr"`
	LateOut          string `envconfig:"LATE_OUT" default:"-" desc:"filter mode: write late observations (with the reason) to this file; - means stderr"`
	Sort             bool   `envconfig:"SORT" default:"true" desc:"filter mode: sort the input by event time before aggregating, so that estimates do not depend on input order; false applies it in input order through the reorder buffer"`
	options.ExternalSort

	options.Log

	DemoPages int  `envconfig:"DEMO_PAGES" default:"5" desc:"demo: generated pages per change class (crawled and proxied each)"`
	DemoDays  int  `envconfig:"DEMO_DAYS" default:"30" desc:"demo: days of generated traffic"`
	DemoExit  bool `envconfig:"DEMO_EXIT" desc:"demo: exit after printing the estimates instead of serving HTTP until interrupted"`

	OutFormat          string        `envconfig:"OUT_FORMAT" default:"json" desc:"filter mode: estimates as json (JSON lines) or table (a readable table of the final estimates when the input ends)"`
	Pprof              bool          `envconfig:"PPROF" desc:"serve the Go profiler (net/http/pprof) under /debug/pprof/ on HTTP_ADDR, without authentication: for diagnosis, not for an exposed port"`
	APIToken           string        `envconfig:"API_TOKEN" desc:"bearer token required by the query API and pages (/v1/..., /, /objects); empty: no authentication"`
	APITimeout         time.Duration `envconfig:"API_TIMEOUT" desc:"time limit of one query API or page request (503 beyond it)"`
	APIMaxRequestBytes int           `envconfig:"API_MAX_REQUEST_BYTES" desc:"longest query API request target and body (414/413 beyond it)"`
	APIIndexObjects    int           `envconfig:"API_INDEX_OBJECTS" desc:"objects kept in the in-memory ranking of /v1/top and /v1/plan (least recently updated evicted first)"`
	APIAlerts          int           `envconfig:"API_ALERTS" desc:"recent alerts kept for /v1/alerts"`
	URLProfile         string        `envconfig:"URL_PROFILE" desc:"URL canonicalisation of the query API's url parameter: changerate, whatwg or semantic (use ingest's --profile)"`
	MinRevisit         time.Duration `envconfig:"MIN_REVISIT" desc:"shortest revisit interval of next_visit and of /v1/plan"`
	MaxRevisit         time.Duration `envconfig:"MAX_REVISIT" desc:"longest revisit interval of next_visit and of /v1/plan"`
	PlanBudget         int           `envconfig:"PLAN_BUDGET" desc:"default budget (fetches per period) of /v1/plan"`
	PlanPeriod         time.Duration `envconfig:"PLAN_PERIOD" desc:"default period of /v1/plan"`
	// httpSet: HTTP_ADDR was given (variable or flag), so the filter mode
	// serves HTTP too.
	httpSet bool
}

// newConfig is the configuration before Load, holding the defaults of the
// options without a default tag: the libraries' (aggregate, query,
// parse) and the shared option groups' (see internal/options).
func newConfig() config {
	pc := aggregateDefaults()
	m := pc.Model
	return config{
		HTTP:              options.DefaultHTTP(":8080"),
		Emit:              pc.Emit,
		BatchSize:         pc.BatchSize,
		CacheObjects:      pc.CacheObjects,
		CacheBytes:        byteSize(pc.CacheBytes),
		InflightBytes:     byteSize(pc.InflightBytes),
		LateTolerance:     m.LateTolerance,
		ReportPeriod:      m.ReportPeriod,
		EmitInterval:      m.EmitInterval,
		PStale:            m.PStale,
		MinRevisit:        time.Duration(m.Estimators.MinInterval * float64(time.Second)),
		MaxRevisit:        time.Duration(m.Estimators.MaxInterval * float64(time.Second)),
		SeasonalLearning:  m.Seasonal.LearningPeriod,
		SeasonalMinEvents: m.Seasonal.MinEvents,
		SeasonalDecay:     m.Seasonal.Decay,
		AlertPeriod:       m.Alerts.Period,
		AlertFDR:          m.Alerts.FDR,
		AlertMinRatio:     m.Alerts.MinRatio,
		AlertMinEvents:    m.Alerts.MinEvents,
		AlertSiteObjects:  m.Alerts.SiteObjects,
		AlertSiteTop:      m.Alerts.SiteTop,
		IdleCheck:         pc.IdleCheck,
		ReorderWindow:     pc.ReorderWindow,
		IdleRelease:       pc.IdleRelease,
		OnStateLoss:       aggregate.OnStateLossStop, // the library's "" means it
		TakeoverDelay:     pc.TakeoverDelay,
		DrainTimeout:      pc.DrainTimeout,

		TopicEstimates:     pc.EstimatesTopic,
		TopicAccessReports: pc.AccessReportsTopic,
		TopicAlerts:        pc.AlertsTopic,
		TopicLate:          pc.LateTopic,
		URLProfile:         parse.ProfileChangerate,
		APITimeout:         query.DefaultTimeout,
		APIMaxRequestBytes: query.DefaultMaxRequestBytes,
		APIIndexObjects:    query.DefaultIndexObjects,
		APIAlerts:          query.DefaultIndexAlerts,
		PlanBudget:         query.DefaultPlanBudget,
		PlanPeriod:         query.DefaultPlanPeriod,
		Topics:             options.DefaultTopics(),
		ExternalSort:       options.DefaultExternalSort(),

		Kafka:         options.DefaultKafka(clientID, stream.DefaultKafkaGroupID),
		KafkaTimeouts: options.DefaultKafkaTimeouts(),
		Redis:         options.DefaultRedis(),
	}
}

// aggregateDefaults is the processor's default configuration, the source
// of the defaults of the options that set it (processorConfig).
func aggregateDefaults() aggregate.Config { return aggregate.DefaultConfig() }

// opt names an option as the user sets it: "CHANGERATE_X (--x)".
func opt(name string) string { return options.Name(name) }

func (c *config) validate() error {
	if c.In != "" && len(c.Kafka.Brokers) > 0 {
		return fmt.Errorf("config: %s and %s are exclusive: filter mode reads no Kafka", opt("IN"), opt("KAFKA_BROKERS"))
	}
	switch c.Store {
	case "":
		c.Store = "memory"
		if len(c.Redis.Addrs) > 0 {
			c.Store = "redis"
		}
	case "memory":
	case "redis":
		if len(c.Redis.Addrs) == 0 {
			return fmt.Errorf("config: %s=redis needs %s", opt("STORE"), opt("REDIS_ADDRS"))
		}
	default:
		return fmt.Errorf("config: %s must be memory or redis, got %q", opt("STORE"), c.Store)
	}
	switch c.Emit {
	case aggregate.EmitUpdate, aggregate.EmitFinal:
	default:
		return fmt.Errorf("config: %s must be update or final, got %q", opt("EMIT"), c.Emit)
	}
	if c.Emit == aggregate.EmitFinal && c.In == "" {
		return fmt.Errorf("config: %s=final needs a finite input: set %s", opt("EMIT"), opt("IN"))
	}
	checks := []struct {
		bad  bool
		name string
		want string
		got  any
	}{
		{c.DemoPages < 1, "DEMO_PAGES", "at least 1", c.DemoPages},
		{c.DemoDays < 1, "DEMO_DAYS", "at least 1", c.DemoDays},
		{c.Partitions < 1, "PARTITIONS", "at least 1", c.Partitions},
		{c.ReplicationFactor < 1, "REPLICATION_FACTOR", "at least 1", c.ReplicationFactor},
		{c.BatchSize < 1, "BATCH_SIZE", "at least 1", c.BatchSize},
		{c.CacheObjects < 0, "CACHE_OBJECTS", "0 (unbounded) or more", c.CacheObjects},
		{c.PoolSites < 0, "POOL_SITES", "0 (off) or more", c.PoolSites},
		{c.LateTolerance < 0, "LATE_TOLERANCE", "a duration of 0 or more", c.LateTolerance},
		{c.EmitInterval < 0, "EMIT_INTERVAL", "a duration of 0 or more", c.EmitInterval},
		{c.ReportPeriod < time.Second, "REPORT_PERIOD", "at least 1s", c.ReportPeriod},
		{!(c.PStale > 0 && c.PStale < 1), "P_STALE", "strictly between 0 and 1", c.PStale},
		{c.IdleCheck < 0, "IDLE_CHECK", "a duration of 0 or more", c.IdleCheck},
		{c.IdleRelease < 0, "IDLE_RELEASE", "a duration of 0 or more", c.IdleRelease},
		{c.ReorderWindow < 0, "REORDER_WINDOW", "a duration of 0 or more", c.ReorderWindow},
		{c.DrainTimeout <= 0, "DRAIN_TIMEOUT", "a positive duration", c.DrainTimeout},
		{c.TopicLate == "", "LATE_TOPIC", "a topic name", `""`},
	}
	for _, k := range checks {
		if k.bad {
			return fmt.Errorf("config: %s must be %s, got %v", opt(k.name), k.want, k.got)
		}
	}
	for _, err := range []error{c.Topics.Validate(), c.ExternalSort.Validate()} {
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	if c.TakeoverDelay <= c.KafkaTimeouts.Heartbeat && len(c.Kafka.Brokers) > 0 {
		return fmt.Errorf("config: %s (%s) must exceed %s (%s)", opt("TAKEOVER_DELAY"), c.TakeoverDelay, opt("KAFKA_HEARTBEAT"), c.KafkaTimeouts.Heartbeat)
	}
	if c.OnStateLoss != aggregate.OnStateLossStop && c.OnStateLoss != aggregate.OnStateLossReplay {
		return fmt.Errorf("config: %s must be stop or replay, got %q", opt("ON_STATE_LOSS"), c.OnStateLoss)
	}
	if err := c.validateQuery(); err != nil {
		return err
	}
	if err := c.Log.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.validateAlerts()
}

// processorConfig maps the flat configuration onto aggregate.Config.
func (c *config) processorConfig() aggregate.Config {
	pc := aggregateDefaults()
	pc.BatchSize = c.BatchSize
	pc.Emit = c.Emit
	pc.CacheObjects = explicitZero(c.CacheObjects, aggregate.Unbounded)
	pc.CacheBytes = explicitZero(int64(c.CacheBytes), aggregate.Unbounded)
	pc.InflightBytes = explicitZero(int64(c.InflightBytes), aggregate.Unbounded)
	if c.Emit == aggregate.EmitFinal {
		pc.CacheObjects, pc.CacheBytes = aggregate.Unbounded, aggregate.Unbounded
	}
	pc.Model.LateTolerance = explicitZero(c.LateTolerance, aggregate.ZeroDuration)
	pc.Model.ReportPeriod = c.ReportPeriod
	pc.Model.PStale = c.PStale
	pc.Model.PoolSites = c.PoolSites
	pc.Model.PublishPooled = c.PoolPublish
	pc.Model.EmitInterval = explicitZero(c.EmitInterval, aggregate.ZeroDuration)
	pc.Model.Estimators.MinInterval, pc.Model.Estimators.MaxInterval = c.MinRevisit.Seconds(), c.MaxRevisit.Seconds()
	pc.Model.Seasonal.LearningPeriod = c.SeasonalLearning
	if c.SeasonalLearning == 0 { // the option's 0 disables seasonal baselines
		pc.Model.Seasonal.LearningPeriod = windows.SeasonalOff
	}
	pc.Model.Seasonal.MinEvents = c.SeasonalMinEvents
	if c.SeasonalMinEvents == 0 { // the option's 0 requires no points
		pc.Model.Seasonal.MinEvents = windows.NoMinEvents
	}
	pc.Model.Seasonal.Decay = c.SeasonalDecay
	pc.Model.Alerts.Period = c.AlertPeriod
	pc.Model.Alerts.FDR = c.AlertFDR
	pc.Model.Alerts.MinRatio = c.AlertMinRatio
	pc.Model.Alerts.MinEvents = explicitZero(c.AlertMinEvents, aggregate.ZeroCount)
	pc.Model.Alerts.SiteObjects = explicitZero(c.AlertSiteObjects, aggregate.ZeroCount)
	pc.Model.Alerts.SiteTop = c.AlertSiteTop
	pc.EstimatesTopic, pc.AccessReportsTopic = c.TopicEstimates, c.TopicAccessReports
	pc.AlertsTopic, pc.DeadLetterTopic = c.TopicAlerts, c.Topics.DeadLetter
	pc.LateTopic = c.TopicLate
	pc.DrainTimeout = c.DrainTimeout
	pc.TakeoverDelay = explicitZero(c.TakeoverDelay, aggregate.ZeroDuration)
	pc.IdleCheck = explicitZero(c.IdleCheck, aggregate.ZeroDuration)
	pc.IdleRelease = explicitZero(c.IdleRelease, aggregate.ZeroDuration)
	pc.ReorderWindow = explicitZero(c.ReorderWindow, aggregate.ZeroDuration)
	// Filter mode sorts its input by event time first: the reorder buffer
	// would only hold (in memory) what is already in order.
	pc.DisableReorder = c.In != "" && c.Sort
	pc.OnStateLoss = c.OnStateLoss
	return pc
}

// explicitZero maps an option's 0, a meaningful setting on the command
// line, onto aggregate's sentinel for it (aggregate reads 0 as "default").
func explicitZero[T ~int | ~int64](v, sentinel T) T {
	if v == 0 {
		return sentinel
	}
	return v
}

// kafkaConfig is the Kafka configuration of the consumer and of the sink.
// The source's fetch-ahead buffer (KafkaConfig.FetchBufferBytes) is half
// of INFLIGHT_BYTES: one option bounds what is fetched but not yet handled
// too.
func (c *config) kafkaConfig() stream.KafkaConfig {
	kc := c.Kafka.Config()
	c.KafkaTimeouts.ApplyTo(&kc)
	if c.InflightBytes > 0 {
		kc.FetchBufferBytes = int64(c.InflightBytes) / 2
	}
	return kc
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "aggregator:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks an error in the command line or the configuration: the
// program exits with status 2 for it (as ingest does and as flag parsing
// does), and 1 for a run that failed.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// run is main without the process: it is what the tests call.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg := newConfig()
	fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs) }
	ref := fs.Bool("config-reference", false, "print the configuration reference as a Markdown table and exit")
	version := fs.Bool("version", false, "print the version and exit")
	rest, err := cliconfig.Load(envPrefix, &cfg, fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if len(rest) > 0 {
		// Without this, "aggregator obs.jsonl" would run the demo.
		return usageError{fmt.Errorf("config: aggregator takes no arguments, got %q: give the input with --in=FILE or --in=- for stdin (%s_IN)", rest, envPrefix)}
	}
	if *version {
		_, err := fmt.Fprintln(stdout, buildinfo.Get().String("aggregator"))
		return err
	}
	// HTTP in filter mode only when asked for, by the variable or the flag.
	_, cfg.httpSet = os.LookupEnv(envPrefix + "_HTTP_ADDR")
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "http-addr" {
			cfg.httpSet = true
		}
	})
	if *ref {
		return cliconfig.WriteReference(stdout, envPrefix, &cfg)
	}
	if err := cfg.validate(); err != nil {
		return usageError{err}
	}
	logger, err := cfg.Log.Logger(stderr)
	if err != nil {
		return usageError{fmt.Errorf("config: %w", err)}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.NewCollector("aggregator"))

	switch {
	case cfg.In != "":
		return runFilter(ctx, &cfg, stdin, stdout, stderr, logger, reg)
	case len(cfg.Kafka.Brokers) > 0 && !cfg.Demo:
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
	in, name := stdin, "stdin"
	if cfg.In != "-" {
		f, err := os.Open(cfg.In)
		if err != nil {
			return fmt.Errorf("config: %s: %w", opt("IN"), err)
		}
		defer f.Close()
		in, name = f, cfg.In
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
		{cfg.DeadLetterOut, cfg.Topics.DeadLetter, stderr},
		{cfg.LateOut, cfg.TopicLate, stderr},
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
	var table *tableWriter
	if cfg.OutFormat == "table" {
		table = newTableWriter(routes[cfg.TopicEstimates])
		routes[cfg.TopicEstimates] = table
	}
	var sink stream.Sink = stream.NewWriterSink(routes, nil)
	defer sink.Close()
	httpOn := cfg.httpSet && cfg.HTTP.Addr != ""
	var api *query.Server
	if httpOn {
		if api, sink, err = newQuery(cfg, store, sink, query.SinglePartition{Topic: cfg.Topics.Observations}, logger); err != nil {
			return err
		}
	}
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, sink, logger, reg, time.Now)
	if err != nil {
		return err
	}
	var ist inputStats
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	if httpOn {
		srv := newHTTPServer(cfg.HTTP.Addr, reg, proc, logger, api.Register)
		g.Go(func() error { return srv.run(gctx) })
	}
	g.Go(func() error {
		defer cancel() // the input ended: stop the HTTP server too
		in, err := gunzipInput(in, name)
		if err != nil {
			return err
		}
		in, err = checkObservations(in, name)
		if err != nil {
			return err
		}
		if cfg.Sort {
			sorted, closeSort, err := sortInput(in, name, cfg.ExternalSort.Memory, cfg.ExternalSort.Dir, func(dl []byte) error {
				return sink.Write(gctx, stream.Message{Topic: cfg.Topics.DeadLetter, Value: dl})
			}, &ist)
			if err != nil {
				return err
			}
			defer closeSort()
			in = sorted
		}
		return stream.NewReaderSource(cfg.Topics.Observations, in, 0).Run(gctx, proc.Handle)
	})
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Debug("filter done", "committed", proc.Committed())
	lateTo := "stderr"
	if cfg.LateOut != "-" {
		lateTo = cfg.LateOut
	}
	sum := summary{in: ist, st: proc.Stats(), final: cfg.Emit == aggregate.EmitFinal, lateTo: lateTo}
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): say what was done, not "context canceled".
		sum.write(stderr)
		return errors.New("interrupted before the input ended: the summary counts what was read until then")
	}
	if table != nil {
		if err := table.print(); err != nil {
			return err
		}
	}
	sum.write(stderr)
	return sum.verdict()
}

// runService is the production mode: Kafka in, Kafka out, Redis state.
func runService(ctx context.Context, cfg *config, logger *slog.Logger, reg *prometheus.Registry) error {
	setMemoryLimit(logger)
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
	sink *stream.KafkaSink
	src  *stream.KafkaSource
	proc *aggregate.Processor
	api  *query.Server
	tee  *query.TeeSink
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
	api, tee, err := newQuery(cfg, store, sink, kafkaLocator(cfg, kc), logger)
	if err != nil {
		src.Close()
		sink.Close()
		return nil, err
	}
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, tee, logger, reg, time.Now)
	if err != nil {
		src.Close()
		sink.Close()
		return nil, err
	}
	return &kafkaPipeline{sink: sink, src: src, proc: proc, api: api, tee: tee}, nil
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
		srv = newHTTPServer(cfg.HTTP.Addr, reg, kp.proc, logger, routes...)
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
