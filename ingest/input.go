package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// worker reads inputs one at a time and owns one parser. It fills one
// batch while the previous one is being written (at most one write in
// flight, so batches reach the sink in order and messages of one key keep
// their order).
type worker struct {
	r   *runner
	p   parse.Parser
	obs records.Observation
	sum *InputSummary

	// format is the format of the current input (its metrics label):
	// Config.Format, or with FormatAuto the one detected ("" until then,
	// FormatUnknown when none accepts the input, noFormat saying why);
	// mLines and mBytes its series
	format         string
	noFormat       error
	mLines, mBytes prometheus.Counter

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
	m, f := w.r.m.canonical, w.label()
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
	if r.cfg.Format == FormatAuto {
		w.undetect()
		return w, nil
	}
	if err := w.setFormat(r.cfg.Format); err != nil {
		return nil, err
	}
	return w, nil
}

// label is the format label of the current input's metrics and dead
// letters.
func (w *worker) label() string {
	if w.format == "" {
		return FormatUnknown
	}
	return w.format
}

// setFormat makes format that of the current input: its parser (none for
// a record format or FormatUnknown) and its metric series, created at 0.
// Called between inputs, or before the first line of one is parsed.
func (w *worker) setFormat(format string) error {
	var p parse.Parser
	if format != FormatUnknown && !parse.IsRecordFormat(format) {
		np, err := parse.New(format, w.r.cfg.Parse)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		p = np
	}
	w.setStatSource(p) // the counts so far under the old label
	w.p, w.format = p, format
	w.r.m.touch(format)
	w.mLines, w.mBytes = w.r.m.lines.WithLabelValues(format), w.r.m.bytes.WithLabelValues(format)
	return nil
}

// undetect forgets the format of the previous input (FormatAuto).
func (w *worker) undetect() {
	w.setStatSource(nil)
	w.p, w.format, w.noFormat = nil, "", nil
	w.mLines, w.mBytes = w.r.m.lines.WithLabelValues(FormatUnknown), w.r.m.bytes.WithLabelValues(FormatUnknown)
}

// detectInput sets the format of input name, opened as o (FormatAuto):
// the one the checkpoint records for it (following: for its name, whatever
// file it names now), else the one detected from its first lines. A
// followed plain file without a line yet is left undetected: tail detects
// it when it first has lines.
func (w *worker) detectInput(name, key string, o *opened) error {
	if name != "-" {
		if p, ok := w.r.cp.get(key); ok && p.Format != "" && (w.r.cfg.Follow || (p.Dev == o.dev && p.Ino == o.ino)) {
			w.r.log.Info("format detected", "input", name, "format", p.Format, "from", "checkpoint")
			return w.setFormat(p.Format)
		}
	}
	var sample [][]byte
	if name == "-" {
		sample = peekSample(o.br, SampleLines)
	} else {
		s, err := sampleFile(name, SampleLines)
		if err != nil {
			return &inputError{err}
		}
		sample = s
	}
	if len(sample) == 0 {
		return nil // nothing to detect from (yet)
	}
	return w.detect(name, sample)
}

// detect sets the format of input name from its first lines (FormatAuto):
// the best candidate of parse.Detect, logged; FormatUnknown, with a
// warning naming the formats closest to it, when none accepts them. A
// format that needs a zone that Config.Parse lacks fails the input.
func (w *worker) detect(name string, sample [][]byte) error {
	cands := parse.Detect(sample, w.r.cfg.Parse)
	if len(cands) == 0 {
		near := nearHint(parse.Nearest(sample, w.r.cfg.Parse))
		w.noFormat = fmt.Errorf("no format's parser accepts the first %d lines of %s (closest: %s)", len(sample), name, near)
		w.r.log.Warn("ingest: no format's parser accepts the first lines of an input; its lines are rejected (reason "+ReasonNoFormat+"), the other inputs are read",
			"input", name, "sample_lines", len(sample), "closest", near)
		return w.setFormat(FormatUnknown)
	}
	c := cands[0]
	if c.NeedsZone {
		return &inputError{fmt.Errorf("ingest: %s looks like %s, whose times carry no zone: give a zone (Config.Parse.Zone; ingest --zone, e.g. --zone=UTC): %w",
			name, c.Format, parse.ErrNeedsZone)}
	}
	w.r.log.Info("format detected", "input", name, "format", c.Format, "accepted", fmt.Sprintf("%d of %d sample lines", c.Accepted, c.Lines))
	return w.setFormat(c.Format)
}

// nearHint names the formats of parse.Nearest's candidates (at most 3),
// with how many sample lines had their shape.
func nearHint(cands []parse.Candidate) string {
	if len(cands) == 0 {
		return "none; see the formats of ingest -h"
	}
	var b strings.Builder
	for i, c := range cands[:min(len(cands), 3)] {
		if i > 0 {
			b.WriteString(", or ")
		}
		fmt.Fprintf(&b, "--format=%s (%d of %d sample lines of its shape, %d accepted)", c.Format, c.Shaped, c.Lines, c.Accepted)
	}
	return b.String()
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
	sum.Format = w.format
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

// fileLinks is the number of names of a file (0: deleted); 1 when unknown.
func fileLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

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
	if w.r.cfg.Format == FormatAuto {
		w.undetect()
		if err := w.detectInput(name, key, o); err != nil {
			return err
		}
	}
	if w.p != nil {
		parse.StartInput(w.p) // a header of the previous input no longer applies
	}
	if parse.IsRecordFormat(w.format) {
		return w.readRecords(ctx, name, key, o)
	}
	if w.r.cfg.Follow && name != "-" && !o.gz {
		err := w.follow(ctx, name, key, o)
		o = &opened{closer: func() error { return nil }} // follow closed it
		return err
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
	lr := newLineReader(o.br, w.r.cfg.MaxLineBytes, start.Offset)
	lineNo := start.Lines
	w.key = key
	w.setSource(key, o, start.Epoch)
	prefix := name
	if name == "-" {
		prefix = "stdin"
	}
	for n := 0; ; n++ {
		if n&255 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, tooLong, err := lr.next(true)
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
		return nil
	}
}

// CorruptInput reports whether err, from reading a gzip stream, means the
// stream is corrupt or truncated (bad input, reason ReasonCorrupt) rather
// than a failure of the reading itself.
func CorruptInput(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// readFailed handles an error from reading an input after it was opened:
// an input beyond MaxDecompressedBytes or a corrupt or truncated gzip
// stream is bad input (one dead letter, reason "too-large" or "corrupt";
// the rest of the input is abandoned and ingest goes on); any other error
// is a failure of the input (reported, ErrInput at the end).
func (w *worker) readFailed(ctx context.Context, prefix string, at int64, err error) error {
	var reason string
	switch {
	case errors.Is(err, errTooLarge):
		reason = ReasonTooLarge
	case CorruptInput(err):
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
	if w.p == nil {
		// FormatAuto: an input that no format accepts, or a line before
		// any to detect the format from.
		if len(bytes.TrimSpace(line)) == 0 {
			w.sum.Skipped[parse.ReasonEmpty]++
			w.r.m.skipped.WithLabelValues(w.label(), parse.ReasonEmpty).Inc()
			return nil
		}
		why := w.noFormat
		if why == nil {
			why = fmt.Errorf("no line to detect the format of %s from", prefix)
		}
		return w.deadLetter(ctx, prefix, lineNo, ReasonNoFormat, why, line)
	}
	err := w.p.Parse(line, &w.obs)
	if err == nil {
		return w.emit(ctx)
	}
	reason := parse.Reason(err)
	if parse.IsSkip(err) {
		w.sum.Skipped[reason]++
		w.r.m.skipped.WithLabelValues(w.label(), reason).Inc()
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
	if w.r.cfg.Format == FormatAuto {
		p.Format = w.format
	}
	w.cur.key, w.cur.pos, w.cur.dirtyPos = w.key, p, true
}
