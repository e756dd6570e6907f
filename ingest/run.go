package ingest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// Reasons used by ingest itself (the parsers' reasons are in package parse).
const (
	ReasonTooLong  = "too-long"  // a line longer than MaxLineBytes
	ReasonTooLarge = "too-large" // an input beyond MaxDecompressedBytes, or a WARC record beyond MaxRecordBytes
	ReasonCorrupt  = "corrupt"   // compressed input that does not decompress (bad or truncated gzip)
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
	cfg    Config
	sink   stream.Sink
	log    *slog.Logger
	m      *metrics
	cp     *checkpoint
	lines  atomic.Int64
	obs    atomic.Int64
	rejs   atomic.Int64
	format string
	// writeCtx is the context of sink writes: cancelled DrainTimeout after
	// Run's context.
	writeCtx context.Context
	stop     func()
	// per-format metric children, resolved once
	mLines, mObs, mBytes prometheus.Counter
}

// Run reads every input of cfg and writes its observations and dead letters
// to sink. It returns when every input is read (or, in follow mode, when ctx
// is cancelled). On cancellation it stops between lines, writes the pending
// batch within DrainTimeout, saves the checkpoint and returns a nil error
// with Summary.Interrupted set. A failing Sink.Write stops Run with that
// error (the checkpoint keeps the last acknowledged position). Inputs that
// cannot be opened or read are logged, reported in the summary and, at the
// end, in an error wrapping ErrInput.
//
// logger nil discards logs; reg nil registers nothing. Run does not close
// sink.
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
	if c.Follow && len(inputs) > 1 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		cctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		for i, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := r.newWorker()
				if err == nil {
					sum.Inputs[i], err = w.input(cctx, in)
				}
				if err != nil {
					mu.Lock()
					if fatal == nil {
						fatal = err
					}
					mu.Unlock()
					cancel(err)
				}
			}()
		}
		wg.Wait()
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
	r := &runner{cfg: c, sink: sink, log: logger, m: newMetrics(reg), cp: cp, format: c.Format}
	r.mLines = r.m.lines.WithLabelValues(c.Format)
	r.mObs = r.m.observations.WithLabelValues(c.Format)
	r.mBytes = r.m.bytes.WithLabelValues(c.Format)
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

// progress logs a progress line every ProgressInterval until stopped.
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
				n := r.lines.Load()
				r.log.Info("ingest progress", "format", r.format, "lines", n,
					"lines_per_s", math.Round(float64(n-lastN)/now.Sub(lastT).Seconds()),
					"observations", r.obs.Load(), "rejects", r.rejs.Load(),
					"elapsed_s", now.Sub(start).Seconds())
				lastT, lastN = now, n
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// expandPaths turns paths, directories and globs into a list of inputs.
func expandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		matches := []string{p}
		if strings.ContainsAny(p, "*?[") {
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

// worker reads inputs one at a time and owns one parser. It fills one
// batch while the previous one is being written (at most one write in
// flight, so batches reach the sink in order and messages of one key keep
// their order).
type worker struct {
	r   *runner
	p   parse.Parser
	obs records.Observation
	sum *InputSummary

	// source and offset of the current line, written into observations
	source string
	epoch  int64
	offset int64
	key    string // checkpoint key of the current input

	cur, spare *batch
	inflight   chan error // result of the write of flying, nil when none
	flying     *batch
	failed     error // the first failed write; the worker writes nothing after it

	// position of the current line, for dead letters
	linePrefix string
	lineNo     int64

	// canonicalisation counters: the parser (or record reader) they come
	// from and their values when last added to the metric
	statSrc   any
	lastStats parse.CanonicalStats
}

// setStatSource switches the source of the canonicalisation counters.
func (w *worker) setStatSource(src any) {
	w.accountCanon()
	w.statSrc, w.lastStats = src, parse.Stats(src)
}

// accountCanon adds the canonicalisation counts since the last call to the
// metric.
func (w *worker) accountCanon() {
	if w.statSrc == nil {
		return
	}
	st := parse.Stats(w.statSrc)
	m, f := w.r.m.canonical, w.r.format
	if d := st.Cache - w.lastStats.Cache; d > 0 {
		m.WithLabelValues(f, "cache").Add(float64(d))
	}
	if d := st.Fast - w.lastStats.Fast; d > 0 {
		m.WithLabelValues(f, "fast").Add(float64(d))
	}
	if d := st.Library - w.lastStats.Library; d > 0 {
		m.WithLabelValues(f, "library").Add(float64(d))
	}
	w.lastStats = st
}

// batch is the messages of a group of lines and what to record once the
// sink acknowledged them.
type batch struct {
	msgs  []stream.Message
	arena []byte
	// position to checkpoint once the batch is acknowledged
	key      string
	pos      Position
	dirtyPos bool
	// lines/observations/bytes to add to the shared counters
	lines, obs, bytes int64
	// claim and next offset to mark committed (source mode)
	claim stream.Claim
	next  int64
}

func (b *batch) reset() {
	clear(b.msgs)
	b.msgs = b.msgs[:0]
	b.arena = b.arena[:0]
	b.dirtyPos = false
	b.lines, b.obs, b.bytes = 0, 0, 0
	b.claim, b.next = nil, 0
}

func (r *runner) newWorker() (*worker, error) {
	w := &worker{r: r, cur: &batch{msgs: make([]stream.Message, 0, r.cfg.BatchSize)},
		spare: &batch{msgs: make([]stream.Message, 0, r.cfg.BatchSize)}}
	if !parse.IsRecordFormat(r.cfg.Format) {
		p, err := parse.New(r.cfg.Format, r.cfg.Parse)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		w.p = p
		w.setStatSource(p)
	}
	return w, nil
}

// input reads one input to its end (or, following, until ctx is done).
// The returned error is fatal (the sink failed); input-level failures are
// reported in the summary.
func (w *worker) input(ctx context.Context, name string) (InputSummary, error) {
	sum := InputSummary{Name: name, Skipped: map[string]int64{}, Rejects: map[string]int64{}}
	w.sum = &sum
	err := w.readInput(ctx, name)
	if ferr := w.flush(ctx, true); ferr != nil && err == nil {
		err = ferr
	}
	w.sum = nil
	var ie *inputError
	if errors.As(err, &ie) {
		sum.Err = ie.Error()
		w.r.log.Error("ingest input failed", "input", name, "err", ie.Error())
		return sum, nil
	}
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() != nil {
		return sum, nil
	}
	return sum, err
}

// inputError is a failure of one input (not of the sink).
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// opened is one open input.
type opened struct {
	f      *os.File
	br     *bufio.Reader
	gz     bool
	dev    uint64
	ino    uint64
	closer func() error
}

func (w *worker) open(name string) (*opened, error) {
	cfg := &w.r.cfg
	o := &opened{}
	if name == "-" {
		o.f = os.Stdin
		o.closer = func() error { return nil }
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, &inputError{err}
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, &inputError{err}
		}
		o.f = f
		o.dev, o.ino = fileID(fi)
		o.closer = f.Close
	}
	raw := bufio.NewReaderSize(o.f, 256<<10)
	magic, _ := raw.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(raw)
		if err != nil {
			o.closer()
			return nil, &inputError{fmt.Errorf("gzip: %w", err)}
		}
		gz.Multistream(true)
		o.gz = true
		o.br = bufio.NewReaderSize(&limitReader{r: gz, max: cfg.MaxDecompressedBytes}, 256<<10)
	} else {
		o.br = raw
	}
	return o, nil
}

func (w *worker) readInput(ctx context.Context, name string) error {
	if parse.IsRecordFormat(w.r.cfg.Format) {
		return w.readRecords(ctx, name)
	}
	o, err := w.open(name)
	if err != nil {
		return err
	}
	defer func() { o.closer() }()
	key := name
	if name != "-" {
		if abs, err := filepath.Abs(name); err == nil {
			key = abs
		}
	}
	var start Position
	if name != "-" {
		if p, ok := w.r.cp.get(key); ok && p.Dev == o.dev && p.Ino == o.ino && p.Gzip == o.gz {
			start = p
		}
	}
	if start.Offset > 0 {
		if o.gz {
			if _, err := io.CopyN(io.Discard, o.br, start.Offset); err != nil {
				return &inputError{fmt.Errorf("skip to checkpoint offset %d: %w", start.Offset, err)}
			}
		} else {
			fi, _ := o.f.Stat()
			if fi != nil && fi.Size() < start.Offset {
				w.r.log.Warn("ingest: file shorter than its checkpoint (truncated); reading from the start", "input", name)
				start = Position{Epoch: start.Epoch + 1}
			} else {
				if _, err := o.f.Seek(start.Offset, io.SeekStart); err != nil {
					return &inputError{err}
				}
				o.br.Reset(o.f)
			}
		}
		if start.Offset > 0 {
			w.r.log.Info("ingest: resuming from checkpoint", "input", name, "offset", start.Offset, "lines", start.Lines)
		}
	}
	follow := w.r.cfg.Follow && name != "-" && !o.gz
	lr := newLineReader(o.br, w.r.cfg.MaxLineBytes, start.Offset)
	lineNo := start.Lines
	w.key = key
	w.setSource(key, o, start.Epoch)
	rotated := false
	prefix := name
	if name == "-" {
		prefix = "stdin"
	}
	for n := 0; ; n++ {
		if n&255 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, tooLong, err := lr.next(!follow || rotated)
		if err == nil {
			lineNo++
			w.setPos(Position{Dev: o.dev, Ino: o.ino, Offset: lr.off, Gzip: o.gz, Lines: lineNo, Epoch: w.epoch})
			w.offset = lr.off
			if err := w.line(ctx, prefix, lineNo, line, tooLong); err != nil {
				return err
			}
			continue
		}
		if err != io.EOF {
			return w.readFailed(ctx, prefix, lineNo+1, err)
		}
		if !follow {
			return nil
		}
		// Following: the end of the file for now.
		if err := w.flush(ctx, true); err != nil {
			return err
		}
		if rotated {
			// The old file is read to its end; switch to the new one.
			o.closer()
			no, err := w.open(name)
			if err != nil {
				return err
			}
			o = no
			lr.reset(o.br, 0)
			lineNo = 0
			w.setSource(key, o, 0)
			rotated = false
			w.r.log.Info("ingest: followed file was rotated; reading the new one", "input", name)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.r.cfg.PollInterval):
		}
		fi, serr := os.Stat(name)
		cur, cerr := o.f.Stat()
		if serr == nil && cerr == nil && !os.SameFile(fi, cur) {
			rotated = true // read what is left of the old file first
			continue
		}
		if cerr == nil && cur.Size() < lr.off+lr.partial {
			w.r.log.Info("ingest: followed file was truncated; reading from the start", "input", name)
			if _, err := o.f.Seek(0, io.SeekStart); err != nil {
				return &inputError{err}
			}
			o.br.Reset(o.f)
			lr.reset(o.br, 0)
			lineNo = 0
			w.setSource(key, o, w.epoch+1)
		}
	}
}

// readFailed handles an error from reading an input after it was opened:
// an input beyond MaxDecompressedBytes or a corrupt or truncated gzip
// stream is bad input (one dead letter, reason "too-large" or "corrupt";
// the rest of the input is abandoned and ingest goes on); any other error
// is a failure of the input (reported, ErrInput at the end).
func (w *worker) readFailed(ctx context.Context, prefix string, at int64, err error) error {
	var reason string
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, errTooLarge):
		reason = ReasonTooLarge
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &corrupt),
		errors.Is(err, io.ErrUnexpectedEOF):
		reason = ReasonCorrupt
	default:
		return &inputError{fmt.Errorf("read: %w", err)}
	}
	w.r.log.Warn("ingest: abandoning the rest of an input", "input", prefix, "reason", reason, "err", err)
	w.sum.Lines++
	w.cur.lines++
	return w.deadLetter(ctx, prefix, at, reason, fmt.Errorf("input abandoned: %w", err), nil)
}

// line handles one input line.
func (w *worker) line(ctx context.Context, prefix string, lineNo int64, line []byte, tooLong bool) error {
	w.linePrefix, w.lineNo = prefix, lineNo
	w.cur.lines++
	w.cur.bytes += int64(len(line)) + 1
	w.sum.Lines++
	if tooLong {
		return w.deadLetter(ctx, prefix, lineNo, ReasonTooLong,
			fmt.Errorf("line longer than %d bytes", w.r.cfg.MaxLineBytes), line)
	}
	err := w.p.Parse(line, &w.obs)
	if err == nil {
		return w.emit(ctx)
	}
	reason := parse.Reason(err)
	if parse.IsSkip(err) {
		w.sum.Skipped[reason]++
		w.r.m.skipped.WithLabelValues(w.r.format, reason).Inc()
		return nil
	}
	return w.deadLetter(ctx, prefix, lineNo, reason, err, line)
}

// setSource sets the Source of the observations of the current input:
// "path@inode" (plus ".epoch" after truncations), so that a rotated or
// truncated file, whose offsets start again at 0, is another source. Stdin
// has no source: its offsets mean nothing across runs.
func (w *worker) setSource(key string, o *opened, epoch int64) {
	w.epoch = epoch
	if key == "-" {
		w.source = ""
		return
	}
	w.source = key + "@" + strconv.FormatUint(o.ino, 10)
	if epoch > 0 {
		w.source += "." + strconv.FormatInt(epoch, 10)
	}
}

// setPos records the position after the current line in the batch.
func (w *worker) setPos(p Position) {
	w.cur.key, w.cur.pos, w.cur.dirtyPos = w.key, p, true
}

func (w *worker) emit(ctx context.Context) error {
	o := &w.obs
	if o.Source == "" {
		o.Source, o.Offset = w.source, w.offset
	}
	b := w.cur
	ks := len(b.arena)
	b.arena = append(b.arena, o.Object...)
	vs := len(b.arena)
	b.arena = AppendObservation(b.arena, o)
	if n := len(b.arena) - ks; n > MaxMessageBytes {
		// A safety net so that one record can never make the sink fail
		// (a jsonl line may carry a huge digest, for example).
		b.arena = b.arena[:ks]
		return w.deadLetter(ctx, w.linePrefix, w.lineNo, ReasonTooLarge,
			fmt.Errorf("observation of %d bytes exceeds %d", n, MaxMessageBytes), []byte(o.Object))
	}
	// Slices into the arena stay valid if it grows: the old array lives on.
	b.msgs = append(b.msgs, stream.Message{Topic: w.r.cfg.ObservationsTopic,
		Key: b.arena[ks:vs:vs], Value: b.arena[vs:len(b.arena):len(b.arena)]})
	w.sum.Observations++
	b.obs++
	if len(b.msgs) >= w.r.cfg.BatchSize {
		return w.flush(ctx, false)
	}
	return nil
}

func (w *worker) deadLetter(ctx context.Context, prefix string, lineNo int64, reason string, err error, input []byte) error {
	w.sum.Rejects[reason]++
	w.r.m.rejects.WithLabelValues(w.r.format, reason).Inc()
	w.r.rejs.Add(1)
	sep := ":"
	if w.cur.claim != nil {
		sep = "@" // topic/partition@offset
	}
	dl := records.NewDeadLetter(time.Now(), "ingest", w.r.format, prefix+sep+strconv.FormatInt(lineNo, 10), reason, err, input)
	v, merr := json.Marshal(dl)
	if merr != nil {
		return fmt.Errorf("ingest: encode dead letter: %w", merr)
	}
	b := w.cur
	vs := len(b.arena)
	b.arena = append(b.arena, v...)
	b.msgs = append(b.msgs, stream.Message{Topic: w.r.cfg.DeadLetterTopic, Value: b.arena[vs:len(b.arena):len(b.arena)]})
	if len(b.msgs) >= w.r.cfg.BatchSize {
		return w.flush(ctx, false)
	}
	return nil
}

// flush hands the current batch to the sink. It first waits for the write
// in flight and, once that one is acknowledged, records its position. With
// wait false the current batch is then written in the background (the
// caller goes on filling the other buffer); with wait true flush returns
// only after it too is acknowledged and recorded. Writes use the runner's
// write context, which outlives a cancelled ctx by DrainTimeout.
func (w *worker) flush(ctx context.Context, wait bool) error {
	if w.failed != nil {
		// After a failed write nothing more may be written or recorded:
		// a later batch acknowledged would move the checkpoint past the
		// lost one.
		return w.failed
	}
	if err := w.settle(); err != nil {
		w.failed = err
		return err
	}
	b := w.cur
	if len(b.msgs) == 0 {
		if err := w.ack(b); err != nil {
			return err
		}
		if wait {
			return w.r.saveCheckpoint(true)
		}
		return nil
	}
	if !wait {
		w.flying, w.cur, w.spare = b, w.spare, nil
		w.inflight = make(chan error, 1)
		go func(ch chan<- error) { ch <- w.write(b) }(w.inflight)
		return nil
	}
	if err := w.write(b); err != nil {
		w.failed = err
		return err
	}
	if err := w.ack(b); err != nil {
		return err
	}
	// A synchronous flush is an idle point (end of input, end of the file
	// for now, shutdown): the checkpoint catches up.
	return w.r.saveCheckpoint(true)
}

// saveCheckpoint writes the checkpoint file if CheckpointInterval passed
// (or force).
func (r *runner) saveCheckpoint(force bool) error {
	wrote, err := r.cp.save(force, r.cfg.CheckpointInterval)
	if wrote {
		r.m.checkpoints.Inc()
	}
	return err
}

// settle waits for the write in flight, if any, and records it.
func (w *worker) settle() error {
	if w.inflight == nil {
		return nil
	}
	err := <-w.inflight
	b := w.flying
	w.inflight, w.flying = nil, nil
	if err != nil {
		return err
	}
	if err := w.ack(b); err != nil {
		return err
	}
	w.spare = b
	return nil
}

func (w *worker) write(b *batch) error {
	start := time.Now()
	if err := w.r.sink.Write(w.r.writeCtx, b.msgs...); err != nil {
		return fmt.Errorf("ingest: sink write: %w", err)
	}
	w.r.m.writeSeconds.Observe(time.Since(start).Seconds())
	w.r.m.batchSize.Observe(float64(len(b.msgs)))
	return nil
}

// ack records an acknowledged (or empty) batch: counters, checkpoint.
func (w *worker) ack(b *batch) error {
	if b.lines > 0 || b.obs > 0 {
		w.r.mLines.Add(float64(b.lines))
		w.r.mObs.Add(float64(b.obs))
		w.r.mBytes.Add(float64(b.bytes))
		w.r.lines.Add(b.lines)
		w.r.obs.Add(b.obs)
	}
	if b.dirtyPos && b.key != "-" {
		w.r.cp.put(b.key, b.pos)
	}
	if err := w.r.saveCheckpoint(false); err != nil {
		return err
	}
	if b.claim != nil {
		b.claim.MarkCommitted(b.next)
	}
	w.accountCanon()
	b.reset()
	return nil
}
