package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
)

// The modes run chooses between.
const (
	modeFilter  = "filter"
	modeService = "service"
	modeDemo    = "demo"
)

// demoOptions are the options the embedded demo reads (names without the
// prefix): its own, the HTTP server's and the query API's, logging, and
// the processor's model. Every other option of the aggregator belongs to
// service mode (Kafka, Redis, the store, topics, group and shutdown
// behaviour) or to filter mode (its inputs and outputs), which the demo
// would ignore: given without KAFKA_BROKERS or IN, they are an error,
// never the demo.
var demoOptions = []string{
	"DEMO", "DEMO_PAGES", "DEMO_DAYS", "DEMO_EXIT",
	"HTTP_ADDR", "PPROF", "LOG_LEVEL", "LOG_FORMAT",
	"API_TOKEN", "API_TOKEN_FILE", "API_TIMEOUT", "API_MAX_REQUEST_BYTES", "API_INDEX_OBJECTS", "API_ALERTS",
	"URL_PROFILE", "MIN_REVISIT", "MAX_REVISIT", "PLAN_BUDGET", "PLAN_PERIOD",
	// The demo's in-process broker runs the consumer group with these.
	"KAFKA_SESSION_TIMEOUT", "KAFKA_HEARTBEAT",
	"PARTITIONS", "IDLE_TTL", "BATCH_SIZE", "CACHE_OBJECTS", "CACHE_BYTES", "INFLIGHT_BYTES", "LATE_TOLERANCE",
	"REPORT_PERIOD", "EMIT_INTERVAL", "P_STALE", "POOL_SITES", "POOL_PUBLISH", "MAX_FUTURE", "REORDER_WINDOW",
	"SEASONAL_LEARNING", "SEASONAL_MIN_EVENTS", "SEASONAL_DECAY",
	"ALERT_PERIOD", "ALERT_FDR", "ALERT_MIN_RATIO", "ALERT_MIN_EVENTS", "ALERT_SITE_OBJECTS", "ALERT_SITE_TOP", "OBJECT_RHYTHM",
}

// demoTuning are the other Kafka timeouts, options of service mode that
// the demo also reads (its in-process consumer group's): accepted with an
// explicit --demo, but, being service settings, never enough to guess the
// demo (the session timeout and heartbeat, which the tests set, are
// demoOptions).
var demoTuning = []string{
	"KAFKA_REBALANCE_TIMEOUT", "KAFKA_REQUEST_TIMEOUT",
	"KAFKA_FETCH_TIMEOUT_SLACK", "KAFKA_FETCH_LINGER", "KAFKA_FETCH_MIN_BYTES", "KAFKA_FETCH_MAX_BYTES",
	"KAFKA_JOIN_TIMEOUT", "KAFKA_ORPHAN_TIMEOUT", "KAFKA_FETCH_STALL_TIMEOUT",
}

// given lists the options set in the environment (lookup) or on the
// command line (fs, parsed), as variables with the prefix, in field order.
func given(cfg *config, fs *flag.FlagSet, lookup cliconfig.Lookup) []cliconfig.Option {
	flags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { flags[f.Name] = true })
	var out []cliconfig.Option
	for _, o := range cliconfig.Options(envPrefix, cfg) {
		if _, ok := lookup(o.Env); ok || flags[o.Flag] {
			out = append(out, o)
		}
	}
	return out
}

// chooseMode decides what the process runs, from the parsed configuration,
// the options given (given) and the unknown CHANGERATE_ variables of the
// environment (options.Unknown):
//
//   - filter with IN, service with KAFKA_BROKERS (not both: validate);
//   - the demo when asked for: DEMO=true (--demo, which also accepts the
//     Kafka timeouts of demoTuning), or nothing given at all but the
//     demo's own options (demoOptions), as `go run ./cmd/aggregator`;
//   - otherwise an error naming what was given: a process configured for
//     service mode that lost its brokers to a typo must not pretend, with
//     the fake demo data, to be the service.
//
// An unknown variable near an option's name (options.Closest) is an error
// in every mode: it is a misspelt option, whose value would be ignored.
// One far from every name is warned about by the caller in service and
// filter mode, but it keeps the demo from being guessed.
func chooseMode(cfg *config, set []cliconfig.Option, unknown []string) (string, error) {
	var problems []string
	for _, name := range unknown {
		if near, ok := options.Closest(name); ok {
			problems = append(problems, fmt.Sprintf("unknown variable %s: did you mean %s?", name, near))
		}
	}
	if len(problems) > 0 {
		return "", errors.New("config: " + strings.Join(problems, "; ") +
			" (a misspelt option would be ignored: fix or unset it; -h lists the options)")
	}
	var foreign, ignored []string // given options not the demo's own; those the demo does not read
	for _, o := range set {
		name := strings.TrimPrefix(o.Env, envPrefix+"_")
		if !slices.Contains(demoOptions, name) {
			foreign = append(foreign, o.Env)
			if !slices.Contains(demoTuning, name) {
				ignored = append(ignored, o.Env)
			}
		}
	}
	switch {
	case cfg.In != "":
		return modeFilter, nil
	case len(cfg.Kafka.Brokers) > 0 && !cfg.Demo:
		return modeService, nil
	case cfg.Demo && len(ignored) > 0:
		return "", fmt.Errorf("config: %s asks for the demo, which runs its own in-process Kafka broker and the in-memory store "+
			"and would ignore %s: unset them for the demo, or drop %[1]s for service mode (with %[3]s) or filter mode (with %[4]s)",
			options.Name("DEMO"), strings.Join(ignored, ", "), options.Name("KAFKA_BROKERS"), options.Name("IN"))
	case cfg.Demo:
		return modeDemo, nil
	case len(foreign) == 0 && len(unknown) == 0:
		return modeDemo, nil
	}
	var what []string
	if len(foreign) > 0 {
		what = append(what, "settings of service or filter mode given ("+strings.Join(foreign, ", ")+")")
	}
	if len(unknown) > 0 {
		what = append(what, "unknown variables set ("+strings.Join(unknown, ", ")+")")
	}
	return "", fmt.Errorf("config: %s, but no mode: service mode needs %s, filter mode %s; "+
		"the demo runs only when asked for, with %s or with no setting at all",
		strings.Join(what, " and "), options.Name("KAFKA_BROKERS"), options.Name("IN"), options.Name("DEMO"))
}
