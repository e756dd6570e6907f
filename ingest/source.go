package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// RunSource reads lines from the partitions of a stream.Source (for example
// the Heritrix KafkaCrawlLogFeed topic "heritrix-crawl-log" through a
// stream.KafkaSource, with format "heritrix-json"): every message value is
// one line of cfg.Format. cfg.Paths is ignored; cfg.Follow does not apply
// (a Kafka source is endless; a finite source ends at io.EOF).
//
// Positions: each partition resumes at the offset recorded in the
// checkpoint (key "kafka:topic/partition") after the last acknowledged
// batch, or at the earliest offset; the source's group commits
// (Claim.MarkCommitted, after each acknowledged batch) serve lag monitoring
// only. Observations carry Source "kafka:topic/partition" and Offset = the
// message offset + 1. Without a CheckpointPath a restart reads every
// partition from its start. The checkpoint is a local file: run one
// ingest per feed (or give each instance its own group and checkpoint).
//
// RunSource returns when ctx is cancelled (after draining, with a nil error
// and Summary.Interrupted set) or when the source fails. Every claim's
// batches are written in order, one write in flight per claim.
func RunSource(ctx context.Context, cfg Config, src stream.Source, sink stream.Sink, logger *slog.Logger, reg prometheus.Registerer) (Summary, error) {
	if cfg.Paths == nil {
		cfg.Paths = []string{"-"} // satisfies Validate; unused
	}
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if parse.IsRecordFormat(cfg.Format) {
		return Summary{}, fmt.Errorf("%w: Format %q is a record format; a source delivers lines", ErrConfig, cfg.Format)
	}
	if cfg.Format == FormatAuto {
		return Summary{}, fmt.Errorf("%w: Format %s detects the format of files; a source needs its format", ErrConfig, FormatAuto)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := cfg.WithDefaults()
	cp, err := loadCheckpoint(c.CheckpointPath, c.Format)
	if err != nil {
		return Summary{}, err
	}
	r := newRunner(ctx, c, sink, logger, reg, cp)
	defer r.stop()
	if r.ds != nil {
		r.ds.retryForever() // a source is endless: a service, as follow mode
	}
	stopProgress := r.progress(ctx)
	defer stopProgress()

	var mu sync.Mutex
	byName := map[string]*InputSummary{}
	var order []string
	err = src.Run(ctx, func(cctx context.Context, cl stream.Claim) error {
		w, err := r.newWorker()
		if err != nil {
			return fmt.Errorf("%w: %w", stream.ErrFatal, err)
		}
		sum, err := w.claim(cctx, cl)
		mu.Lock()
		if prev, ok := byName[sum.Name]; ok {
			prev.Lines += sum.Lines
			prev.Observations += sum.Observations
			for k, v := range sum.Skipped {
				prev.Skipped[k] += v
			}
			for k, v := range sum.Rejects {
				prev.Rejects[k] += v
			}
		} else {
			byName[sum.Name] = &sum
			order = append(order, sum.Name)
		}
		mu.Unlock()
		if err != nil && ctx.Err() == nil {
			var ie *inputError
			if errors.As(err, &ie) {
				return err
			}
			// The sink failed: stop everything (the checkpoint holds).
			return fmt.Errorf("%w: %w", stream.ErrFatal, err)
		}
		return nil
	})
	if serr := r.saveCheckpoint(true); serr != nil && err == nil {
		err = serr
	}
	var out Summary
	for _, n := range order {
		out.Inputs = append(out.Inputs, *byName[n])
	}
	out.Interrupted = ctx.Err() != nil
	r.delivered(&out)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil
	}
	return out, err
}

// claim reads one partition until its context ends or the source is
// exhausted.
func (w *worker) claim(ctx context.Context, cl stream.Claim) (InputSummary, error) {
	key := "kafka:" + cl.Topic() + "/" + strconv.Itoa(int(cl.Partition()))
	sum := InputSummary{Name: cl.Topic() + "/" + strconv.Itoa(int(cl.Partition())), Skipped: map[string]int64{}, Rejects: map[string]int64{}}
	w.sum = &sum
	defer func() { w.sum = nil }()
	start := Position{Offset: -1}
	if p, ok := w.r.cp.get(key); ok {
		start = p
	}
	if err := cl.SeekTo(start.Offset); err != nil {
		return sum, err
	}
	w.key, w.source, w.epoch = key, key, 0
	lines := max(start.Lines, 0)
	for {
		msgs, err := cl.Fetch(ctx, w.r.cfg.BatchSize)
		for _, m := range msgs {
			lines++
			w.offset = m.Offset + 1
			w.setPos(Position{Offset: m.Offset + 1, Lines: lines})
			w.cur.claim, w.cur.next = cl, m.Offset+1
			line := m.Value
			tooLong := len(line) > w.r.cfg.MaxLineBytes
			if tooLong {
				line = line[:w.r.cfg.MaxLineBytes]
			}
			if lerr := w.line(ctx, sum.Name, m.Offset, line, tooLong); lerr != nil {
				return sum, lerr
			}
		}
		if err != nil {
			ferr := w.flush(ctx, true)
			if err == io.EOF || errors.Is(err, context.Canceled) || errors.Is(err, stream.ErrRevoked) {
				return sum, ferr
			}
			return sum, errors.Join(err, ferr)
		}
		// Write what this fetch gave while the next one is fetched.
		if ferr := w.flush(ctx, false); ferr != nil {
			return sum, ferr
		}
	}
}
