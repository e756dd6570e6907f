package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// sampleLines is how many leading lines decide whether the filter input is
// observations at all.
const sampleLines = 20

// errNothingUsable is wrapped by the filter mode's error when the run could
// use nothing (every line rejected, or no object got a rate).
var errNothingUsable = errors.New("nothing could be used")

// inputStats counts the filter input before the processor sees it.
type inputStats struct {
	lines, blank, rejected int64
	// tooLong counts the lines longer than maxInputLine (dead letters).
	tooLong int64
	// corrupt is 1 when a compressed input broke off (truncated or
	// corrupt gzip): the rest of it was abandoned.
	corrupt int64
	sorted  bool
	runs    int
}

// checkObservations reads the first lines of in and fails with a clear
// message when none of them is an observation (a raw log given to the
// aggregator instead of to ingest), naming the formats whose parser accepts
// them. It returns a reader of the whole input. When the first observation's
// object is not a canonical URL (profile: URL_PROFILE, as ingest makes and
// the query API looks up), it logs a warning: the aggregator uses objects
// as given, so hand-made observations belong through ingest --format=jsonl.
func checkObservations(in io.Reader, name, profile string, logger *slog.Logger) (io.Reader, error) {
	br := bufio.NewReaderSize(in, 1<<20)
	var head bytes.Buffer
	var sample [][]byte
	rest := io.MultiReader(&head, br)
	// Stop at the first observation: a live pipe with fewer than
	// sampleLines lines must not wait here for more input.
	for len(sample) < sampleLines {
		line, err := br.ReadBytes('\n')
		head.Write(line)
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if o, derr := records.DecodeObservation(t); derr == nil {
				if canon, _, err := parse.NewCanonicalizer(profile, -1).Canonical([]byte(o.Object)); err == nil && canon != o.Object {
					logger.Warn("aggregator: objects are used as given, and this one is not a canonical URL: "+
						"the same page written another way becomes another object, which the query API's url= cannot find; "+
						"pass hand-made observations through ingest --format=jsonl, which canonicalises them",
						"input", name, "object", o.Object, "canonical", canon)
				}
				return rest, nil
			}
			// The parsers are tried on the line as ingest reads it:
			// without the line ending, otherwise untouched.
			sample = append(sample, bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")))
		}
		if err != nil {
			break
		}
	}
	if len(sample) == 0 {
		return rest, nil
	}
	msg := fmt.Sprintf("%s is not observations: none of its first %d lines is a JSON observation (the output of ingest --out=-)", name, len(sample))
	cands := parse.Detect(sample, parse.Config{})
	if h := parse.Hint(cands); h != "" {
		f := "--format=" + cands[0].Format
		if cands[0].NeedsZone {
			f += " --zone=UTC"
		}
		msg += fmt.Sprintf(".\nIt looks like a log that ingest reads: %s.\nRun: ingest %s --out=- FILE | aggregator --in=- --store=memory --out=- --emit=final", h, f)
	} else if what := knownRecord(sample[0]); what != "" {
		msg += fmt.Sprintf(": these are %s", what)
	} else {
		_, err := records.DecodeObservation(sample[0])
		msg += fmt.Sprintf("; line 1: %v; and no ingest format accepts these lines", err)
	}
	return nil, fmt.Errorf("%w: %s", errNothingUsable, msg)
}

// knownRecord names the project's other JSON records (the aggregator's
// own outputs, dead letters) when line is one of them, else "".
func knownRecord(line []byte) string {
	var f map[string]json.RawMessage
	if json.Unmarshal(line, &f) != nil {
		return ""
	}
	has := func(k string) bool { _, ok := f[k]; return ok }
	switch {
	case has("stage") && has("reason"):
		return "dead letters (inputs that could not be used, with the reason)"
	case has("period_start") && has("accesses"):
		return "access reports (the aggregator's output)"
	case has("p_value") || has("objects_shifted"):
		return "alerts (the aggregator's output)"
	case has("as_of") && has("kind"):
		return "estimates (the aggregator's output)"
	}
	return ""
}

// sortInput reads every line of in, writes a dead letter (reason
// "decode", position name:line) for each line that is not an observation,
// and returns the observations sorted by event time (then object, then
// the line: the same order whatever the input order), as lines. Beyond
// memory bytes the sort spills sorted runs to dir.
func sortInput(in io.Reader, name string, memory int64, dir string, deadLetter func([]byte) error, st *inputStats) (io.Reader, func() error, error) {
	s := extsort.New(ingest.CompareSortRecords, memory, dir)
	lines := newBoundedLines(in, maxInputLine)
	var rec []byte
	for {
		line, tooLong, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("read %s (line %d): %w", name, st.lines+1, err)
		}
		st.lines++
		if len(bytes.TrimSpace(line)) == 0 && !tooLong {
			st.blank++
			continue
		}
		reason := "decode"
		var o records.Observation
		if tooLong {
			// As ingest: the line is dead-lettered, the run goes on.
			reason, err = ingest.ReasonTooLong, fmt.Errorf("line longer than %d bytes", maxInputLine)
		} else {
			o, err = records.DecodeObservation(line)
		}
		if err != nil {
			if tooLong {
				st.tooLong++
			} else {
				st.rejected++
			}
			dl := records.NewDeadLetter(time.Now(), "aggregator", "observations", fmt.Sprintf("%s:%d", name, st.lines), reason, err, line)
			v, _ := json.Marshal(dl)
			if err := deadLetter(v); err != nil {
				s.Close()
				return nil, nil, err
			}
			continue
		}
		rec = ingest.SortKey(rec[:0], &o, line)
		if err := s.Add(rec); err != nil {
			s.Close()
			return nil, nil, fmt.Errorf("sort the input by event time: %w (set %s_SORT_DIR (--sort-dir) to a directory with room, or %s_SORT_MEMORY (--sort-memory) higher)", err, envPrefix, envPrefix)
		}
	}
	st.sorted, st.runs = true, s.Runs()
	it := s.Sorted()
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 256<<10)
		for r, ok := it.Next(); ok; r, ok = it.Next() {
			bw.Write(ingest.SortRecordLine(r))
			if err := bw.WriteByte('\n'); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		if err := it.Err(); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(bw.Flush())
	}()
	return pr, func() error { pr.Close(); return s.Close() }, nil
}

// abandoned reports a compressed input that broke off (cut.broken): one
// dead letter with reason corrupt at the line it cut, a warning and the
// summary's count, as ingest reports it; the lines before it were used.
func abandoned(ctx context.Context, cut *cutReader, name string, sink stream.Sink, topic string, logger *slog.Logger, ist *inputStats) error {
	line, lost, err := cut.broken()
	if err == nil {
		return nil
	}
	logger.Warn("aggregator: abandoning the rest of an input", "input", name, "reason", ingest.ReasonCorrupt, "line", line, "err", err)
	ist.corrupt = 1
	dl := records.NewDeadLetter(time.Now(), "aggregator", "observations", fmt.Sprintf("%s:%d", name, line), ingest.ReasonCorrupt,
		fmt.Errorf("input abandoned: %w (the compressed stream is truncated or corrupt; %d bytes of line %d were read before it broke off)", err, lost, line), nil)
	v, _ := json.Marshal(dl)
	return sink.Write(ctx, stream.Message{Topic: topic, Value: v})
}

// summary is the end-of-run report of the filter mode, printed on stderr.
type summary struct {
	in       inputStats
	st       aggregate.Stats
	final    bool
	lateTo   string
	alertsTo string // the alerts' output ("" not written)
	sortNote string
	// minIntervals is the intervals an object needs for a best estimate
	// (estimators.Config.MinIntervals).
	minIntervals int
}

// write prints the summary, one screen.
func (s summary) write(w io.Writer) {
	p := func(label string, n int64, note string) {
		if note != "" {
			fmt.Fprintf(w, "  %-22s %10d   %s\n", label, n, note)
		} else {
			fmt.Fprintf(w, "  %-22s %10d\n", label, n)
		}
	}
	fmt.Fprintln(w, "aggregator summary:")
	lines := s.in.lines
	if !s.in.sorted {
		lines = s.st.Messages
	}
	order := "applied in input order through the reorder buffer"
	if s.in.sorted {
		order = "sorted by event time"
		if s.in.runs > 0 {
			order += fmt.Sprintf(" (%d runs spilled to disk)", s.in.runs)
		}
	}
	p("lines read", lines, order)
	p("observations", s.st.Observations, "")
	p("applied", s.st.Applied, "")
	reorderNote := "arrived out of event-time order, applied in order"
	if s.st.AppliedAtLatest > 0 {
		reorderNote = fmt.Sprintf("arrived out of event-time order: %d applied at their object's latest time (older than it), the rest in order",
			s.st.AppliedAtLatest)
	}
	p("reordered", s.st.Reordered, reorderNote)
	p("late", s.st.Late, "beyond the allowed lateness; written to "+s.lateTo)
	p("duplicates", s.st.Duplicates, "delivered again (same source position)")
	p("no information", s.st.NoInformation, "visits saying nothing about change (failed fetch, error page or redirect, no digest or Last-Modified,"+
		" or applied at a later time without a change flag)")
	p("rejected", s.rejected(), s.rejectedNote())
	if u := s.st.SitemapUse; u[1]+u[2]+u[3] > 0 {
		p("sitemap lastmods", u[1]+u[2]+u[3], fmt.Sprintf("%d evidence, %d checks only (crawled URLs), %d of untrusted sites; checks against visits: %d agree, %d disagree",
			u[aggregate.SitemapEvidence], u[aggregate.SitemapCrawled], u[aggregate.SitemapUntrusted], s.st.SitemapAgree, s.st.SitemapDisagree))
	}
	if s.final {
		p("objects", s.st.FinalObjects, "")
		// The three kinds of objects add up to the objects; each is said
		// in the words of the estimates' JSON (rate_per_s).
		p("objects with a rate", s.st.FinalWithRate, "a best change or access rate above 0 (rate_per_s > 0)")
		p("objects rated 0", s.st.FinalZeroRate, "informative visits but no change seen (rate_per_s 0)")
		p("objects without a rate", s.st.FinalObjects-s.st.FinalWithRate-s.st.FinalZeroRate,
			fmt.Sprintf("fewer than %d intervals (informative visits after the first, or accesses after the first): "+
				"each estimator's value, no best one (no rate_per_s)", s.minIntervals))
		p("objects gone", s.st.FinalGone, "their latest visits answered 404 or 410: published with gone, without a rate")
	} else {
		p("new objects", s.st.Objects, "")
		p("estimates published", s.st.ChangeEstimates+s.st.AccessEstimates, "")
		p("estimates with a rate", s.st.RatedEstimates, "")
	}
	p("alerts", s.st.Alerts, s.alertsNote())
}

// alertsNote says where the alerts went and what became of the confirmed
// rate shifts and silences that did not become alerts.
func (s summary) alertsNote() string {
	where := "not written (set " + opt("ALERTS_OUT") + ")"
	if s.alertsTo != "" {
		where = "written to " + s.alertsTo
	}
	note := fmt.Sprintf("%s: %d object, %d site alerts", where, s.st.Alerts-s.st.SiteAlerts, s.st.SiteAlerts)
	var total int64
	for _, n := range s.st.Candidates {
		total += n
	}
	if total == 0 {
		return note + "; no rate shift confirmed"
	}
	var held []string
	for _, r := range []struct{ outcome, what string }{
		{"learning", "in a learning period"}, {"mixed_clock", "across a profile's start"},
		{"small_effect", "below the least ratio or events"}, {"not_established", "drops against a rate not established"},
		{"not_discovery", "not discoveries at the FDR"}, {"overflow", "over the pending bound"},
	} {
		if n := s.st.Candidates[r.outcome]; n > 0 {
			held = append(held, fmt.Sprintf("%d %s", n, r.what))
		}
	}
	note += fmt.Sprintf("; %d shifts and silences confirmed", total)
	if len(held) > 0 {
		note += ", held back: " + strings.Join(held, ", ")
	}
	return note
}

// rejected is the input lines not used as observations: undecodable,
// ahead of the clock (MAX_FUTURE) or the rest of a corrupt input.
func (s summary) rejected() int64 {
	return s.in.rejected + s.in.tooLong + s.in.corrupt + s.st.Rejected + s.st.Future
}

// rejectedNote gives the rejected lines by reason (all dead letters).
func (s summary) rejectedNote() string {
	var parts []string
	for _, r := range []struct {
		reason string
		n      int64
	}{{"decode", s.in.rejected + s.st.Rejected}, {ingest.ReasonTooLong, s.in.tooLong}, {aggregate.ReasonFuture, s.st.Future}, {ingest.ReasonCorrupt, s.in.corrupt}} {
		if r.n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", r.reason, r.n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " (dead letters)"
}

// verdict returns an error wrapping errNothingUsable when the run used
// nothing: every line rejected, or observations read and no rate.
func (s summary) verdict() error {
	rej := s.rejected()
	switch {
	case s.st.Observations == 0 && rej == 0:
		return fmt.Errorf("%w: the input had no observations (empty)", errNothingUsable)
	case s.st.Observations == 0 && rej > 0:
		return fmt.Errorf("%w: every one of the %d input lines was rejected (%s)", errNothingUsable, rej, s.rejectedNote())
	case s.st.Observations > 0 && s.final && s.st.FinalWithRate+s.st.FinalZeroRate == 0,
		s.st.Observations > 0 && !s.final && s.st.RatedEstimates == 0:
		why := "too few informative visits or accesses per object"
		if s.st.Late > 0 {
			why += fmt.Sprintf("; %d observations were late, older than their object's latest by more than the allowed lateness %s: "+
				"an input far from event-time order needs sorting, %s true (the default)", s.st.Late, opt("LATE_TOLERANCE"), opt("SORT"))
		}
		return fmt.Errorf("%w: %d observations were read but no object got a rate (%s)", errNothingUsable, s.st.Observations, why)
	}
	return nil
}

// usage is -h: the modes, an example each, then every option.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `aggregator turns observations into change-rate and access-rate estimates.

usage:
  aggregator --in=FILE|- [--out=FILE|-] [--emit=final] [options]   filter mode: JSON lines in, estimates out
  aggregator --kafka-brokers=HOST:PORT [options]                    service mode: Kafka in and out, Redis state
  aggregator                                                        embedded demo (in-process Kafka, sample logs)

examples:
  ingest --format=heritrix --out=- crawl.log | aggregator --in=- --store=memory --out=- --emit=final
  CHANGERATE_KAFKA_BROKERS=kafka:9092 CHANGERATE_REDIS_ADDRS=redis:6379 aggregator

Filter mode sorts its input by event time (spilling to disk beyond --sort-memory), so the estimates do not
depend on input order; at the end it prints a summary on stderr and exits 1 when nothing could be used.
Every option is also an environment variable CHANGERATE_<NAME>; flags win.

options:
`)
	fs.PrintDefaults()
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
	opts := []aggregate.Option{aggregate.WithLocalInput()}
	if httpOn || cfg.PlanOut != "" { // the plan is the query API's, on its index
		q, err := newQuery(cfg, store, sink, query.SinglePartition{Topic: cfg.Topics.Observations}, logger)
		if err != nil {
			return err
		}
		api, sink = q.srv, q.sink
		opts = append(opts, aggregate.WithEstimateIndex(q.idx))
	}
	proc, err := aggregate.NewProcessor(cfg.processorConfig(), store, sink, logger, reg, time.Now, opts...)
	if err != nil {
		return err
	}
	var ist inputStats
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	if httpOn {
		srv := newHTTPServer(cfg.HTTP.Addr, cfg.maxHeaderBytes(), reg, proc, logger, api.Register)
		g.Go(func() error { return srv.run(gctx) })
	}
	g.Go(func() error {
		defer cancel() // the input ended: stop the HTTP server too
		in, cut, err := gunzipInput(in, name)
		if err != nil {
			return err
		}
		in, err = checkObservations(in, name, cfg.URLProfile, logger)
		if err != nil {
			return err
		}
		if cfg.Sort {
			sorted, closeSort, err := sortInput(in, name, int64(cfg.ExternalSort.Memory), cfg.ExternalSort.Dir, func(dl []byte) error {
				return sink.Write(gctx, stream.Message{Topic: cfg.Topics.DeadLetter, Value: dl})
			}, &ist)
			if err != nil {
				return err
			}
			defer closeSort()
			in = sorted
		}
		if err := stream.NewReaderSource(cfg.Topics.Observations, in, 0).Run(gctx, proc.Handle); err != nil {
			return err
		}
		return abandoned(gctx, cut, name, sink, cfg.Topics.DeadLetter, logger, &ist)
	})
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Debug("filter done", "committed", proc.Committed())
	lateTo := "stderr"
	if cfg.LateOut != "-" {
		lateTo = cfg.LateOut
	}
	alertsTo := cfg.AlertsOut
	if alertsTo == "-" {
		alertsTo = "stdout"
	}
	sum := summary{in: ist, st: proc.Stats(), final: cfg.Emit == aggregate.EmitFinal, lateTo: lateTo, alertsTo: alertsTo,
		minIntervals: cfg.processorConfig().Model.Estimators.WithDefaults().MinIntervals}
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
	if err := sum.verdict(); err != nil {
		return err
	}
	if cfg.PlanOut != "" {
		return writePlan(api, cfg, stdout)
	}
	return nil
}
