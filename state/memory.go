package state

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MemoryConfig configures a Memory store. The zero value of every field
// means its documented default (WithDefaults fills them in).
type MemoryConfig struct {
	// IdleTTL is how long an object lives after its last Commit: Get and
	// Snapshot no longer see it from then on, and the partition's sweep
	// deletes (and counts) it within about IdleTTL/16 more, as with Redis's
	// bucketed layout. Default 0: objects never expire.
	IdleTTL time.Duration
	// Buckets is the number of buckets per partition, fixed by the
	// partition's first Claim or Commit (as Redis stores it in the
	// partition's meta). Default DefaultBuckets.
	Buckets int
	// Now is the clock that expiry is measured with. Default time.Now.
	// Tests inject a fake clock to move time deterministically.
	Now func() time.Time
}

// WithDefaults returns c with the default of every zero field filled in.
func (c MemoryConfig) WithDefaults() MemoryConfig {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	return c
}

// Validate reports every problem of c at once, each naming its field.
func (c MemoryConfig) Validate() error {
	var errs []error
	if c.IdleTTL < 0 {
		errs = append(errs, fmt.Errorf("state: MemoryConfig.IdleTTL: %v is negative", c.IdleTTL))
	}
	if c.Buckets < 0 || c.Buckets > MaxBuckets {
		errs = append(errs, fmt.Errorf("state: MemoryConfig.Buckets: %d is not in [0, %d]", c.Buckets, MaxBuckets))
	}
	return errors.Join(errs...)
}

// Memory is an in-memory Store with the same semantics as Redis with the
// bucketed layout: epochs, offsets, compare-and-set commits and idle
// expiry measured on the configured clock. An object idle for IdleTTL is
// invisible at once and deleted (and counted) by the sweep of its bucket,
// which runs inside the partition's commits with the same plan as Redis's
// (layout.go), or by Sweep.
//
// It is safe for concurrent use. Values passed to Commit and returned by
// Get are copied.
type Memory struct {
	cfg     MemoryConfig
	now     func() time.Time
	metrics *metrics

	mu      sync.Mutex
	parts   map[Partition]*memPart
	expired uint64
}

type memPart struct {
	epoch    int64
	hasEpoch bool
	next     int64 // -1: none stored
	prev     int64 // from of the last commit
	prevEp   int64 // epoch of the last commit
	hasPrev  bool
	buckets  []map[string]memEntry // by bucketOf; nil maps until used
	sweep    sweep
}

type memEntry struct {
	value []byte
	stamp int64 // Unix ms of the commit that wrote it
}

// NewMemory returns an empty Memory store. Metrics (commit batch sizes,
// rejected commits, expired objects) are registered on reg unless it is nil.
func NewMemory(cfg MemoryConfig, reg prometheus.Registerer) (*Memory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &Memory{cfg: cfg, now: cfg.Now, metrics: m, parts: map[Partition]*memPart{}}, nil
}

var _ Store = (*Memory)(nil)

func (m *Memory) part(p Partition) *memPart {
	mp := m.parts[p]
	if mp == nil {
		nb := m.cfg.Buckets
		mp = &memPart{next: -1, buckets: make([]map[string]memEntry, nb), sweep: sweep{nb: nb}}
		m.parts[p] = mp
	}
	return mp
}

// bucket returns the bucket map of the object with digest d (nil if it
// has none yet).
func (mp *memPart) bucket(d Digest) *map[string]memEntry {
	return &mp.buckets[bucketOf(d[:], len(mp.buckets))]
}

// live returns the entry of object (digest d) if it exists and is not
// idle at now (Unix ms). An idle entry stays until a sweep deletes it, as in Redis.
func (m *Memory) live(mp *memPart, object string, d Digest, now int64) (memEntry, bool) {
	e, ok := (*mp.bucket(d))[object]
	if !ok || idleAt(e.stamp, now, m.cfg.IdleTTL.Milliseconds()) {
		return memEntry{}, false
	}
	return e, true
}

func (m *Memory) countExpired(n int) {
	m.expired += uint64(n)
	m.metrics.expired.Add(float64(n))
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, p Partition, epoch int64) (int64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("state: claim %v: %w", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.part(p)
	if mp.hasEpoch && mp.epoch > epoch {
		m.metrics.rejected.WithLabelValues(reasonFenced).Inc()
		return 0, fmt.Errorf("state: claim %v with epoch %d, stored epoch %d: %w", p, epoch, mp.epoch, ErrFenced)
	}
	if !mp.hasEpoch || mp.epoch != epoch {
		mp.sweep = mp.sweep.restart(unixMS(m.now()))
	}
	mp.epoch, mp.hasEpoch = epoch, true
	return mp.next, nil
}

// Takeover implements Store.
func (m *Memory) Takeover(ctx context.Context, p Partition, epoch int64) (int64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("state: takeover %v: %w", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.part(p)
	if !mp.hasEpoch || mp.epoch != epoch {
		mp.sweep = mp.sweep.restart(unixMS(m.now()))
	}
	mp.epoch, mp.hasEpoch = epoch, true
	return mp.next, nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, p Partition, objects []string, dst [][]byte) ([][]byte, error) {
	return m.get(ctx, p, objects, nil, dst)
}

// GetDigests implements DigestGetter.
func (m *Memory) GetDigests(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error) {
	if len(digests) != len(objects) {
		return dst, fmt.Errorf("state: get %v: %d digests for %d objects", p, len(digests), len(objects))
	}
	return m.get(ctx, p, objects, digests, dst)
}

// get is Get with the objects' digests (nil: none).
func (m *Memory) get(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error) {
	if err := p.validate(); err != nil {
		return dst, err
	}
	if err := ctx.Err(); err != nil {
		return dst, fmt.Errorf("state: get %v: %w", p, err)
	}
	now := unixMS(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.parts[p]
	for i, o := range objects {
		if mp == nil {
			dst = append(dst, nil)
			continue
		}
		var d Digest
		if digests != nil {
			d = digests[i]
		}
		e, ok := m.live(mp, o, digestOr(d, o), now)
		if !ok {
			dst = append(dst, nil)
			continue
		}
		dst = append(dst, clone(e.value))
	}
	return dst, nil
}

// Commit implements Store.
func (m *Memory) Commit(ctx context.Context, p Partition, epoch, from, to int64, writes []Write) error {
	if err := checkCommit(p, from, to); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: commit %v: %w", p, err)
	}
	now := unixMS(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.part(p)
	if !mp.hasEpoch || mp.epoch != epoch {
		m.metrics.rejected.WithLabelValues(reasonFenced).Inc()
		return fencedError(p, epoch, mp.hasEpoch, mp.epoch)
	}
	if mp.next != from {
		if mp.next == to && mp.hasPrev && mp.prev == from && mp.prevEp == epoch {
			m.metrics.rejected.WithLabelValues(reasonRepeat).Inc()
			return fmt.Errorf("state: commit %v from offset %d to %d: %w", p, from, to, errRepeat)
		}
		m.metrics.rejected.WithLabelValues(reasonMismatch).Inc()
		return fmt.Errorf("state: commit %v from offset %d, stored %d: %w", p, from, mp.next, ErrOffsetMismatch)
	}
	for _, w := range writes {
		b := mp.bucket(digestOr(w.Digest, w.Object))
		if w.Value == nil {
			delete(*b, w.Object)
			continue
		}
		if *b == nil {
			*b = map[string]memEntry{}
		}
		(*b)[w.Object] = memEntry{value: clone(w.Value), stamp: now}
	}
	ttl := m.cfg.IdleTTL.Milliseconds()
	st := mp.sweep.plan(now, ttl)
	n := 0
	for i := 0; i < st.k; i++ {
		n += sweepBucket(mp.buckets[(st.first+i)%len(mp.buckets)], now, ttl)
	}
	mp.sweep = st.after
	m.countExpired(n)
	mp.next, mp.prev, mp.prevEp, mp.hasPrev = to, from, epoch, true
	m.metrics.batch.Observe(float64(len(writes)))
	return nil
}

// sweepBucket deletes the entries of b idle at now and returns how many.
func sweepBucket(b map[string]memEntry, now, ttl int64) int {
	n := 0
	for o, e := range b {
		if idleAt(e.stamp, now, ttl) {
			delete(b, o)
			n++
		}
	}
	return n
}

// SweepDue implements Sweeper.
func (m *Memory) SweepDue(p Partition) bool {
	now := unixMS(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	mp := m.parts[p]
	return mp != nil && mp.sweep.due(now, m.cfg.IdleTTL.Milliseconds())
}

// ExpiryGrace implements Store: 0, since Memory's expiry is measured from
// every write (Write.KeepExpiry changes nothing).
func (m *Memory) ExpiryGrace() time.Duration { return 0 }

// Close implements Store; it does nothing.
func (m *Memory) Close() error { return nil }

// Sweep deletes every object idle at the clock's current time, in every
// partition, and returns how many it deleted (they are counted as
// expired). Commits sweep a few buckets each; Sweep is for a Memory store
// whose partitions nobody commits to (RunSweeper).
func (m *Memory) Sweep() int {
	now := unixMS(m.now())
	ttl := m.cfg.IdleTTL.Milliseconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, mp := range m.parts {
		for _, b := range mp.buckets {
			n += sweepBucket(b, now, ttl)
		}
	}
	m.countExpired(n)
	return n
}

// RunSweeper calls Sweep every interval (of real time; expiry itself is
// judged on the configured clock) until ctx is done, so that a long-running
// Memory store frees and counts idle objects that nobody reads. Run it in
// its own goroutine; it returns ctx.Err().
func (m *Memory) RunSweeper(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			m.Sweep()
		}
	}
}

// Len returns the number of stored objects, including expired ones not
// yet removed.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, mp := range m.parts {
		for _, b := range mp.buckets {
			n += len(b)
		}
	}
	return n
}

// Expired returns how many objects have expired and been removed so far.
func (m *Memory) Expired() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expired
}

// Snapshot implements Snapshotter.
func (m *Memory) Snapshot(ctx context.Context, p Partition) (PartitionSnapshot, error) {
	if err := p.validate(); err != nil {
		return PartitionSnapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: %w", p, err)
	}
	now := unixMS(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	s := PartitionSnapshot{Next: -1, Epoch: -1, Objects: map[string][]byte{}}
	mp := m.parts[p]
	if mp == nil {
		return s, nil
	}
	s.Next = mp.next
	if mp.hasEpoch {
		s.Epoch = mp.epoch
	}
	ttl := m.cfg.IdleTTL.Milliseconds()
	for _, b := range mp.buckets {
		for o, e := range b {
			if !idleAt(e.stamp, now, ttl) {
				s.Objects[o] = clone(e.value)
			}
		}
	}
	return s, nil
}

// Partitions returns the partitions that have a stored epoch or offset,
// sorted by topic and ID.
func (m *Memory) Partitions() []Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Partition, 0, len(m.parts))
	for p := range m.parts {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// clone copies b; the copy of a non-nil empty slice is non-nil.
func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
