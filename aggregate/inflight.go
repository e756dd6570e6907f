package aggregate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/changerate/changerate/state"
)

// In-flight bookkeeping. Batches are pipelined: while batch N's outputs are
// written and its state committed (by one goroutine per batch, strictly in
// batch order: outputs of N+1 are written after those of N, and N+1 is
// committed only after N was), the handler's goroutine fetches and applies
// batch N+1 on top of batch N's uncommitted states. submit starts a
// batch's goroutine (finish); reap, popOldest and drain retire finished
// batches on the handler's goroutine, oldest first; idle does the work of a
// partition without input (release the reorder buffer, verify the stored
// offset). If a batch fails, the ones after it are neither written nor
// committed, and the cache is dropped.

// maxInFlight bounds the batches whose outputs or commit are pending.
const maxInFlight = 2

// flight is a submitted batch: written, then committed, by one goroutine.
type flight struct {
	b       *batchWork
	written chan struct{} // closed when the outputs are written or failed
	done    chan struct{} // closed when committed or failed
	wErr    error         // set before written is closed
	err     error         // set before done is closed
}

// submit starts writing and committing b after the batches in flight,
// first waiting for the oldest one if maxInFlight are in flight. It
// returns the error of a batch that failed (nothing after it is written or
// committed, and the cache is cleared).
func (w *worker) submit(ctx context.Context, b *batchWork) error {
	if err := w.reap(false); err != nil {
		w.recycle(b)
		_ = w.drain()
		return err
	}
	for len(w.inflight) >= maxInFlight {
		if err := w.popOldest(); err != nil {
			w.recycle(b)
			_ = w.drain()
			return err
		}
	}
	var prev *flight
	if n := len(w.inflight); n > 0 {
		prev = w.inflight[n-1]
	}
	f := &flight{b: b, written: make(chan struct{}), done: make(chan struct{})}
	w.inflight = append(w.inflight, f)
	go w.finish(ctx, f, prev)
	return nil
}

// finish writes f's outputs after prev's, then commits f after prev; it
// runs in its own goroutine and closes f.written, then f.done.
func (w *worker) finish(ctx context.Context, f, prev *flight) {
	defer close(f.done)
	defer w.releaseInflight(f.b)
	w.writeBatch(ctx, f, prev)
	if f.wErr != nil {
		f.err = f.wErr
		return
	}
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			f.err = prev.err
			return
		}
	}
	f.err = w.commitBatch(ctx, f.b)
}

// releaseInflight returns b's bytes of the in-flight budget: once b is
// committed (or failed) its buffers wait only to be recycled.
func (w *worker) releaseInflight(b *batchWork) {
	w.p.inflight.release(b.held)
	b.held = 0
}

// writeBatch writes f's outputs once prev's are written, and sets f.wErr
// (prev's error if prev failed) before closing f.written.
func (w *worker) writeBatch(ctx context.Context, f, prev *flight) {
	defer close(f.written)
	if prev != nil {
		<-prev.written
		if prev.wErr != nil {
			f.wErr = prev.wErr
			return
		}
	}
	if len(f.b.out) > 0 {
		f.wErr = w.writeOutputs(ctx, f.b.out, f.b.pub, w.batchPosition(f.b), true)
	}
	if f.wErr == nil {
		// Written: the outputs are garbage from now on, though the batch
		// is recycled only when the handler reaps it, and their bytes go
		// back to the in-flight budget.
		clear(f.b.out)
		clear(f.b.pub)
		f.b.out, f.b.pub = f.b.out[:0], f.b.pub[:0]
		f.b.outBytes.release(w, true)
		fp, _ := f.b.footprint()
		f.b.held = w.p.inflight.resize(f.b.held, fp)
	}
}

// commitBatch commits b's states and next offset in one Store step
// (retrying transient errors), then tells the claim and the metrics. The
// batch's predecessors must be committed.
func (w *worker) commitBatch(ctx context.Context, b *batchWork) error {
	p := w.p
	if b.to == b.from && len(b.writes) == 0 {
		// Nothing to commit: messages re-read only to refill the reorder
		// buffer.
		return nil
	}
	err := w.retry(ctx, "commit", func() error {
		t0 := time.Now()
		w.storeMu.Lock()
		err := p.store.Commit(ctx, w.part, w.gen, b.from, b.to, b.writes)
		w.storeMu.Unlock()
		p.metrics.storeLatency.WithLabelValues("commit").Observe(time.Since(t0).Seconds())
		return err
	})
	if errors.Is(err, state.ErrAlreadyCommitted) {
		// A retry of a commit whose reply was lost: the store applied this
		// very batch (same epoch, same offsets), so it is done.
		w.log.Info("commit had already been applied", "from", b.from, "to", b.to)
		err = nil
	}
	if err != nil {
		if errors.Is(err, state.ErrOffsetMismatch) {
			err = fmt.Errorf("aggregate: %s/%d: %w", w.part.Topic, w.part.ID, err)
		}
		return err
	}
	// Claim.MarkCommitted is called from this goroutine: the Claim
	// contract allows any goroutine and requires that it never blocks.
	w.claim.MarkCommitted(b.to)
	w.gauges.next.Set(float64(b.to))
	w.gauges.committed(b.newest, b.seen)
	p.metrics.committed.Add(float64(b.n))
	p.committed.Add(int64(b.n))
	p.metrics.batchLatency.Observe(time.Since(b.start).Seconds())
	return nil
}

// reap retires the batches in flight that are done (all of them if wait),
// oldest first, moving their states into the cache.
func (w *worker) reap(wait bool) error {
	for len(w.inflight) > 0 {
		if !wait {
			select {
			case <-w.inflight[0].done:
			default:
				return nil
			}
		}
		if err := w.popOldest(); err != nil {
			return err
		}
	}
	return nil
}

// popOldest waits for the oldest batch in flight and retires it. On
// failure the cache is cleared: nothing of that batch (or the later ones)
// is in the store, and another owner may write from now on.
func (w *worker) popOldest() error {
	f := w.inflight[0]
	<-f.done
	w.inflight = w.inflight[1:]
	if f.err != nil {
		w.cache.clear()
		w.evicted = nil
		w.det = newDetector(&w.p.cfg.Model)
		w.recycle(f.b)
		return f.err
	}
	b := f.b
	w.committed = b.seq
	for name, e := range w.evicted {
		if e.seq <= w.committed {
			delete(w.evicted, name)
		}
	}
	w.next = b.to
	w.gauges.cached.Set(float64(w.cache.len()))
	w.recycle(b)
	return nil
}

// idle is the work of a partition that has had no input for quiet: after
// IdleRelease it applies what the reorder buffer holds; with IdleCheck set
// it then drains the batches in flight, verifies the stored offset and
// lets the store sweep idle objects if a sweep is due (sweepIdle). A
// store that lost writes (Redis restarted from an AOF without its last
// second) rewinds offsets and states together; only a replay repairs it,
// and without new input no commit would notice.
func (w *worker) idle(ctx context.Context, quiet time.Duration) error {
	cfg := &w.p.cfg
	if cfg.IdleRelease > 0 && w.rb.len() > 0 && quiet >= cfg.IdleRelease {
		if err := w.releaseIdle(ctx); err != nil {
			return err
		}
	}
	if cfg.IdleCheck <= 0 {
		return nil
	}
	if err := w.drain(); err != nil {
		return err
	}
	err := w.verifyStoredOffset(ctx)
	if err == nil {
		err = w.sweepIdle(ctx)
	}
	if err != nil && !permanentStoreError(err) {
		// The store cannot be reached: the check is skipped, not failed.
		// Ending the handler would make the member rejoin the group and
		// rebalance every member while the store is down; the next idle
		// check (or the next batch's commit, retried) reaches the store
		// again.
		if !w.checkFailing {
			w.checkFailing = true
			w.log.Warn("cannot verify the stored offset, the state store failed; checking again at the next idle check", "err", err)
		}
		w.p.metrics.retries.WithLabelValues("verify").Inc()
		return nil
	}
	if err == nil && w.checkFailing {
		w.checkFailing = false
		w.log.Info("state store answers again; stored offset verified")
	}
	return err
}

// verifyStoredOffset compares the partition's stored next offset with the
// last offset this handler committed (no batch may be in flight). A
// difference means the store lost or gained commits behind this handler's
// back; the handler then ends with an error wrapping
// state.ErrOffsetMismatch, so that the source reassigns the partition and
// the next handler resumes from the stored offset. A newer owner makes it
// return state.ErrFenced.
//
// The store is read with Claim at the handler's own generation: state.Store
// has no read-only offset method, and Claim with the stored epoch changes
// nothing (its contract), while with a newer stored epoch it fails with
// ErrFenced, which is what the handler must learn then too.
func (w *worker) verifyStoredOffset(ctx context.Context) error {
	w.storeMu.Lock()
	stored, err := w.p.store.Claim(ctx, w.part, w.gen)
	w.storeMu.Unlock()
	if err != nil {
		return fmt.Errorf("aggregate: verify the stored offset of %s/%d: %w", w.part.Topic, w.part.ID, err)
	}
	if stored != w.next {
		w.p.metrics.fenced.WithLabelValues("rewound").Inc()
		w.cache.clear()
		w.det = newDetector(&w.p.cfg.Model)
		w.log.Error("stored offset differs from the last commit (the state store lost writes); reloading the partition",
			"stored", stored, "committed", w.next)
		return fmt.Errorf("aggregate: %s/%d: stored offset %d, committed %d: %w", w.part.Topic, w.part.ID, stored, w.next, state.ErrOffsetMismatch)
	}
	return nil
}

// drain waits for every batch in flight and returns the first error.
func (w *worker) drain() error {
	var first error
	for len(w.inflight) > 0 {
		if err := w.popOldest(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
