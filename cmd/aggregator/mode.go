package main

import (
	"errors"
	"flag"
	"fmt"
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

// Which options the embedded demo reads is declared with each option
// (options.Aggregator's demo tag): demo:"true" for its own, the HTTP
// server's and the query API's, logging, the processor's model and the
// consumer group's session timeout and heartbeat; demo:"tuning" for the
// other Kafka timeouts, options of service mode that the demo's
// in-process consumer group also reads, accepted with an explicit --demo
// but never enough to guess the demo. Every other option belongs to
// service mode (Kafka, Redis, the store, topics, group and shutdown
// behaviour) or to filter mode (its inputs and outputs), which the demo
// would ignore: given without KAFKA_BROKERS or IN, they are an error,
// never the demo.
const (
	demoReads  = "true"
	demoTuning = "tuning"
)

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
//     options tagged demo:"tuning"), or nothing given at all but the
//     demo's own options (demo:"true"), as `go run ./cmd/aggregator`;
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
		if demo := o.Tag.Get("demo"); demo != demoReads {
			foreign = append(foreign, o.Env)
			if demo != demoTuning {
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
