package aggregate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// The event-time reorder buffer of a partition (Flink's bounded
// out-of-orderness watermark).
//
// The watermark W is the latest event time seen on the partition minus the
// reorder window (Config.ReorderWindow, default DefaultReorderWindow; the
// allowed lateness Model.LateTolerance is separate, as in Flink, where the
// bounded out-of-orderness of the watermark and the allowed lateness are
// two settings). An observation at or after W
// when it arrives is held in the buffer until W passes it; the buffer
// releases observations in (event time, offset) order. An observation
// before W when it arrives is not held: it is applied at once, in arrival
// order, and its object decides — it is applied if it is no older than the
// object's latest applied observation by more than the allowed lateness
// (a log of other objects replayed after this one loses nothing), and is
// otherwise late: not applied, written with the reason to the late output
// (Config.LateTopic) and counted. After every message the buffer releases
// what W passed, so the sequence of observations applied to each object is
// a function of the partition's messages in offset order alone, however
// they are cut into batches; observations within the reorder window of
// each other reach their objects in event-time order.
//
// Crash safety: with every batch commit (atomic with the states and the
// next offset) the processor stores the buffer's position under the
// reserved object reorderObject: the latest event time, W, and the offset
// of the earliest held observation. A new owner of the partition reads it,
// seeks the input to that offset instead of the committed one and re-reads
// the messages before the committed offset only to refill the buffer: a
// message among them is put back if its time is at or after the stored W
// (exactly the held ones: those released, and those applied at once on
// arrival, are before it), and is otherwise skipped. Nothing held is lost
// and nothing is applied twice; the input must keep at least the reorder
// window of messages (Kafka retention).
//
// A partition without input for Config.IdleRelease releases what it holds
// (the end of a stream is not held back for ever); a finite input (filter
// mode) releases everything at its end.

// reorderObject is the reserved object name under which a partition's
// buffer position is committed. Object names are URLs, which cannot start
// with a NUL byte.
const reorderObject = "\x00changerate:reorder"

// ReasonLate is the reason of a late observation's record on the late
// output.
const ReasonLate = "late"

// ReasonFuture is the dead-letter reason of an observation whose event
// time lies more than Config.MaxFuture ahead of the Processor's clock.
const ReasonFuture = "future"

// heldKey orders a held observation; slot is its place in the buffer's
// slab (the heap moves 24-byte keys, not observations).
type heldKey struct {
	t    int64 // event time, Unix ms
	off  int64 // input offset
	slot int32
}

// keyLess orders held observations by (event time, offset).
func keyLess(a, b heldKey) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.off < b.off
}

type heldHeap []heldKey

func (h heldHeap) less(i, j int) bool { return keyLess(h[i], h[j]) }

func (h *heldHeap) push(x heldKey) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

// pop removes the least element into dst.
func (h *heldHeap) pop(dst *heldKey) {
	a := *h
	n := len(a) - 1
	*dst = a[0]
	a[0] = a[n]
	a[n] = heldKey{}
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
}

// reorderBuf is one partition's buffer. Not safe for concurrent use.
type reorderBuf struct {
	tol     int64 // allowed lateness, ms
	hasMax  bool
	maxSeen int64 // latest event time seen, Unix ms
	// The keys of the held observations are in two places: run[runHead:],
	// those that arrived in (time, offset) order, each after the last one
	// there (the usual case, logs in about the order they were written:
	// O(1) to hold and to release), and the heap held, the others. The
	// next to release is the lesser of the two minima.
	run     []heldKey
	runHead int
	held    heldHeap
	// replayBelow: messages with a lower offset are re-read after a
	// restart, only to refill the buffer (see restore).
	replayBelow int64
	// off: Config.DisableReorder (nothing held, nothing late).
	off bool
	// slab holds the held observations, by heldKey.slot, in chunks of
	// heldChunk: a buffer that grows to a reorder window's observations
	// (tens of thousands on a busy partition) allocates chunks instead of
	// copying itself at every doubling. used is the number of slots handed
	// out, free the released ones among them; both reset when the buffer
	// empties. The chunks stay for the next window.
	slab [][]records.Observation
	used int32
	free []int32
}

// heldChunk is the number of observations in a chunk of reorderBuf.slab.
const heldChunk = 256

// hold stores o in the slab and its key in the run (when it comes after the
// run's last) or the heap.
func (r *reorderBuf) hold(o *records.Observation, t, off int64) {
	var slot int32
	if n := len(r.free); n > 0 {
		slot = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		slot = r.used
		r.used++
		if int(slot/heldChunk) == len(r.slab) {
			r.slab = append(r.slab, make([]records.Observation, heldChunk))
		}
	}
	*r.at(slot) = *o
	k := heldKey{t: t, off: off, slot: slot}
	if n := len(r.run); n == r.runHead || !keyLess(k, r.run[n-1]) {
		r.run = append(r.run, k)
	} else {
		r.held.push(k)
	}
}

// first returns the key of the next observation to release; false when
// none is held.
func (r *reorderBuf) first() (heldKey, bool) {
	inRun := r.runHead < len(r.run)
	switch {
	case inRun && (len(r.held) == 0 || keyLess(r.run[r.runHead], r.held[0])):
		return r.run[r.runHead], true
	case len(r.held) > 0:
		return r.held[0], true
	}
	return heldKey{}, false
}

// popFirst removes the key first returned, k.
func (r *reorderBuf) popFirst(k heldKey) {
	if r.runHead < len(r.run) && r.run[r.runHead] == k {
		r.runHead++
		switch {
		case r.runHead == len(r.run):
			r.run, r.runHead = r.run[:0], 0
		case r.runHead >= 1024 && 2*r.runHead >= len(r.run):
			// Reuse the front (a run that never drains, under steady
			// input, would otherwise grow without end).
			n := copy(r.run, r.run[r.runHead:])
			r.run, r.runHead = r.run[:n], 0
		}
		return
	}
	var dropped heldKey
	r.held.pop(&dropped)
}

// at is the slab's slot.
func (r *reorderBuf) at(slot int32) *records.Observation {
	return &r.slab[slot/heldChunk][slot%heldChunk]
}

func newReorderBuf(tol time.Duration) *reorderBuf {
	return &reorderBuf{tol: tol.Milliseconds(), replayBelow: -1}
}

// watermark is the event time before which an arriving observation is
// late; ok is false before the first observation.
func (r *reorderBuf) watermark() (int64, bool) { return r.maxSeen - r.tol, r.hasMax }

// latest is the latest event time seen on the partition (Unix ms; 0:
// none): the as-of time of its complete histories' estimates
// (Object.ChangeEstimateAsOf). It is committed with every batch (position)
// and read back by the query API (ReorderLatest), so that both compute an
// estimate at the same time. Observations held in the buffer are seen: a
// complete history's exposure may run up to the reorder window past its
// applied changes until they are released (at the end of a finite input
// nothing is held).
func (r *reorderBuf) latest() int64 {
	if r == nil || !r.hasMax {
		return 0
	}
	return r.maxSeen
}

// late reports whether an observation at t (Unix ms) is late.
func (r *reorderBuf) late(t int64) bool {
	if r.off {
		return false
	}
	w, ok := r.watermark()
	return ok && t < w
}

// push holds an observation that is not late.
func (r *reorderBuf) push(o *records.Observation, off int64) {
	t := o.Time.UnixMilli()
	if !r.hasMax || t > r.maxSeen {
		r.maxSeen, r.hasMax = t, true
	}
	r.hold(o, t, off)
}

// release appends to dst, in (time, offset) order, the held observations
// the watermark passed (all of them if all), and returns dst.
func (r *reorderBuf) release(dst []records.Observation, offs []int64, all bool) ([]records.Observation, []int64) {
	w, _ := r.watermark()
	all = all || r.off
	if all {
		dst = slices.Grow(dst, r.len())
		offs = slices.Grow(offs, r.len())
	}
	for {
		k, ok := r.first()
		if !ok || !all && k.t >= w {
			break
		}
		r.popFirst(k)
		o := r.at(k.slot)
		dst = append(dst, *o)
		*o = records.Observation{}
		r.free = append(r.free, k.slot)
		offs = append(offs, k.off)
	}
	if r.len() == 0 {
		r.used, r.free = 0, r.free[:0]
	}
	return dst, offs
}

// held is the number of observations held.
func (r *reorderBuf) len() int { return len(r.held) + len(r.run) - r.runHead }

// minOffset is the offset of the earliest held message, or next when none
// is held.
func (r *reorderBuf) minOffset(next int64) int64 {
	m := next
	if r.runHead < len(r.run) {
		m = min(m, r.run[r.runHead].off) // the run's offsets increase
	}
	for i := range r.held {
		if r.held[i].off < m {
			m = r.held[i].off
		}
	}
	return m
}

// position encodes the buffer's position for the commit: version 1,
// varint latest time, varint watermark, varint earliest held offset.
func (r *reorderBuf) position(next int64) []byte {
	if !r.hasMax || r.off {
		return nil
	}
	w, _ := r.watermark()
	return ReorderPosition(r.maxSeen, w, r.minOffset(next))
}

// restore sets the buffer from a committed position: it returns the
// offset to seek to (the earliest held one) and arranges that messages
// before next refill the buffer (see replay).
func (r *reorderBuf) restore(v []byte, next int64) (seek int64, err error) {
	if len(v) == 0 {
		return next, nil
	}
	if v[0] != 1 {
		return next, fmt.Errorf("aggregate: reorder position: unknown version %d", v[0])
	}
	v = v[1:]
	var vals [3]int64
	for i := range vals {
		x, n := binary.Varint(v)
		if n <= 0 {
			return next, fmt.Errorf("aggregate: reorder position: truncated")
		}
		vals[i], v = x, v[n:]
	}
	r.maxSeen, r.hasMax = vals[0], true
	// The stored watermark wins over one computed from a changed lateness:
	// it decides which re-read messages were held.
	r.tol = vals[0] - vals[1]
	seek = vals[2]
	if seek > next || seek < 0 {
		seek = next
	}
	r.replayBelow = next
	return seek, nil
}

// replaying reports whether the message at off is re-read only to refill
// the buffer.
func (r *reorderBuf) replaying(off int64) bool { return off < r.replayBelow }

// refill puts back a re-read observation if it was held at the commit.
func (r *reorderBuf) refill(o *records.Observation, off int64) {
	t := o.Time.UnixMilli()
	if w, _ := r.watermark(); t >= w {
		r.hold(o, t, off)
	}
}

// setLateness applies the configured reorder window once the re-read is
// over (restore kept the stored watermark to decide what was held).
func (r *reorderBuf) setLateness(window time.Duration) { r.tol = window.Milliseconds() }

// DefaultReorderWindow is the default Config.ReorderWindow: long enough for
// the disorder of log shippers and of several ingest instances writing one
// partition, short enough that estimates follow a live crawl within a
// minute of event time (and the buffer holds a minute of input, not the
// allowed lateness's hour).
const DefaultReorderWindow = time.Minute

// lateRecord is the late output's record of an observation: a dead letter
// with reason "late", saying by how much it missed its object's latest.
func lateRecord(now time.Time, position string, o *records.Observation, latest time.Time, tol time.Duration, input []byte) records.DeadLetter {
	err := fmt.Errorf("observation at %s is %s older than its object's latest applied observation (%s), more than the allowed lateness %s; not applied",
		o.Time.UTC().Format(time.RFC3339Nano), latest.Sub(o.Time).Round(time.Millisecond), latest.Format(time.RFC3339Nano), tol)
	return records.NewDeadLetter(now, "aggregator", "observations", position, ReasonLate, err, input)
}

// TopicLate is the default topic of late observations.
const TopicLate = stream.TopicLate

// restoreReorder reads a partition's committed reorder-buffer position and
// returns the buffer and the offset to seek to.
func (p *Processor) restoreReorder(ctx context.Context, part state.Partition, next int64, log *slog.Logger) (*reorderBuf, int64, error) {
	rb := newReorderBuf(p.cfg.ReorderWindow)
	rb.off = p.cfg.DisableReorder
	if next < 0 || rb.off {
		return rb, next, nil
	}
	var vals [][]byte
	err := p.retryStore(ctx, "load", log, func() (err error) {
		vals, err = p.store.Get(ctx, part, []string{reorderObject}, nil)
		return err
	})
	if errors.Is(err, errClaimEnded) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("aggregate: load the reorder buffer position of %s/%d: %w", part.Topic, part.ID, err)
	}
	seek, err := rb.restore(vals[0], next)
	if err != nil {
		p.log.Error("unreadable reorder buffer position; starting the buffer empty", "err", err)
		return newReorderBuf(p.cfg.ReorderWindow), next, nil
	}
	return rb, seek, nil
}

// ReorderObject is the reserved object name under which each partition's
// reorder-buffer position is committed (for tools that read the store).
const ReorderObject = reorderObject

// ReorderPosition encodes a reorder-buffer position as it is committed:
// the latest event time seen, the watermark (both Unix ms) and the offset
// of the earliest held observation (the next offset when none is held).
func ReorderPosition(latest, watermark, earliestHeld int64) []byte {
	b := []byte{1}
	b = binary.AppendVarint(b, latest)
	b = binary.AppendVarint(b, watermark)
	return binary.AppendVarint(b, earliestHeld)
}

// ReorderLatest decodes the latest event time seen on a partition from its
// committed reorder-buffer position (ReorderPosition): the as-of time of
// its complete histories' estimates (Object.ChangeEstimateAsOf). ok is
// false for an empty or unreadable position.
func ReorderLatest(v []byte) (t time.Time, ok bool) {
	if len(v) < 2 || v[0] != 1 {
		return time.Time{}, false
	}
	ms, n := binary.Varint(v[1:])
	if n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// idleWait is how long a fetch may wait before the handler's idle work
// (store check, release of a held buffer); 0: for ever.
func (p *Processor) idleWait(holding bool) time.Duration {
	d := p.cfg.IdleCheck
	if holding && p.cfg.IdleRelease > 0 && (d <= 0 || p.cfg.IdleRelease < d) {
		d = p.cfg.IdleRelease
	}
	return d
}

// releaseIdle applies and commits everything the reorder buffer holds (at
// the end of a finite input, or after IdleRelease without input).
func (w *worker) releaseIdle(ctx context.Context) error {
	if w.rb.len() == 0 {
		return nil
	}
	b, err := w.prepare(ctx, nil)
	if err == nil {
		// The reorder buffer is bounded by ReorderWindow, not by the
		// in-flight budget: the flush takes budget only if it is free and
		// does not wait for it (the end of the input must not block).
		fp, _ := b.footprint()
		b.held = w.p.inflight.resize(0, fp)
		err = w.submit(ctx, b)
	}
	if err == nil {
		err = w.drain()
	}
	if err != nil {
		_ = w.drain()
	}
	return err
}
