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
//   - embedded demo: with --demo, or with no option at all but the demo's
//     own (mode.go; any other setting without KAFKA_BROKERS or IN is an
//     error, never the demo), it starts an in-process Kafka-protocol
//     broker and the in-memory store, feeds generated sample logs with known
//     change rates through the real ingest → Kafka → aggregator path, prints
//     the estimates and keeps serving HTTP until interrupted.
//
// Every option is an environment variable (prefix CHANGERATE_) and a flag;
// flags win. `aggregator -h` lists them.
//
// Files: main.go (run), mode.go (which mode), config.go (the options,
// declared in internal/options.Aggregator, mapped onto the libraries'
// configurations, and the rules between them), service.go, filter.go and demo.go
// (one mode each), http.go and query.go (the HTTP server and the query
// API's wiring), store.go (Redis).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/internal/buildinfo"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// go-redis logs through a package global: route it, once, to the
	// logger run configures (redislog.go).
	redis.SetLogger(&redisClientLog)
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

// newRegistry is the registry that /metrics serves, with the process's
// metrics; the store, the Kafka source and sink and the processor add
// theirs.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.NewCollector("aggregator"))
	return reg
}

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
	mode, err := chooseMode(&cfg, given(&cfg, fs, os.LookupEnv), options.Unknown(os.Environ()))
	if err != nil {
		return usageError{err}
	}
	logger, err := cfg.Log.Logger(stderr)
	if err != nil {
		return usageError{fmt.Errorf("config: %w", err)}
	}
	options.WarnUnknown(logger, os.Environ())
	redisClientLog.use(logger)
	reg := newRegistry()

	switch mode {
	case modeFilter:
		return runFilter(ctx, &cfg, stdin, stdout, stderr, logger, reg)
	case modeService:
		return runService(ctx, &cfg, logger, reg)
	default:
		return runDemo(ctx, &cfg, stdout, logger, reg)
	}
}
