package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/stream"
)

// Reasons used by ingest itself (the parsers' reasons are in package parse).
const (
	ReasonTooLong  = "too-long"  // a line longer than MaxLineBytes
	ReasonTooLarge = "too-large" // an input beyond MaxDecompressedBytes, or a WARC record beyond MaxRecordBytes
	ReasonCorrupt  = "corrupt"   // compressed input that does not decompress (bad or truncated gzip)
	// ReasonUnencodable: an observation JSON cannot hold (a time outside
	// years 0-9999, a non-finite number); records.Observation.Validate
	// rejects the same, so a parser that validates never produces one.
	ReasonUnencodable = "unencodable"
)

// MaxMessageBytes caps one encoded observation (key and value); a larger
// one is dead-lettered with reason "too-large" instead of being written,
// so that no input can make a Kafka produce fail (the sink's default
// message cap is 1 MiB).
const (
	MaxMessageBytes = 256 << 10
)

// ErrInput is wrapped by Run's error when some inputs could not be opened or
// read to their end; the others were processed.
var ErrInput = errors.New("ingest: some inputs failed")

// Summary reports what one Run did, per input.
type Summary struct {
	Inputs []InputSummary
	// Interrupted is true when the context was cancelled before every input
	// was read (after a clean drain).
	Interrupted bool
	// Written counts the observations the sink acknowledged (Observations,
	// per input, counts those produced), and OutputRejected the messages it
	// refused permanently, each replaced by a dead letter (reason
	// output_rejected), as counted by the DeliverySink Run wrote through
	// (0 when Run was given a SortingSink: ask the DeliverySink under it).
	Written, OutputRejected int64
}

// InputSummary counts one input's lines (or WARC records).
type InputSummary struct {
	Name         string
	Lines        int64
	Observations int64
	Skipped      map[string]int64
	Rejects      map[string]int64
	// Err is the input-level failure, if any ("" when read to its end).
	Err string
	// Format is the format the input was read as: Config.Format, or with
	// FormatAuto the format detected (FormatUnknown when no format accepts
	// it, "" when it had no line to detect it from).
	Format string
}

// Totals sums the summary over inputs.
func (s Summary) Totals() InputSummary {
	t := InputSummary{Name: "total", Skipped: map[string]int64{}, Rejects: map[string]int64{}}
	for _, in := range s.Inputs {
		t.Lines += in.Lines
		t.Observations += in.Observations
		for k, v := range in.Skipped {
			t.Skipped[k] += v
		}
		for k, v := range in.Rejects {
			t.Rejects[k] += v
		}
	}
	return t
}

type runner struct {
	cfg  Config
	sink stream.Sink
	// ds is the DeliverySink that sink is or wraps (nil for a
	// SortingSink), and w0, r0 its counts at the start
	ds     *DeliverySink
	w0, r0 int64
	log    *slog.Logger
	m      *metrics
	cp     *checkpoint
	files  registry // follow mode: the files being read, by identity
	lines  atomic.Int64
	obs    atomic.Int64
	rejs   atomic.Int64
	format string
	// writeCtx is the context of sink writes: cancelled DrainTimeout after
	// Run's context.
	writeCtx context.Context
	stop     func()
}

// Run reads every input of cfg and writes its observations and dead letters
// to sink. It returns when every input is read (or, in follow mode, when ctx
// is cancelled). On cancellation it stops between lines, writes the pending
// batch within DrainTimeout, saves the checkpoint and returns a nil error
// with Summary.Interrupted set. Run writes through a DeliverySink (sink, or
// one wrapping it unless it is a SortingSink): a failing write is retried
// with backoff (in follow mode until it succeeds or ctx ends; in a one-shot
// run for WriteRetryTimeout), a message refused permanently is replaced by
// a dead letter; a write that still fails stops Run with its error (the
// checkpoint keeps the last acknowledged position). Inputs that
// cannot be opened or read are logged, reported in the summary and, at the
// end, in an error wrapping ErrInput.
//
// logger nil discards logs; reg nil registers nothing. Run does not close
// sink.
//
// Where the steps live: this file starts the workers and reports progress;
// input.go is a worker reading one input (open, decompress, follow, split
// lines, parse); output.go is what becomes of a parsed line (observation
// or dead letter, batches written in order, acknowledged, checkpointed).
func Run(ctx context.Context, cfg Config, sink stream.Sink, logger *slog.Logger, reg prometheus.Registerer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := cfg.WithDefaults()
	inputs, err := expandPaths(c.Paths)
	if err != nil {
		return Summary{}, err
	}
	cp, err := loadCheckpoint(c.CheckpointPath, c.Format)
	if err != nil {
		return Summary{}, err
	}
	r := newRunner(ctx, c, sink, logger, reg, cp)
	defer r.stop()

	stopProgress := r.progress(ctx)
	defer stopProgress()

	sum := Summary{Inputs: make([]InputSummary, len(inputs))}
	var fatal error
	if c.Follow {
		sum.Inputs = sum.Inputs[:0]
		fatal = r.followAll(ctx, inputs, &sum)
	} else {
		w, err := r.newWorker()
		if err != nil {
			return Summary{}, err
		}
		for i, in := range inputs {
			if ctx.Err() != nil {
				sum.Inputs = sum.Inputs[:i]
				break
			}
			sum.Inputs[i], err = w.input(ctx, in)
			if err != nil {
				sum.Inputs = sum.Inputs[:i+1]
				fatal = err
				break
			}
		}
	}
	sum.Interrupted = ctx.Err() != nil
	r.delivered(&sum)
	// Whatever happened, record every acknowledged position.
	if err := r.saveCheckpoint(true); err != nil && fatal == nil {
		fatal = err
	}
	if fatal != nil {
		return sum, fatal
	}
	var failed []string
	for _, in := range sum.Inputs {
		if in.Err != "" {
			failed = append(failed, in.Name+": "+in.Err)
		}
	}
	if len(failed) > 0 {
		return sum, fmt.Errorf("%w: %s", ErrInput, strings.Join(failed, "; "))
	}
	return sum, nil
}

func newRunner(ctx context.Context, c Config, sink stream.Sink, logger *slog.Logger, reg prometheus.Registerer, cp *checkpoint) *runner {
	r := &runner{cfg: c, sink: sink, log: logger, m: newMetrics(reg, c.Format), cp: cp, format: c.Format}
	switch s := sink.(type) {
	case *DeliverySink:
		r.ds = s
	case *SortingSink:
	default:
		r.ds = newDeliverySink(sink, c, logger, r.m)
		r.sink = r.ds
	}
	if r.ds != nil {
		r.w0, r.r0 = r.ds.Written(), r.ds.Rejected()
	}
	// Writes outlive a cancellation by DrainTimeout, so that the batches in
	// hand are delivered and checkpointed on SIGTERM.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	r.writeCtx = wctx
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(c.DrainTimeout, wcancel)
		<-wctx.Done()
		t.Stop()
	})
	r.stop = func() {
		stopDrain()
		wcancel()
	}
	return r
}

// delivered fills in the counts of sum that the DeliverySink keeps.
func (r *runner) delivered(sum *Summary) {
	if r.ds != nil {
		sum.Written, sum.OutputRejected = r.ds.Written()-r.w0, r.ds.Rejected()-r.r0
	}
}

// progress logs a progress line every ProgressInterval in which lines
// were read, until stopped.
func (r *runner) progress(ctx context.Context) (stop func()) {
	if r.cfg.ProgressInterval < 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.cfg.ProgressInterval)
		defer t.Stop()
		start := time.Now()
		lastT, lastN := start, int64(0)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				// Nothing read since the last tick (a followed file
				// idle, or the sorted writes after the reading): no
				// line, not one every ProgressInterval saying 0/s.
				if n := r.lines.Load(); n != lastN {
					r.log.Info("ingest progress", "format", r.format, "lines", n,
						"lines_per_s", math.Round(float64(n-lastN)/now.Sub(lastT).Seconds()),
						"observations", r.obs.Load(), "rejects", r.rejs.Load(),
						"elapsed_s", now.Sub(start).Seconds())
					lastN = n
				}
				lastT = now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Inputs returns the inputs that Run reads for paths: files, and the
// files of directories and globs (names starting with "." passed over), in
// order; "-" is stdin. A path that leads to no input (a glob that matches
// nothing, a directory that holds no file) is an error wrapping ErrConfig,
// as Run finds it before reading anything: a command checks its paths with
// Inputs to report them with its other configuration errors. A file that
// does not exist is an input, whose failure Run reports when it reads it.
func Inputs(paths []string) ([]string, error) { return expandPaths(paths) }

// expandPaths turns paths, directories and globs into a list of inputs.
func expandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		before := len(out)
		matches := []string{p}
		glob := strings.ContainsAny(p, "*?[")
		if glob {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, fmt.Errorf("%w: Paths: bad glob %q: %v", ErrConfig, p, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%w: Paths: glob %q matches nothing", ErrConfig, p)
			}
			matches = m
		}
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil {
				// Reported as an input failure when it is read.
				out = append(out, m)
				continue
			}
			if !fi.IsDir() {
				out = append(out, m)
				continue
			}
			var files []string
			err = filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
					files = append(files, path)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("ingest: walk %s: %w", m, err)
			}
			sort.Strings(files)
			out = append(out, files...)
		}
		if len(out) == before {
			if glob {
				return nil, fmt.Errorf("%w: Paths: glob %q matches only directories that hold no file", ErrConfig, p)
			}
			return nil, fmt.Errorf("%w: Paths: directory %q holds no file (names starting with . are passed over)", ErrConfig, p)
		}
	}
	// Each file is read once, even when named twice.
	seen := map[string]bool{}
	dedup := out[:0]
	for _, p := range out {
		k := p
		if a, err := filepath.Abs(p); err == nil && p != "-" {
			k = a
		}
		if !seen[k] {
			seen[k] = true
			dedup = append(dedup, p)
		}
	}
	return dedup, nil
}
