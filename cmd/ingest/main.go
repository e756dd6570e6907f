// Command ingest reads proxy, server and crawler logs (files, directories,
// globs or stdin; plain or gzip), turns every line into an observation of
// one object (a canonical URL) and writes the observations to Kafka (topic
// "observations", key = object) or, with --out=-, as JSON lines to stdout.
//
//	go run ./cmd/ingest --format=squid|clf|storelog|heritrix|heritrix-json|warc|jsonl|snapshot --out=- FILE...
//	go run ./cmd/ingest --format=heritrix-json --in-topic=heritrix-crawl-log --out=kafka --kafka-brokers=HOST:PORT
//
// Lines that cannot be parsed go, with the reason, to the dead-letter
// output: topic "dead-letter" in Kafka mode; in --out=- mode the file named
// by --dead-letter, default "-" = stderr (one JSON record per line, beside
// the log lines, which are text). Use --dead-letter=/dev/null to drop them
// knowingly, or --dead-letter=FILE to keep them apart.
//
// Configuration: every option has an environment variable
// (CHANGERATE_<NAME>, see -help; the Kafka variables CHANGERATE_KAFKA_* are
// named as for the aggregator); flags win over the environment. Invalid configuration fails at
// start with a message naming the variable. SIGTERM or SIGINT stop reading
// between lines, write the pending batch, save the checkpoint and exit 0
// within --shutdown-timeout.
//
// Exit codes: 0 success (also after a clean drain on SIGTERM), 1 runtime
// failure (sink failed, some inputs unreadable), 2 invalid configuration.
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
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/buildinfo"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// envPrefix prefixes every environment variable, as for the aggregator
// (the options of internal/options have the same names in both commands).
const envPrefix = options.Prefix

// clientID is ingest's default Kafka client id and consumer group.
const clientID = "changerate-ingest"

// config is the command's settings: its options (options.Ingest).
type config struct {
	options.Ingest
}

// newConfig is the configuration before Load, holding the defaults of the
// options without a default tag: the ingest library's (cliconfig.Defaults,
// by the options' to tags) and the shared option groups' (see
// internal/options).
func newConfig() config {
	c := config{options.DefaultIngest(clientID)}
	c.CheckpointInterval = ingest.DefaultCheckpointInterval // the library's 0 is "default", the option's "every batch"
	def := ingest.Config{}.WithDefaults()
	cliconfig.Defaults(&c.Ingest, cliconfig.Targets{"ingest": &def})
	return c
}

// kafkaConfig is the Kafka configuration of the sink and of --in-topic's
// source.
func (o config) kafkaConfig() stream.KafkaConfig {
	kc := o.Kafka.Config()
	o.KafkaProducer.ApplyTo(&kc)
	kc.BatchSize = o.BatchSize
	return kc
}

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func cfgErr(format string, args ...any) error { return &configError{fmt.Sprintf(format, args...)} }

// newRegistry is the registry that /metrics serves: the process's and
// ingest's metrics, the latter with the series of format at 0 from the
// start (registered before the HTTP server answers, not when Run starts).
// The Kafka sink and source add theirs.
func newRegistry(format string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.NewCollector("ingest"))
	ingest.RegisterMetrics(reg, format)
	return reg
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, kcfg, paths, err := configure(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errVersion) {
		fmt.Fprintln(stdout, buildinfo.Get().String("ingest"))
		return 0
	}
	if errors.Is(err, errConfigReference) {
		ref := newConfig()
		if err := cliconfig.WriteReference(stdout, envPrefix, &ref); err != nil {
			fmt.Fprintf(stderr, "ingest: %v\n", err)
			return 1
		}
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ingest: invalid configuration: %v\n", err)
		return 2
	}
	logger, err := newLogger(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: invalid configuration: %v\n", err)
		return 2
	}
	options.WarnUnknown(logger, os.Environ())
	if o.InTopic != "" {
		paths = []string{"-"} // unused by RunSource; satisfies validation
	}
	if o.Format == ingest.FormatAuto && o.InTopic == "" {
		// Each input's format is detected when Run reads it; what can be
		// found wrong with them is found now.
		if err := checkAuto(o, paths); err != nil {
			fmt.Fprintf(stderr, "ingest: invalid configuration: %v\n", err)
			return 2
		}
	}
	cfg, err := ingestConfig(o, paths)
	if err != nil {
		fmt.Fprintf(stderr, "ingest: invalid configuration: %v\n", err)
		return 2
	}

	if o.InTopic == "" {
		// Said before the dead letters of the lines it rejects.
		if msg := formatMismatch(cfg); msg != "" {
			fmt.Fprintf(stderr, "ingest: warning: %s\n", msg)
		}
	}

	reg := newRegistry(cfg.Format)

	var sink stream.Sink
	var closeDL func() error = func() error { return nil }
	var dlCap *cappedLines
	switch o.Out {
	case "-":
		dlCap = &cappedLines{w: stderr, max: deadLettersShown}
		var dl io.Writer = dlCap
		if o.DeadLetter != "-" {
			dlCap = nil
			f, err := os.OpenFile(o.DeadLetter, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				fmt.Fprintf(stderr, "ingest: invalid configuration: %s_DEAD_LETTER (--dead-letter): %v\n", envPrefix, err)
				return 2
			}
			dl, closeDL = f, f.Close
		}
		sink = stream.NewWriterSink(map[string]io.Writer{cfg.ObservationsTopic: stdout, cfg.DeadLetterTopic: dl}, nil)
	case "kafka":
		ks, err := stream.NewKafkaSink(kcfg, logger, reg)
		if err != nil {
			fmt.Fprintf(stderr, "ingest: invalid configuration: %s\n", options.KafkaError(err))
			return 2
		}
		ks.DeclareTopics(cfg.ObservationsTopic, cfg.DeadLetterTopic)
		sink = ks
	}

	if o.BaseURL == "" {
		sink = &localhostNote{Sink: sink, topic: cfg.ObservationsTopic, w: stderr}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if o.HTTP.Addr != "" {
		ln, err := o.HTTP.Listen()
		if err != nil {
			fmt.Fprintf(stderr, "ingest: invalid configuration: %v\n", err)
			return 2
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}

	// The shutdown bound: a read from stdin cannot be interrupted, so give
	// Run ShutdownTimeout after the signal and then exit anyway.
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(o.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			logger.Error("ingest: shutdown timeout exceeded; exiting without a clean drain")
			os.Exit(1)
		}
	}()

	_ = stdin // Run reads os.Stdin for "-"
	// Every write goes through the DeliverySink: retried with backoff,
	// refused messages replaced by dead letters, acknowledged observations
	// counted for the summary.
	ds := ingest.NewDeliverySink(sink, cfg, logger, reg)
	var sorter *ingest.SortingSink
	if o.Order == "time" {
		sorter = ingest.NewSortingSink(ds, cfg.ObservationsTopic, int64(o.ExternalSort.Memory), o.ExternalSort.Dir, cfg.BatchSize)
		defer sorter.Close()
	}
	var sum ingest.Summary
	if o.InTopic != "" {
		src, serr := stream.NewKafkaSource(kcfg, []string{o.InTopic}, logger, reg)
		if serr != nil {
			fmt.Fprintf(stderr, "ingest: invalid configuration: %s\n", options.KafkaError(serr))
			return 2
		}
		defer src.Close()
		sum, err = ingest.RunSource(ctx, cfg, src, ds, logger, reg)
	} else if sorter != nil {
		sum, err = ingest.Run(ctx, cfg, sorter, logger, reg)
		if ctx.Err() == nil && (err == nil || errors.Is(err, ingest.ErrInput)) {
			if ferr := sorter.Flush(ctx); ferr != nil {
				err = ferr
			}
		}
	} else {
		sum, err = ingest.Run(ctx, cfg, ds, logger, reg)
	}
	cerr := sink.Close()
	closeDL()
	if o.Report {
		writeReport(stderr, sum)
	}
	tot := sum.Totals()
	logger.Debug("ingest done", "inputs", len(sum.Inputs), "lines", tot.Lines, "observations", tot.Observations,
		"rejects", sumMap(tot.Rejects), "skipped", sumMap(tot.Skipped), "interrupted", sum.Interrupted)
	sum.Written, sum.OutputRejected = ds.Written(), ds.Rejected() // the sorter's writes too
	var dlHidden int64
	if dlCap != nil {
		dlHidden = dlCap.hidden
	}
	writeSummary(stderr, o, cfg, sum, sorter, dlHidden)
	if err != nil {
		if errors.Is(err, ingest.ErrInput) {
			logger.Error("ingest failed", "err", err)
		} else {
			// Said once, with the remedy (it was also logged before).
			// The summary counts what was read, not what was written.
			hint := ""
			if o.Out == "kafka" && strings.Contains(err.Error(), "kafka") {
				hint = fmt.Sprintf(" (Kafka brokers %s: %s_KAFKA_BROKERS (--kafka-brokers))", strings.Join(o.Kafka.Brokers, ","), envPrefix)
			} else if o.Checkpoint != "" && strings.Contains(err.Error(), "checkpoint") {
				hint = fmt.Sprintf(" (%s_CHECKPOINT (--checkpoint))", envPrefix)
			}
			fmt.Fprintf(stderr, "ingest: failed: %v%s; %d of the %d observations produced were written (acknowledged), the others may not all have been written\n", err, hint, sum.Written, tot.Observations)
		}
		return 1
	}
	if cerr != nil {
		logger.Error("ingest: closing the sink failed", "err", cerr)
		return 1
	}
	if msg := nothingUsable(sum, o, cfg); msg != "" {
		fmt.Fprintf(stderr, "ingest: nothing could be used: %s\n", msg)
		return 1
	}
	return 0
}

func sumMap(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func fmtMap(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	return b.String()
}

// writeReport prints one line per input and a total: lines read,
// observations produced, skipped and rejected lines by reason.
func writeReport(w io.Writer, sum ingest.Summary) {
	fmt.Fprintf(w, "%-60s %-13s %9s %9s  %-30s %s\n", "input", "format", "lines", "obs", "skipped", "rejects")
	for _, in := range append(sum.Inputs, sum.Totals()) {
		name := in.Name
		if in.Err != "" {
			name += " (FAILED: " + in.Err + ")"
		}
		f := in.Format
		if f == "" {
			f = "-"
		}
		fmt.Fprintf(w, "%-60s %-13s %9d %9d  %-30s %s\n", name, f, in.Lines, in.Observations, fmtMap(in.Skipped), fmtMap(in.Rejects))
	}
}

// configure reads the environment, then the flags (which win).
// errConfigReference asks run to print the configuration reference.
var errConfigReference = errors.New("config reference requested")

// errVersion asks run to print the version.
var errVersion = errors.New("version requested")

func configure(args []string, stderr io.Writer) (config, stream.KafkaConfig, []string, error) {
	o := newConfig()
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		for _, f := range parse.Formats() {
			fmt.Fprintf(fs.Output(), "  %-14s %s\n", f[0], f[1])
		}
		fmt.Fprintf(fs.Output(), "\noptions:\n")
		fs.PrintDefaults()
	}
	ref := fs.Bool("config-reference", false, "print the configuration reference as a Markdown table and exit")
	version := fs.Bool("version", false, "print the version and exit")
	rest, err := cliconfig.Load(envPrefix, &o, fs, args)
	if err != nil {
		return o, stream.KafkaConfig{}, nil, err
	}
	if *version {
		return o, stream.KafkaConfig{}, nil, errVersion
	}
	if *ref {
		return o, stream.KafkaConfig{}, nil, errConfigReference
	}
	k := o.kafkaConfig()
	paths := o.Paths
	if len(rest) > 0 {
		paths = rest
	}
	if o.Format == "" {
		return o, k, nil, cfgErr("%s_FORMAT (--format) is required: one of the formats -h lists, or auto", envPrefix)
	}
	streaming := o.Follow || o.InTopic != "" || o.Checkpoint != ""
	if err := errors.Join(cliconfig.Check(envPrefix, &o.Ingest), o.Topics.Validate(), o.ExternalSort.Validate()); err != nil {
		return o, k, nil, cfgErr("%v", err)
	}
	switch o.Order {
	case "":
		o.Order = "time"
		if streaming || capturesInOrder(o.Format, paths) {
			o.Order = "input"
		}
	case "time":
		if streaming {
			return o, k, nil, cfgErr("%s_ORDER (--order)=time holds every observation until the inputs end: it cannot go with %s_FOLLOW (--follow), %s_IN_TOPIC (--in-topic) or %s_CHECKPOINT (--checkpoint); use --order=input (the aggregator's reorder buffer puts streams in order)", envPrefix, envPrefix, envPrefix, envPrefix)
		}
	}
	kafkaErr := func(err error) error {
		return cfgErr("%s", options.KafkaError(err))
	}
	if o.Out == "kafka" {
		if err := k.Validate(); err != nil {
			return o, k, nil, kafkaErr(err)
		}
	}
	if o.InTopic != "" {
		if len(paths) > 0 {
			return o, k, nil, cfgErr("%s_IN_TOPIC (--in-topic) reads Kafka: give no FILE arguments or %s_PATHS", envPrefix, envPrefix)
		}
		if parse.IsRecordFormat(o.Format) {
			return o, k, nil, cfgErr("%s_FORMAT (--format) %s is not a line format; --in-topic needs one (heritrix-json, jsonl, ...)", envPrefix, o.Format)
		}
		if o.Format == ingest.FormatAuto {
			return o, k, nil, cfgErr("%s_FORMAT (--format)=auto detects the format of files; --in-topic needs the format of the topic's lines (heritrix-json, jsonl, ...)", envPrefix)
		}
		if err := k.Validate(); err != nil {
			return o, k, nil, kafkaErr(err)
		}
		return o, k, nil, nil
	}
	if len(paths) == 0 {
		return o, k, nil, cfgErr("no input: give FILE... arguments or %s_PATHS (use - for stdin)", envPrefix)
	}
	// A glob that matches nothing or an empty directory is found now, not
	// after a run that read nothing.
	if _, err := ingest.Inputs(paths); err != nil {
		msg := strings.TrimPrefix(err.Error(), ingest.ErrConfig.Error()+": Paths: ")
		return o, k, nil, cfgErr("FILE arguments or %s_PATHS (--paths): %s", envPrefix, msg)
	}
	return o, k, paths, nil
}

func newLogger(o config, w io.Writer) (*slog.Logger, error) {
	l, err := o.Log.Logger(w)
	if err != nil {
		return nil, cfgErr("%v", err)
	}
	return l, nil
}

// ingestConfig builds and validates the library config, naming the
// variable of any invalid value.
func ingestConfig(o config, paths []string) (ingest.Config, error) {
	var zone *time.Location
	if o.Zone != "" {
		z, err := time.LoadLocation(o.Zone)
		if err != nil {
			return ingest.Config{}, cfgErr("%s_ZONE (--zone): %v", envPrefix, err)
		}
		zone = z
	}
	cfg := ingest.Config{Paths: paths, Parse: parse.Config{Zone: zone, BaseURL: o.BaseURL},
		CheckpointInterval: checkpointInterval(o.CheckpointInterval)}
	cliconfig.Apply(&o.Ingest, cliconfig.Targets{"ingest": &cfg})
	known := o.Format == ingest.FormatAuto
	var names []string
	for _, f := range parse.Formats() {
		names = append(names, f[0])
		known = known || f[0] == o.Format
	}
	if !known {
		return cfg, cfgErr("%s_FORMAT (--format) %q is not a format: one of %s, or auto", envPrefix, o.Format, strings.Join(names, ", "))
	}
	if zone == nil && parse.NeedsZone(o.Format) {
		// Every line would be rejected (reason no-zone): refuse before
		// reading instead.
		return cfg, cfgErr("%s_FORMAT (--format) %s has times without a zone: give %s_ZONE (--zone), e.g. --zone=UTC for the WorldCup98 trace (GMT)", envPrefix, o.Format, envPrefix)
	}
	if err := (parse.Config{Profile: o.Profile}).Validate(); err != nil {
		return cfg, cfgErr("%s_PROFILE (--profile): %v", envPrefix, err)
	}
	if err := (parse.Config{BaseURL: o.BaseURL}).Validate(); err != nil {
		return cfg, cfgErr("%s_BASE_URL (--base-url): %v", envPrefix, err)
	}
	if err := (parse.Config{SquidLogformat: o.SquidLogformat}).Validate(); err != nil {
		return cfg, cfgErr("%s_SQUID_LOGFORMAT (--squid-logformat): %v", envPrefix, err)
	}
	if err := cfg.Validate(); err != nil {
		if strings.Contains(err.Error(), "Format") {
			return cfg, cfgErr("%s_FORMAT (--format): %v", envPrefix, err)
		}
		if strings.Contains(err.Error(), "CheckpointPath") {
			return cfg, cfgErr("%s_CHECKPOINT (--checkpoint) %s", envPrefix, strings.TrimPrefix(err.Error(), ingest.ErrConfig.Error()+": CheckpointPath "))
		}
		return cfg, cfgErr("%v", err)
	}
	return cfg, nil
}

// checkpointInterval maps the command's "0 = every batch" to the library's
// negative value (its zero means the default).
func checkpointInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
