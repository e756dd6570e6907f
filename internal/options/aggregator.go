package options

import (
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/stream"
)

// Aggregator declares every option of the aggregator, once: its variable
// and flag (envconfig), default, unit, bounds (valid), the library field
// it sets (to) and its help (desc), read by internal/cliconfig; demo
// marks the options the embedded demo reads ("true": they alone still
// run the demo; "tuning": accepted with an explicit DEMO). An option
// without a default tag takes the default of the library field it sets
// (cliconfig.Defaults), so that the library's default is written once.
// docs/configuration.md's table is generated from it
// (go run ./cmd/aggregator --config-reference); cmd/aggregator maps it onto
// the libraries' configurations (cliconfig.Apply) and adds the rules that
// relate several options.
type Aggregator struct {
	In   string `envconfig:"IN" desc:"filter mode: read observations (JSON lines, plain or gzip) from this file, or - for stdin, instead of Kafka"`
	Out  string `envconfig:"OUT" desc:"write estimates (JSON lines) to this file, or - for stdout, instead of the estimates topic"`
	Emit string `envconfig:"EMIT" valid:"update|final" to:"aggregate:Emit" desc:"when estimates are published: update (after every batch, for the objects it changed) or final (once, when the input ends; filter mode)"`
	Demo bool   `envconfig:"DEMO" demo:"true" desc:"run the embedded demo (also run when no option is set but the demo's; any other without KAFKA_BROKERS or IN is an error)"`

	Store   string        `envconfig:"STORE" valid:"|memory|redis" desc:"state store: memory or redis (default: redis when REDIS_ADDRS is set, else memory)"`
	IdleTTL time.Duration `envconfig:"IDLE_TTL" valid:">=0" demo:"true" default:"720h" desc:"an object's state expires after this long without observations, or up to 1/16 later (an expiry is refreshed at most once per 1/16 of it); 0: never"`
	HTTP

	Kafka
	KafkaTimeouts
	// KafkaCompression is the codec of the estimates (and other outputs)
	// the aggregator produces (stream.KafkaConfig.Compression). Consumers
	// read the same records; the broker stores and serves fewer bytes.
	// Compressed by default: an estimate record is ~830 bytes of JSON per
	// ~250-byte observation read, and in make bench's live shape lz4 took
	// the broker's CPU per observation from 9.0 to 2.0 µs for 1.7 µs more
	// in the aggregator (total −22 %, rate ÷ kcat 0.27 → 0.39, medians of
	// 6 runs, loaded machine, 28 Nov 2026). snappy, written with s2's
	// fastest encoder (stream's init), compresses about as well for half
	// of lz4's CPU: the aggregator's CPU per observation in the same shape
	// went from 7.70 µs with lz4 to 6.72 with snappy, the broker's
	// unchanged (medians of 3 runs, alternated, 28 Nov 2026). Every
	// consumer library decodes both.
	KafkaCompression  string `envconfig:"KAFKA_COMPRESSION" default:"snappy" desc:"compression of the produced records (estimates, alerts, reports): none, gzip, snappy, lz4 or zstd; consumers read the same records, the broker stores and sends fewer bytes, the aggregator spends CPU compressing them"`
	CreateTopics      bool   `envconfig:"CREATE_TOPICS" default:"true" desc:"create missing topics at start (estimates compacted)"`
	Partitions        int    `envconfig:"PARTITIONS" unit:"partitions" valid:">=1" demo:"true" default:"12" desc:"partitions of topics created at start"`
	ReplicationFactor int    `envconfig:"REPLICATION_FACTOR" unit:"replicas" valid:">=1" default:"1" desc:"replication factor of topics created at start"`

	Topics
	TopicEstimates     string `envconfig:"ESTIMATES_TOPIC" to:"aggregate:EstimatesTopic" desc:"compacted output topic of estimates (key = object; object#access for access estimates)"`
	TopicAccessReports string `envconfig:"ACCESS_REPORTS_TOPIC" to:"aggregate:AccessReportsTopic" desc:"output topic of per-period access reports"`
	TopicAlerts        string `envconfig:"ALERTS_TOPIC" to:"aggregate:AlertsTopic" desc:"output topic of rate-shift alerts"`
	TopicLate          string `envconfig:"LATE_TOPIC" to:"aggregate:LateTopic" desc:"output topic of observations later than the allowed lateness, with the reason"`

	Redis

	BatchSize     int                `envconfig:"BATCH_SIZE" unit:"observations" valid:">=1" to:"aggregate:BatchSize" demo:"true" desc:"most observations per partition batch (one atomic state commit); batches are also kept to a sixth of INFLIGHT_BYTES at the bytes per observation of the batches before"`
	CacheObjects  int                `envconfig:"CACHE_OBJECTS" unit:"objects" valid:">=0" to:"aggregate:CacheObjects" demo:"true" desc:"objects kept in memory per partition between batches (0: unbounded; forced to 0 with EMIT=final)"`
	LateTolerance time.Duration      `envconfig:"LATE_TOLERANCE" valid:">=0" to:"aggregate:Model.LateTolerance" demo:"true" desc:"allowed lateness: an observation older than its object's latest applied one by at most this is applied at that latest time; older ones go to the late output (topic LATE_TOPIC, or --late-out in filter mode) with the reason"`
	CacheBytes    cliconfig.ByteSize `envconfig:"CACHE_BYTES" valid:">=0" to:"aggregate:CacheBytes" demo:"true" desc:"memory of the cached object states of all partitions together, e.g. 512MiB (about 200 bytes per object; 0: unbounded; forced to 0 with EMIT=final); keep it under half the container's memory limit"`
	InflightBytes cliconfig.ByteSize `envconfig:"INFLIGHT_BYTES" valid:">=0" to:"aggregate:InflightBytes" demo:"true" desc:"memory of the batches between fetch and commit (fetched messages, decoded observations, outputs and states waiting to be written and committed) of all partitions together, e.g. 64MiB; a partition waits for it before preparing its next batch (0: unbounded); messages fetched ahead of the partitions take at most as much again"`
	ReportPeriod  time.Duration      `envconfig:"REPORT_PERIOD" valid:">=1s" to:"aggregate:Model.ReportPeriod" demo:"true" desc:"length of an access reporting period"`
	EmitInterval  time.Duration      `envconfig:"EMIT_INTERVAL" valid:">=0" to:"aggregate:Model.EmitInterval" demo:"true" desc:"least event time between two publications of an object's estimate (update mode); 0 publishes after every batch"`
	PStale        float64            `envconfig:"P_STALE" unit:"probability" valid:">0 <1" to:"aggregate:Model.PStale" demo:"true" desc:"target probability that a cached copy within its TTL is stale (sets ttl_s)"`
	IdleCheck     time.Duration      `envconfig:"IDLE_CHECK" valid:">=0" to:"aggregate:IdleCheck" desc:"a partition idle this long checks that Redis still holds its last commit (and reloads if Redis lost writes); 0 disables"`
	MaxFuture     time.Duration      `envconfig:"MAX_FUTURE" valid:">=0" to:"aggregate:MaxFuture" demo:"true" desc:"an observation whose event time is more than this ahead of the wall clock is not applied but dead-lettered (reason future), so that a log line with a wrong clock cannot stretch its object's history and make the later observations late; 0: no limit"`
	ReorderWindow time.Duration      `envconfig:"REORDER_WINDOW" valid:">=0" to:"aggregate:ReorderWindow" demo:"true" desc:"service mode: per partition, observations are held until the latest event time seen is this much later, then applied in event-time order (the watermark's bounded out-of-orderness; also how long, in event time, an estimate waits); older arrivals are applied at once, within LATE_TOLERANCE of their object's latest"`
	IdleRelease   time.Duration      `envconfig:"IDLE_RELEASE" valid:">=0" to:"aggregate:IdleRelease" desc:"a partition without input this long applies the observations its reorder buffer holds (0: only when newer ones arrive)"`
	OnStateLoss   string             `envconfig:"ON_STATE_LOSS" valid:"stop|replay" to:"aggregate:OnStateLoss" desc:"when Redis has no offset for a partition that was processed before (the consumer group committed offsets: Redis restarted without persistence, was flushed or evicted): stop (exit with an error saying what to do) or replay (rebuild the partition from the earliest retained offset)"`
	TakeoverDelay time.Duration      `envconfig:"TAKEOVER_DELAY" valid:">=0" to:"aggregate:TakeoverDelay" desc:"when a partition's stored epoch is above this member's generation (a consumer group deleted and created again), wait this long, then take it over unless the generation ended; must exceed KAFKA_HEARTBEAT"`
	DrainTimeout  time.Duration      `envconfig:"DRAIN_TIMEOUT" valid:">0" to:"aggregate:DrainTimeout" desc:"on SIGTERM, time allowed to finish and commit in-flight batches"`
	// Alerts and seasonal baselines (docs/alerts.md).
	SeasonalLearning  time.Duration `envconfig:"SEASONAL_LEARNING" valid:">=0" to:"aggregate:Model.Seasonal.LearningPeriod" demo:"true" desc:"learning period of each site's daily and weekly access profile before its objects' access alerts start; 0 disables seasonal baselines (flat baseline, no learning period)"`
	SeasonalMinEvents float64       `envconfig:"SEASONAL_MIN_EVENTS" unit:"accesses" valid:">=0" to:"aggregate:Model.Seasonal.MinEvents" demo:"true" desc:"least (discounted) accesses of a site, per partition, for its profile to be used; fewer keep a flat baseline"`
	SeasonalDecay     float64       `envconfig:"SEASONAL_DECAY" unit:"factor per week" valid:">0 <=1" to:"aggregate:Model.Seasonal.Decay" demo:"true" desc:"weekly discount of a site profile's counts (memory about 1/(1-decay) weeks); in (0,1]"`
	AlertPeriod       time.Duration `envconfig:"ALERT_PERIOD" valid:">=1s" to:"aggregate:Model.Alerts.Period" demo:"true" desc:"testing period of the false-discovery-rate adjustment; alerts are published when the partition's event time passes its end"`
	AlertFDR          float64       `envconfig:"ALERT_FDR" unit:"proportion" valid:">0 <=1" to:"aggregate:Model.Alerts.FDR" demo:"true" desc:"Benjamini-Hochberg false-discovery rate per period and partition; 1 keeps every shift that passes the other filters"`
	AlertMinRatio     float64       `envconfig:"ALERT_MIN_RATIO" unit:"ratio" valid:">=1" to:"aggregate:Model.Alerts.MinRatio" demo:"true" desc:"least effect size: observed/expected count >= this (up) or <= its inverse (down)"`
	AlertMinEvents    int64         `envconfig:"ALERT_MIN_EVENTS" unit:"events" valid:">=0" to:"aggregate:Model.Alerts.MinEvents" demo:"true" desc:"least observed (up) or expected (down) events since the change point"`
	AlertSiteObjects  int           `envconfig:"ALERT_SITE_OBJECTS" unit:"objects" valid:">=0" to:"aggregate:Model.Alerts.SiteObjects" demo:"true" desc:"this many objects of one site shifting in one period become one site alert; 0 disables site alerts"`
	AlertSiteTop      int           `envconfig:"ALERT_SITE_TOP" unit:"objects" valid:">=1" to:"aggregate:Model.Alerts.SiteTop" demo:"true" desc:"objects listed in a site alert"`
	ObjectRhythm      bool          `envconfig:"OBJECT_RHYTHM" default:"true" desc:"an object with at least 250 accesses a week learns its own daily access profile and, when its site's does not fit it, is tested against its own (pages or accounts of one site active at different hours); about 35 bytes more state per such object while it counts its accesses (7 between checks); false keeps every object on its site's profile"`

	AlertsOut        string `envconfig:"ALERTS_OUT" desc:"filter mode: write alerts to this file (- for stdout); default: not written"`
	AccessReportsOut string `envconfig:"ACCESS_REPORTS_OUT" desc:"filter mode: write access reports to this file (- for stdout); default: not written"`
	DeadLetterOut    string `envconfig:"DEAD_LETTER_OUT" default:"-" desc:"filter mode: write dead letters to this file; - means stderr"`
	LateOut          string `envconfig:"LATE_OUT" default:"-" desc:"filter mode: write late observations (with the reason) to this file; - means stderr"`
	Sort             bool   `envconfig:"SORT" default:"true" desc:"filter mode: sort the input by event time before aggregating, so that estimates do not depend on input order; false applies it in input order through the reorder buffer"`
	ExternalSort

	Log

	DemoPages int  `envconfig:"DEMO_PAGES" unit:"pages per class" valid:">=1" demo:"true" default:"5" desc:"demo: generated pages per change class (crawled and proxied each)"`
	DemoDays  int  `envconfig:"DEMO_DAYS" unit:"days" valid:">=1" demo:"true" default:"30" desc:"demo: days of generated traffic"`
	DemoExit  bool `envconfig:"DEMO_EXIT" demo:"true" desc:"demo: exit after printing the estimates instead of serving HTTP until interrupted"`

	OutFormat          string             `envconfig:"OUT_FORMAT" valid:"json|table" default:"json" desc:"filter mode: estimates as json (JSON lines) or table (a readable table of the final estimates when the input ends)"`
	Pprof              bool               `envconfig:"PPROF" demo:"true" desc:"serve the Go profiler (net/http/pprof) under /debug/pprof/ on HTTP_ADDR, without authentication: for diagnosis, not for an exposed port"`
	APIToken           string             `envconfig:"API_TOKEN" to:"query:Token" demo:"true" file:"true" desc:"bearer token required by the query API and pages (/v1/..., /, /objects); empty: no authentication"`
	APITimeout         time.Duration      `envconfig:"API_TIMEOUT" valid:">=0" to:"query:Timeout" demo:"true" desc:"time limit of one query API or page request (503 beyond it)"`
	APIMaxRequestBytes cliconfig.ByteSize `envconfig:"API_MAX_REQUEST_BYTES" to:"query:MaxRequestBytes" demo:"true" desc:"longest query API request target and body (414/413 beyond it), e.g. 64KiB"`
	APIIndexObjects    int                `envconfig:"API_INDEX_OBJECTS" unit:"objects" valid:">=0" to:"index:MaxObjects" demo:"true" desc:"objects kept in the in-memory ranking of /v1/top and /v1/plan (least recently updated evicted first)"`
	APIAlerts          int                `envconfig:"API_ALERTS" unit:"alerts" valid:">=0" to:"index:MaxAlerts" demo:"true" desc:"recent alerts kept for /v1/alerts"`
	URLProfile         string             `envconfig:"URL_PROFILE" valid:"|changerate|whatwg|semantic" to:"query:Profile" demo:"true" desc:"URL canonicalisation of the query API's url parameter: changerate, whatwg or semantic (use ingest's --profile)"`
	MinRevisit         time.Duration      `envconfig:"MIN_REVISIT" valid:">0" to:"aggregate:Model.Estimators.MinInterval,query:Plan.MinRevisit" demo:"true" desc:"shortest revisit interval of next_visit and of /v1/plan"`
	MaxRevisit         time.Duration      `envconfig:"MAX_REVISIT" to:"aggregate:Model.Estimators.MaxInterval,query:Plan.MaxRevisit" demo:"true" desc:"longest revisit interval of next_visit and of /v1/plan"`
	PlanBudget         int                `envconfig:"PLAN_BUDGET" unit:"visits per period" valid:">=1" to:"query:Plan.Budget" demo:"true" desc:"default budget (fetches per period) of /v1/plan"`
	PlanPeriod         time.Duration      `envconfig:"PLAN_PERIOD" valid:">=1m" to:"query:Plan.Period" demo:"true" desc:"default period of /v1/plan"`
	PlanPolicy         string             `envconfig:"PLAN_POLICY" desc:"policy of --plan-out: freshness, lambdacrawl, cgm, uniform, proportional, malcolm, ntoulas-greedy or ntoulas-proportional (see /v1/plan)"`
	PlanWeights        string             `envconfig:"PLAN_WEIGHTS" desc:"importance weights of --plan-out: uniform, access (measured access rates) or a file of object-or-site<TAB>weight lines (weights=given of /v1/plan, which uses it too)"`
	PlanHostCap        int                `envconfig:"PLAN_HOST_CAP" unit:"visits per host and period" valid:">=0" to:"query:Plan.HostCap" desc:"politeness cap of --plan-out and /v1/plan: visits per host per period (0: none)"`
	PlanOut            string             `envconfig:"PLAN_OUT" desc:"filter mode: when the input ends, write the plan of PLAN_BUDGET visits over PLAN_PERIOD (PLAN_POLICY, PLAN_WEIGHTS, PLAN_HOST_CAP) to this file (- for stdout), the answer /v1/plan gives on the same estimates"`
}

// DefaultAggregator is the aggregator's declaration with its option
// groups' defaults (the HTTP listener on :8080, its Kafka client id);
// the command adds its libraries' (cliconfig.Defaults).
func DefaultAggregator(clientID string) Aggregator {
	return Aggregator{
		HTTP: DefaultHTTP(":8080"), Kafka: DefaultKafka(clientID, stream.DefaultKafkaGroupID), KafkaTimeouts: DefaultKafkaTimeouts(),
		Topics: DefaultTopics(), Redis: DefaultRedis(), ExternalSort: DefaultExternalSort(),
	}
}
