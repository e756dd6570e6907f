package main

import (
	"fmt"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
	"github.com/changerate/changerate/windows"
)

// envPrefix prefixes every environment variable of the aggregator.
const envPrefix = options.Prefix

// clientID is the aggregator's default Kafka client id.
const clientID = "changerate-aggregator"

// config is the aggregator's whole configuration; docs/configuration.md's reference table
// is generated from these tags (go run ./cmd/aggregator -config-reference).
type config struct {
	In   string `envconfig:"IN" desc:"filter mode: read observations (JSON lines, plain or gzip) from this file, or - for stdin, instead of Kafka"`
	Out  string `envconfig:"OUT" desc:"write estimates (JSON lines) to this file, or - for stdout, instead of the estimates topic"`
	Emit string `envconfig:"EMIT" desc:"when estimates are published: update (after every batch, for the objects it changed) or final (once, when the input ends; filter mode)"`
	Demo bool   `envconfig:"DEMO" desc:"run the embedded demo (also run when no option is set but the demo's; any other without KAFKA_BROKERS or IN is an error)"`

	Store   string        `envconfig:"STORE" desc:"state store: memory or redis (default: redis when REDIS_ADDRS is set, else memory)"`
	IdleTTL time.Duration `envconfig:"IDLE_TTL" default:"720h" desc:"an object's state expires after this long without observations, or up to 1/16 later (an expiry is refreshed at most once per 1/16 of it); 0: never"`
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

	BatchSize     int                `envconfig:"BATCH_SIZE" desc:"most observations per partition batch (one atomic state commit); batches are also kept to a sixth of INFLIGHT_BYTES at the bytes per observation of the batches before"`
	CacheObjects  int                `envconfig:"CACHE_OBJECTS" desc:"objects kept in memory per partition between batches (0: unbounded; forced to 0 with EMIT=final)"`
	LateTolerance time.Duration      `envconfig:"LATE_TOLERANCE" desc:"allowed lateness: an observation older than its object's latest applied one by at most this is applied at that latest time; older ones go to the late output (topic LATE_TOPIC, or --late-out in filter mode) with the reason"`
	CacheBytes    cliconfig.ByteSize `envconfig:"CACHE_BYTES" desc:"memory of the cached object states of all partitions together, e.g. 512MiB (about 200 bytes per object; 0: unbounded; forced to 0 with EMIT=final); keep it under half the container's memory limit"`
	InflightBytes cliconfig.ByteSize `envconfig:"INFLIGHT_BYTES" desc:"memory of the batches between fetch and commit (fetched messages, decoded observations, outputs and states waiting to be written and committed) of all partitions together, e.g. 64MiB; a partition waits for it before preparing its next batch (0: unbounded); messages fetched ahead of the partitions take at most as much again"`
	ReportPeriod  time.Duration      `envconfig:"REPORT_PERIOD" desc:"length of an access reporting period"`
	EmitInterval  time.Duration      `envconfig:"EMIT_INTERVAL" desc:"least event time between two publications of an object's estimate (update mode); 0 publishes after every batch"`
	PStale        float64            `envconfig:"P_STALE" desc:"target probability that a cached copy within its TTL is stale (sets ttl_s)"`
	PoolSites     int                `envconfig:"POOL_SITES" default:"0" desc:"sites per partition whose pooled (empirical-Bayes) prior is kept, e.g. 10000; 0 (default) disables the experimental pooled estimate (not reproduced byte for byte across batch boundaries or restarts)"`
	PoolPublish   bool               `envconfig:"POOL_PUBLISH" desc:"publish the pooled estimate as the best one for objects with fewer than 5 changes (meets its target on simulated sites, not on php/doc-en: docs/eval)"`
	IdleCheck     time.Duration      `envconfig:"IDLE_CHECK" desc:"a partition idle this long checks that Redis still holds its last commit (and reloads if Redis lost writes); 0 disables"`
	MaxFuture     time.Duration      `envconfig:"MAX_FUTURE" desc:"an observation whose event time is more than this ahead of the wall clock is not applied but dead-lettered (reason future), so that a log line with a wrong clock cannot stretch its object's history and make the later observations late; 0: no limit"`
	ReorderWindow time.Duration      `envconfig:"REORDER_WINDOW" desc:"service mode: per partition, observations are held until the latest event time seen is this much later, then applied in event-time order (the watermark's bounded out-of-orderness; also how long, in event time, an estimate waits); older arrivals are applied at once, within LATE_TOLERANCE of their object's latest"`
	IdleRelease   time.Duration      `envconfig:"IDLE_RELEASE" desc:"a partition without input this long applies the observations its reorder buffer holds (0: only when newer ones arrive)"`
	OnStateLoss   string             `envconfig:"ON_STATE_LOSS" desc:"when Redis has no offset for a partition that was processed before (the consumer group committed offsets: Redis restarted without persistence, was flushed or evicted): stop (exit with an error saying what to do) or replay (rebuild the partition from the earliest retained offset)"`
	TakeoverDelay time.Duration      `envconfig:"TAKEOVER_DELAY" desc:"when a partition's stored epoch is above this member's generation (a consumer group deleted and created again), wait this long, then take it over unless the generation ended; must exceed KAFKA_HEARTBEAT"`
	DrainTimeout  time.Duration      `envconfig:"DRAIN_TIMEOUT" desc:"on SIGTERM, time allowed to finish and commit in-flight batches"`
	// Alerts and seasonal baselines (docs/alerts.md).
	SeasonalLearning  time.Duration `envconfig:"SEASONAL_LEARNING" desc:"learning period of each site's daily and weekly access profile before its objects' access alerts start; 0 disables seasonal baselines (flat baseline, no learning period)"`
	SeasonalMinEvents float64       `envconfig:"SEASONAL_MIN_EVENTS" desc:"least (discounted) accesses of a site, per partition, for its profile to be used; fewer keep a flat baseline"`
	SeasonalDecay     float64       `envconfig:"SEASONAL_DECAY" desc:"weekly discount of a site profile's counts (memory about 1/(1-decay) weeks); in (0,1]"`
	AlertPeriod       time.Duration `envconfig:"ALERT_PERIOD" desc:"testing period of the false-discovery-rate adjustment; alerts are published when the partition's event time passes its end"`
	AlertFDR          float64       `envconfig:"ALERT_FDR" desc:"Benjamini-Hochberg false-discovery rate per period and partition; 1 keeps every shift that passes the other filters"`
	AlertMinRatio     float64       `envconfig:"ALERT_MIN_RATIO" desc:"least effect size: observed/expected count >= this (up) or <= its inverse (down)"`
	AlertMinEvents    int64         `envconfig:"ALERT_MIN_EVENTS" desc:"least observed (up) or expected (down) events since the change point"`
	AlertSiteObjects  int           `envconfig:"ALERT_SITE_OBJECTS" desc:"this many objects of one site shifting in one period become one site alert; 0 disables site alerts"`
	AlertSiteTop      int           `envconfig:"ALERT_SITE_TOP" desc:"objects listed in a site alert"`
	ObjectRhythm      bool          `envconfig:"OBJECT_RHYTHM" default:"true" desc:"an object with at least 250 accesses a week learns its own daily access profile and, when its site's does not fit it, is tested against its own (pages or accounts of one site active at different hours); about 35 bytes more state per such object while it counts its accesses (7 between checks); false keeps every object on its site's profile"`

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

	OutFormat          string             `envconfig:"OUT_FORMAT" default:"json" desc:"filter mode: estimates as json (JSON lines) or table (a readable table of the final estimates when the input ends)"`
	Pprof              bool               `envconfig:"PPROF" desc:"serve the Go profiler (net/http/pprof) under /debug/pprof/ on HTTP_ADDR, without authentication: for diagnosis, not for an exposed port"`
	APIToken           string             `envconfig:"API_TOKEN" file:"true" desc:"bearer token required by the query API and pages (/v1/..., /, /objects); empty: no authentication"`
	APITimeout         time.Duration      `envconfig:"API_TIMEOUT" desc:"time limit of one query API or page request (503 beyond it)"`
	APIMaxRequestBytes cliconfig.ByteSize `envconfig:"API_MAX_REQUEST_BYTES" desc:"longest query API request target and body (414/413 beyond it), e.g. 64KiB"`
	APIIndexObjects    int                `envconfig:"API_INDEX_OBJECTS" desc:"objects kept in the in-memory ranking of /v1/top and /v1/plan (least recently updated evicted first)"`
	APIAlerts          int                `envconfig:"API_ALERTS" desc:"recent alerts kept for /v1/alerts"`
	URLProfile         string             `envconfig:"URL_PROFILE" desc:"URL canonicalisation of the query API's url parameter: changerate, whatwg or semantic (use ingest's --profile)"`
	MinRevisit         time.Duration      `envconfig:"MIN_REVISIT" desc:"shortest revisit interval of next_visit and of /v1/plan"`
	MaxRevisit         time.Duration      `envconfig:"MAX_REVISIT" desc:"longest revisit interval of next_visit and of /v1/plan"`
	PlanBudget         int                `envconfig:"PLAN_BUDGET" desc:"default budget (fetches per period) of /v1/plan"`
	PlanPeriod         time.Duration      `envconfig:"PLAN_PERIOD" desc:"default period of /v1/plan"`
	PlanPolicy         string             `envconfig:"PLAN_POLICY" desc:"policy of --plan-out: freshness, lambdacrawl, cgm, uniform, proportional, malcolm, ntoulas-greedy or ntoulas-proportional (see /v1/plan)"`
	PlanWeights        string             `envconfig:"PLAN_WEIGHTS" desc:"importance weights of --plan-out: uniform, access (measured access rates) or a file of object-or-site<TAB>weight lines (weights=given of /v1/plan, which uses it too)"`
	PlanHostCap        int                `envconfig:"PLAN_HOST_CAP" desc:"politeness cap of --plan-out and /v1/plan: visits per host per period (0: none)"`
	PlanOut            string             `envconfig:"PLAN_OUT" desc:"filter mode: when the input ends, write the plan of PLAN_BUDGET visits over PLAN_PERIOD (PLAN_POLICY, PLAN_WEIGHTS, PLAN_HOST_CAP) to this file (- for stdout), the answer /v1/plan gives on the same estimates"`
	// planWeights is PLAN_WEIGHTS's file, read by validateQuery.
	planWeights map[string]float64
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
		CacheBytes:        cliconfig.ByteSize(pc.CacheBytes),
		InflightBytes:     cliconfig.ByteSize(pc.InflightBytes),
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
		MaxFuture:         pc.MaxFuture,
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
		{c.IdleTTL < 0, "IDLE_TTL", "a duration of 0 (never) or more", c.IdleTTL},
		{c.LateTolerance < 0, "LATE_TOLERANCE", "a duration of 0 or more", c.LateTolerance},
		{c.EmitInterval < 0, "EMIT_INTERVAL", "a duration of 0 or more", c.EmitInterval},
		{c.ReportPeriod < time.Second, "REPORT_PERIOD", "at least 1s", c.ReportPeriod},
		{!(c.PStale > 0 && c.PStale < 1), "P_STALE", "strictly between 0 and 1", c.PStale},
		{c.IdleCheck < 0, "IDLE_CHECK", "a duration of 0 or more", c.IdleCheck},
		{c.IdleRelease < 0, "IDLE_RELEASE", "a duration of 0 or more", c.IdleRelease},
		{c.ReorderWindow < 0, "REORDER_WINDOW", "a duration of 0 or more", c.ReorderWindow},
		{c.MaxFuture < 0, "MAX_FUTURE", "a duration of 0 or more", c.MaxFuture},
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
	pc.Model.DisableObjectRhythm = !c.ObjectRhythm
	pc.EstimatesTopic, pc.AccessReportsTopic = c.TopicEstimates, c.TopicAccessReports
	pc.AlertsTopic, pc.DeadLetterTopic = c.TopicAlerts, c.Topics.DeadLetter
	pc.LateTopic = c.TopicLate
	pc.DrainTimeout = c.DrainTimeout
	pc.TakeoverDelay = explicitZero(c.TakeoverDelay, aggregate.ZeroDuration)
	pc.IdleCheck = explicitZero(c.IdleCheck, aggregate.ZeroDuration)
	pc.IdleRelease = explicitZero(c.IdleRelease, aggregate.ZeroDuration)
	pc.ReorderWindow = explicitZero(c.ReorderWindow, aggregate.ZeroDuration)
	pc.MaxFuture = explicitZero(c.MaxFuture, aggregate.Unbounded)
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
// The source's fetch-ahead buffer (KafkaConfig.FetchBufferBytes) follows
// INFLIGHT_BYTES (aggregate.FetchAheadBytes).
func (c *config) kafkaConfig() stream.KafkaConfig {
	kc := c.Kafka.Config()
	c.KafkaTimeouts.ApplyTo(&kc)
	if b := aggregate.FetchAheadBytes(int64(c.InflightBytes)); b > 0 {
		kc.FetchBufferBytes = b
	}
	return kc
}
