package main

import (
	"errors"
	"fmt"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
)

// envPrefix prefixes every environment variable of the aggregator.
const envPrefix = options.Prefix

// clientID is the aggregator's default Kafka client id.
const clientID = "changerate-aggregator"

// config is the aggregator's whole configuration: its options, declared
// once in options.Aggregator (docs/configuration.md's reference table is
// generated from them: go run ./cmd/aggregator -config-reference), and
// what validate derives from them.
type config struct {
	options.Aggregator
	// planWeights is PLAN_WEIGHTS's file, read by validateQuery.
	planWeights map[string]float64
	// httpSet: HTTP_ADDR was given (variable or flag), so the filter mode
	// serves HTTP too.
	httpSet bool
}

// libraries are the library configurations the options set (their to
// tags): the processor's, the query API's and its index's.
type libraries struct {
	aggregate aggregate.Config
	query     query.Config
	index     query.IndexConfig
}

// defaultLibraries holds the libraries' defaults.
func defaultLibraries() *libraries {
	return &libraries{aggregate: aggregate.DefaultConfig(), query: query.Config{}.WithDefaults(), index: query.IndexConfig{}.WithDefaults()}
}

func (l *libraries) targets() cliconfig.Targets {
	return cliconfig.Targets{"aggregate": &l.aggregate, "query": &l.query, "index": &l.index}
}

// newConfig is the configuration before Load, holding the defaults of the
// options without a default tag: the libraries' (cliconfig.Defaults, by
// the options' to tags) and the shared option groups' (see
// internal/options).
func newConfig() config {
	c := config{Aggregator: options.DefaultAggregator(clientID)}
	cliconfig.Defaults(&c.Aggregator, defaultLibraries().targets())
	return c
}

// opt names an option as the user sets it: "CHANGERATE_X (--x)".
func opt(name string) string { return options.Name(name) }

// validate reports every invalid option at once (errors.Join): the values
// outside their declared bounds (cliconfig.Check), then the rules that
// relate several options. It settles STORE's default and reads
// PLAN_WEIGHTS's file.
func (c *config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	for _, err := range []error{cliconfig.Check(envPrefix, &c.Aggregator), c.Topics.Validate(), c.ExternalSort.Validate(), c.Log.Validate()} {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				add(e)
			}
			continue
		}
		add(err)
	}
	if c.In != "" && len(c.Kafka.Brokers) > 0 {
		add(fmt.Errorf("%s and %s are exclusive: filter mode reads no Kafka", opt("IN"), opt("KAFKA_BROKERS")))
	}
	if c.Store == "" {
		c.Store = "memory"
		if len(c.Redis.Addrs) > 0 {
			c.Store = "redis"
		}
	}
	if c.Store == "redis" && len(c.Redis.Addrs) == 0 {
		add(fmt.Errorf("%s=redis needs %s", opt("STORE"), opt("REDIS_ADDRS")))
	}
	if c.Emit == aggregate.EmitFinal && c.In == "" {
		add(fmt.Errorf("%s=final needs a finite input: set %s", opt("EMIT"), opt("IN")))
	}
	if c.TopicLate == "" {
		add(fmt.Errorf("%s must be a topic name, got \"\"", opt("LATE_TOPIC")))
	}
	if c.TakeoverDelay <= c.KafkaTimeouts.Heartbeat && len(c.Kafka.Brokers) > 0 {
		add(fmt.Errorf("%s (%s) must exceed %s (%s)", opt("TAKEOVER_DELAY"), c.TakeoverDelay, opt("KAFKA_HEARTBEAT"), c.KafkaTimeouts.Heartbeat))
	}
	for _, err := range c.validateQuery() {
		add(err)
	}
	if len(errs) == 0 {
		// The query API's own checks, of what the options above do not
		// cover (its field names are the library's).
		if err := c.queryConfig().Validate(); err != nil {
			add(fmt.Errorf("%s_API_*: %w", envPrefix, err))
		}
	}
	return errors.Join(errs...)
}

// processorConfig maps the options onto aggregate.Config: the library's
// defaults, every option's value (its to tag), and the rules of the
// command's modes.
func (c *config) processorConfig() aggregate.Config {
	lib := defaultLibraries()
	cliconfig.Apply(&c.Aggregator, lib.targets())
	pc := lib.aggregate
	if c.Emit == aggregate.EmitFinal {
		pc.CacheObjects, pc.CacheBytes = 0, 0 // no bound: every object is published at the end
	}
	// Filter mode sorts its input by event time first: the reorder buffer
	// would only hold (in memory) what is already in order.
	pc.DisableReorder = c.In != "" && c.Sort
	pc.Model.DisableObjectRhythm = !c.ObjectRhythm // the option says what is on; the library's zero value is on
	return pc
}

// kafkaConfig is the Kafka configuration of the consumer and of the sink.
// The source's fetch-ahead buffer (KafkaConfig.FetchBufferBytes) follows
// INFLIGHT_BYTES (aggregate.FetchAheadBytes).
func (c *config) kafkaConfig() stream.KafkaConfig {
	kc := c.Kafka.Config()
	c.KafkaTimeouts.ApplyTo(&kc)
	kc.Compression = c.KafkaCompression
	if b := aggregate.FetchAheadBytes(int64(c.InflightBytes)); b > 0 {
		kc.FetchBufferBytes = b
	}
	return kc
}
