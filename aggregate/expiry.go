package aggregate

import (
	"context"
	"fmt"
	"time"

	"github.com/changerate/changerate/state"
)

// Idle objects of a store with the bucketed layout (state.Sweeper) are
// deleted by sweeps that run inside the partition owner's commits, a few
// buckets each, fenced like every commit. A partition with input commits
// every batch; one without gets an empty commit at its idle check when the
// store says a sweep is due, so that a whole pass still takes about
// IdleTTL/16 (plus up to IdleCheck).

// sweepIdle commits an empty batch at the partition's next offset when
// the store has a sweep due. No batch may be in flight (idle drained
// them).
func (w *worker) sweepIdle(ctx context.Context) error {
	sw, ok := w.p.store.(state.Sweeper)
	if !ok || w.next < 0 || !sw.SweepDue(w.part) {
		return nil
	}
	w.storeMu.Lock()
	err := w.p.store.Commit(ctx, w.part, w.gen, w.next, w.next, nil)
	w.storeMu.Unlock()
	if err != nil {
		return fmt.Errorf("aggregate: sweep %s/%d at offset %d: %w", w.part.Topic, w.part.ID, w.next, err)
	}
	return nil
}

// A per-object Redis layout refreshes an object's expiry (IdleTTL ahead) on a write unless
// the write says KeepExpiry, which is allowed within the store's
// ExpiryGrace of the last write that did refresh it (state.Store). In
// Redis a refresh is about a third of a SET's cost, so an object written
// often has its expiry refreshed once per grace (IdleTTL/16: 45 h with the
// 30-day default) instead of once per batch. The cache entry keeps when
// that refresh was prepared; a new entry (a new object, a cache miss, an
// object evicted and read again) refreshes. A failed commit clears the
// cache, so no entry holds the time of a refresh that was not stored.

// expiryClock decides, for the writes of one batch, which may keep their
// object's expiry.
type expiryClock struct {
	now   int64 // the batch's start, Unix seconds
	grace int64 // the store's ExpiryGrace in whole seconds; < 2: always refresh
}

// newExpiryClock returns the clock of a batch prepared from start (the wall
// clock, which the store's expiry is measured with) for a store whose
// ExpiryGrace is grace.
func newExpiryClock(start time.Time, grace time.Duration) expiryClock {
	return expiryClock{now: start.Unix(), grace: int64(grace / time.Second)}
}

// keep reports whether e's write may keep its expiry, and otherwise
// records that this batch refreshes it. Both times are whole seconds
// (rounded down), so the refresh may be up to a second older than its
// recorded time: keep requires now − refreshed + 1 < grace. A refresh
// recorded after now (the wall clock was set back) refreshes again.
func (c expiryClock) keep(e *entry) bool {
	if since := c.now - int64(e.refreshed); c.grace >= 2 && e.refreshed != 0 && since >= 0 && since+1 < c.grace {
		return true
	}
	if c.grace >= 2 {
		e.refreshed = uint32(c.now)
	}
	return false
}
