package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

func (w *worker) emit(ctx context.Context) error {
	o := &w.obs
	if o.Source == "" {
		o.Source, o.Offset = w.source, w.offset
	}
	b := w.cur
	ks := len(b.arena)
	b.arena = append(b.arena, o.Object...)
	vs := len(b.arena)
	var ok bool
	if b.arena, ok = records.AppendObservationJSON(b.arena, o); !ok {
		b.arena = b.arena[:ks]
		return w.deadLetter(ctx, w.linePrefix, w.lineNo, ReasonUnencodable,
			fmt.Errorf("ingest: observation of %s: %w", o.Object, o.Validate()), []byte(o.Object))
	}
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
	w.r.m.rejects.WithLabelValues(w.label(), reason).Inc()
	w.r.rejs.Add(1)
	sep := ":"
	if w.cur.claim != nil {
		sep = "@" // topic/partition@offset
	}
	dl := records.NewDeadLetter(time.Now(), "ingest", w.label(), prefix+sep+strconv.FormatInt(lineNo, 10), reason, err, input)
	v, merr := json.Marshal(dl)
	if merr != nil {
		return fmt.Errorf("ingest: encode dead letter: %w", merr)
	}
	b := w.cur
	// key = position, as the aggregator's dead letters
	ks := len(b.arena)
	b.arena = append(b.arena, dl.Position...)
	vs := len(b.arena)
	b.arena = append(b.arena, v...)
	b.msgs = append(b.msgs, stream.Message{Topic: w.r.cfg.DeadLetterTopic, Key: b.arena[ks:vs:vs], Value: b.arena[vs:len(b.arena):len(b.arena)]})
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
	ctx := w.r.writeCtx
	if w.r.cfg.Format == FormatAuto {
		ctx = withFormat(ctx, w.label())
	}
	if err := w.r.sink.Write(ctx, b.msgs...); err != nil {
		return fmt.Errorf("ingest: sink write: %w", err)
	}
	w.r.m.writeSeconds.Observe(time.Since(start).Seconds())
	w.r.m.batchSize.Observe(float64(len(b.msgs)))
	return nil
}

// ack records an acknowledged (or empty) batch: counters, checkpoint.
func (w *worker) ack(b *batch) error {
	if b.lines > 0 || b.obs > 0 {
		w.mLines.Add(float64(b.lines))
		// observations_total is counted by the DeliverySink, which knows
		// those the sink refused.
		w.mBytes.Add(float64(b.bytes))
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
