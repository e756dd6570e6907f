package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/backoff"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// Emit modes: when estimate records are published.
const (
	// EmitUpdate publishes, after every committed batch, the estimates of
	// the objects the batch changed. The last record per key is the
	// object's current estimate (the estimates topic is compacted).
	EmitUpdate = "update"
	// EmitFinal publishes every object's estimate once, when a finite input
	// is exhausted (the Unix-filter mode).
	EmitFinal = "final"
)

// Config configures a Processor. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// Model is the estimator, window and reporting configuration.
	Model Model
	// BatchSize is the most messages fetched and committed in one atomic
	// step per partition. Default 5000 (a 1 MiB fetch holds about 3500
	// observations; larger batches fold more updates per object into one
	// write: about 10 % less CPU per observation than 2000 in make bench).
	BatchSize int
	// Emit is EmitUpdate (default) or EmitFinal.
	Emit string
	// CacheObjects bounds the objects kept in memory per partition between
	// batches (a hit avoids a store read). 0 means unbounded, which
	// EmitFinal requires. Default 200000.
	CacheObjects int
	// CacheBytes bounds the memory of the object caches of all the
	// partitions this Processor owns together (each keeps at most its
	// share): cached objects are kept encoded, about 300 bytes each with
	// the cache's bookkeeping (see EntryOverheadBytes). 0 means unbounded,
	// which EmitFinal requires. Default DefaultCacheBytes.
	CacheBytes int64
	// Topics of the outputs. Defaults: stream.TopicEstimates,
	// stream.TopicAccessReports, stream.TopicAlerts, stream.TopicDeadLetter.
	EstimatesTopic, AccessReportsTopic, AlertsTopic, DeadLetterTopic string
	// LateTopic receives late observations (older than their object's
	// latest by more than Model.LateTolerance, see reorder.go), as
	// dead-letter records with reason "late". Default TopicLate.
	LateTopic string
	// ReorderWindow is the bounded out-of-orderness of the partitions'
	// reorder buffers (reorder.go): the watermark is the latest event time
	// seen minus ReorderWindow, and observations after it are held until it
	// passes them, then applied in event-time order. It is also how long (in
	// event time) a new observation waits before its estimate is published.
	// An observation that arrives behind the watermark is applied at once,
	// at its object's latest time when it is older (Model.LateTolerance
	// decides whether it is late). Default DefaultReorderWindow.
	ReorderWindow time.Duration
	// IdleRelease: a partition without input for this long releases (and
	// applies) every observation its reorder buffer holds, so that the end
	// of a stream is not held back for ever; the watermark stays where it
	// was, and an observation that arrives later, before released ones but
	// within Model.LateTolerance of its object's latest, is applied at the
	// object's latest time. 0 never releases on idleness. Default 30s.
	IdleRelease time.Duration
	// DisableReorder applies observations in arrival (offset) order without
	// the event-time reorder buffer: nothing is held, and an observation
	// older than its object's latest one by more than Model.LateTolerance is
	// late (written to LateTopic). For inputs known to be sorted and for
	// tests of batch mechanics. Default false.
	DisableReorder bool
	// RetryBackoff is the first wait before retrying a failed output write
	// or state commit; it doubles up to 30s. Default 200ms.
	RetryBackoff time.Duration
	// IdleCheck is how long a partition handler waits for input before it
	// checks that the store still holds its last commit (see checkStored).
	// 0 disables the check. Default 5s.
	IdleCheck time.Duration
	// TakeoverDelay is how long a handler whose Claim was refused (the
	// stored epoch is above its generation) waits before it takes the
	// partition over, unless its generation ends meanwhile. It must exceed
	// the consumer group's heartbeat interval. Default 10s.
	TakeoverDelay time.Duration
	// DrainTimeout bounds how long an in-flight batch may take to write its
	// outputs and commit after the handler's context is cancelled (SIGTERM,
	// revocation); past it the batch is abandoned uncommitted and will be
	// replayed. Default 10s.
	DrainTimeout time.Duration
	// OnStateLoss is what a handler does when the store has no offset for
	// a partition that was processed before (stateloss.go):
	// OnStateLossStop (stop the aggregator with an error; "" means it) or
	// OnStateLossReplay (rebuild the partition from the earliest offset).
	OnStateLoss string
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Model:              DefaultModel(),
		BatchSize:          5000,
		Emit:               EmitUpdate,
		CacheObjects:       200000,
		CacheBytes:         DefaultCacheBytes,
		EstimatesTopic:     stream.TopicEstimates,
		AccessReportsTopic: stream.TopicAccessReports,
		AlertsTopic:        stream.TopicAlerts,
		DeadLetterTopic:    stream.TopicDeadLetter,
		LateTopic:          TopicLate,
		RetryBackoff:       200 * time.Millisecond,
		DrainTimeout:       10 * time.Second,
		TakeoverDelay:      10 * time.Second,
		IdleCheck:          5 * time.Second,
		IdleRelease:        30 * time.Second,
		ReorderWindow:      DefaultReorderWindow,
	}
}

// Validate checks c; errors name the field.
func (c *Config) Validate() error {
	if err := c.Model.Validate(); err != nil {
		return err
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("aggregate: BatchSize must be at least 1, got %d", c.BatchSize)
	}
	switch c.Emit {
	case EmitUpdate:
	case EmitFinal:
		if c.CacheObjects != 0 {
			return fmt.Errorf("aggregate: Emit %q needs CacheObjects 0 (unbounded), got %d", c.Emit, c.CacheObjects)
		}
		if c.CacheBytes != 0 {
			return fmt.Errorf("aggregate: Emit %q needs CacheBytes 0 (unbounded), got %d", c.Emit, c.CacheBytes)
		}
	default:
		return fmt.Errorf("aggregate: Emit must be %q or %q, got %q", EmitUpdate, EmitFinal, c.Emit)
	}
	if c.CacheObjects < 0 {
		return fmt.Errorf("aggregate: CacheObjects must not be negative, got %d", c.CacheObjects)
	}
	if c.CacheBytes < 0 {
		return fmt.Errorf("aggregate: CacheBytes must not be negative, got %d", c.CacheBytes)
	}
	for name, t := range map[string]string{"EstimatesTopic": c.EstimatesTopic, "AccessReportsTopic": c.AccessReportsTopic,
		"AlertsTopic": c.AlertsTopic, "DeadLetterTopic": c.DeadLetterTopic, "LateTopic": c.LateTopic} {
		if t == "" {
			return fmt.Errorf("aggregate: %s must not be empty", name)
		}
	}
	if c.IdleRelease < 0 {
		return fmt.Errorf("aggregate: IdleRelease must not be negative, got %s", c.IdleRelease)
	}
	if c.IdleCheck < 0 {
		return fmt.Errorf("aggregate: IdleCheck must not be negative, got %s", c.IdleCheck)
	}
	if c.TakeoverDelay < 0 {
		return fmt.Errorf("aggregate: TakeoverDelay must not be negative, got %s", c.TakeoverDelay)
	}
	if c.DrainTimeout <= 0 {
		return fmt.Errorf("aggregate: DrainTimeout must be positive, got %s", c.DrainTimeout)
	}
	if c.ReorderWindow < 0 {
		return fmt.Errorf("aggregate: ReorderWindow must not be negative, got %s", c.ReorderWindow)
	}
	if c.RetryBackoff <= 0 {
		return fmt.Errorf("aggregate: RetryBackoff must be positive, got %s", c.RetryBackoff)
	}
	return validOnStateLoss(c.OnStateLoss)
}

// Processor aggregates the partitions a stream.Source assigns to it. Its
// Handle method is the Source's handler; handlers of different partitions
// run concurrently and share nothing but the store, the sink and the
// metrics.
//
// Delivery: per partition, each batch's outputs are written (and
// acknowledged) before the batch's states and next offset are committed in
// one atomic Store step, which checks the partition's epoch and offset. State
// is therefore effectively-once; outputs are at-least-once. What a replay
// reproduces exactly: the states, access reports, alerts, late records and
// which objects' estimates are due (Model.EmitInterval, decided per
// observation in event time) depend only on the partition's messages in
// offset order, whatever the batch boundaries (the reorder buffer releases
// per message, see reorder.go). A published estimate holds the object's
// state at the end of the batch that made it due (a batch publishes the
// change estimate of an object it applied visits to, the access estimate of
// one it applied accesses to), so records are byte-identical only where
// batches end at the same offsets; cut elsewhere (a new owner fetches from
// the reorder buffer's earliest held offset), an estimate may cover more or
// fewer of the object's observations after the one that made it due, and
// the latest record per key may differ; it is at least as new as the
// object's last due observation of its kind. The state, and EmitFinal's
// estimates built from it, do not depend on the cuts. Dead-letter and late
// records carry the wall-clock time they were written.
type Processor struct {
	cfg     Config
	store   state.Store
	sink    stream.Sink
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time // dead-letter timestamps only

	committed atomic.Int64 // input messages committed, over all partitions
	stats     statCounters
	budget    *cacheBudget // CacheBytes, shared by the partitions' caches

	mu    sync.Mutex
	owned map[state.Partition]bool
	seen  map[state.Partition]int64 // stored offsets claims found (stateloss.go)

	lossMetrics *stateLossMetrics
}

// NewProcessor returns a Processor. now stamps dead-letter records (use
// time.Now); everything else depends only on the input.
func NewProcessor(cfg Config, store state.Store, sink stream.Sink, logger *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil || sink == nil || logger == nil || now == nil {
		return nil, errors.New("aggregate: NewProcessor needs a store, a sink, a logger and a clock")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.initLabels(cfg)
	m.eventLag.now = now
	lm, err := newStateLossMetrics(reg)
	if err != nil {
		return nil, err
	}
	budget := &cacheBudget{limit: cfg.CacheBytes}
	if err := registerCacheBytes(reg, budget); err != nil {
		return nil, err
	}
	return &Processor{cfg: cfg, store: store, sink: sink, log: logger, metrics: m, now: now,
		owned: map[state.Partition]bool{}, seen: map[state.Partition]int64{}, lossMetrics: lm, budget: budget}, nil
}

// Committed returns the number of input messages whose batches this
// processor committed since it was created (dead-lettered ones included).
func (p *Processor) Committed() int64 { return p.committed.Load() }

// Owned returns the partitions this processor currently owns, for readiness
// and status pages.
func (p *Processor) Owned() []state.Partition {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]state.Partition, 0, len(p.owned))
	for k := range p.owned {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Handle processes one claimed partition until the claim ends (revocation,
// cancellation or, for a finite source, end of input). It returns nil when
// the partition was lost or the input ended, and an error wrapping
// stream.ErrFatal for conditions that must not be skipped.
func (p *Processor) Handle(ctx context.Context, c stream.Claim) error {
	part := state.Partition{Topic: c.Topic(), ID: c.Partition()}
	log := p.log.With("topic", part.Topic, "partition", part.ID, "generation", c.Generation())
	next, err := p.store.Claim(ctx, part, c.Generation())
	if errors.Is(err, state.ErrFenced) {
		// Either this claim is late (a newer generation owns the partition
		// and this one's context is about to end) or the consumer group was
		// deleted and created again, so its generations restarted below the
		// stored epoch. Wait long enough for a late generation to notice its
		// end (heartbeats), then take over: the old epoch stays fenced, and
		// the stored offset keeps the state effectively-once either way.
		log.Warn("stored epoch is newer than this generation; taking over unless the generation ends", "wait", p.cfg.TakeoverDelay, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.cfg.TakeoverDelay):
		}
		next, err = p.store.Takeover(ctx, part, c.Generation())
		if err == nil {
			p.metrics.fenced.WithLabelValues("takeover").Inc()
			log.Warn("took the partition over from an earlier consumer group's epoch")
		}
	}
	if err != nil {
		return fmt.Errorf("aggregate: claim %s/%d: %w", part.Topic, part.ID, err)
	}
	if next, err = p.checkClaimed(c, part, next, log); err != nil {
		return err
	}
	rb, seek, err := p.restoreReorder(ctx, part, next)
	if err != nil {
		return err
	}
	if err := c.SeekTo(seek); err != nil {
		return fmt.Errorf("aggregate: seek %s/%d to %d: %w", part.Topic, part.ID, seek, err)
	}
	log.Info("partition claimed", "next_offset", next, "reread_from", seek)
	p.mu.Lock()
	p.owned[part] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.owned, part)
		p.mu.Unlock()
	}()

	w := p.newWorker(part, c, next, log)
	defer p.metrics.forget(part)
	w.rb = rb
	defer w.cache.close()
	// A batch that was fetched is finished (outputs written, state
	// committed) even when ctx is cancelled meanwhile, within DrainTimeout.
	bctx, cancelBatch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBatch()
	stopDrain := context.AfterFunc(ctx, func() { time.AfterFunc(p.cfg.DrainTimeout, cancelBatch) })
	defer stopDrain()
	lastInput := time.Now()
	for {
		fctx, cancelFetch := ctx, context.CancelFunc(func() {})
		if idle := p.idleWait(w.rb.len() > 0); idle > 0 {
			fctx, cancelFetch = context.WithTimeout(ctx, idle)
		}
		msgs, err := c.Fetch(fctx, p.cfg.BatchSize)
		cancelFetch()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			if p.cfg.IdleRelease > 0 && w.rb.len() > 0 && time.Since(lastInput) >= p.cfg.IdleRelease {
				if err := w.releaseIdle(bctx); err != nil {
					return w.stopped(err)
				}
			}
			if p.cfg.IdleCheck <= 0 {
				continue
			}
			// Idle: finish what is in flight and check that the store
			// still holds what this handler committed. A store that lost
			// writes (Redis restarted from an AOF without its last second)
			// rewinds offsets and states together; only a replay repairs
			// it, and without new input no commit would notice.
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			if err := w.checkStored(bctx, c.Generation()); err != nil {
				return w.stopped(err)
			}
			continue
		}
		switch {
		case err == io.EOF:
			// The input ended: release what the reorder buffer holds.
			if err := w.releaseIdle(bctx); err != nil {
				return w.stopped(err)
			}
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			if err := w.flushAlerts(bctx); err != nil {
				return w.stopped(err)
			}
			if p.cfg.Emit == EmitFinal {
				return w.emitFinal(bctx)
			}
			return nil
		case errors.Is(err, stream.ErrRevoked) || ctx.Err() != nil:
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			log.Info("partition released", "next_offset", w.next)
			return nil
		case err != nil:
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			return fmt.Errorf("aggregate: fetch %s/%d: %w", part.Topic, part.ID, err)
		}
		if len(msgs) == 0 {
			continue
		}
		lastInput = time.Now()
		b, err := w.prepare(bctx, msgs)
		if err != nil {
			if derr := w.drain(); derr != nil {
				return w.stopped(derr)
			}
			return w.stopped(err)
		}
		if err := w.submit(bctx, b); err != nil {
			return w.stopped(err)
		}
	}
}

// stopped maps a batch error to Handle's result: losing the partition
// (fencing) or cancellation ends the claim quietly; anything else is
// returned.
func (w *worker) stopped(err error) error {
	if errors.Is(err, state.ErrFenced) {
		if lerr := w.checkLost(); lerr != nil {
			return lerr
		}
	}
	if errors.Is(err, state.ErrFenced) || errors.Is(err, context.Canceled) {
		w.log.Info("stopped processing partition", "reason", err, "next_offset", w.next)
		return nil
	}
	return err
}

// worker is the per-partition state of a Handle call: its cache, the
// batches in flight and the scratch space reused across batches.
//
// Batches are pipelined: while batch N's outputs are written and its state
// committed (each by its own goroutine, strictly in batch order: outputs of
// N+1 are written after those of N, and N+1 is committed only after N
// was), the handler's goroutine fetches and applies batch N+1 on top of
// batch N's uncommitted states. The cache therefore holds the latest
// states, committed or not (each entry records its batch); an uncommitted
// state that the cache evicts is kept in evicted until its batch is
// committed, so lookups never read a stale state from the store. At most
// maxInFlight batches are in flight. If a batch fails, the ones after it
// are neither written nor committed, and the cache is dropped. Everything
// but the write/commit goroutines runs on the handler's goroutine.
type worker struct {
	p      *Processor
	part   state.Partition
	claim  stream.Claim
	gen    int64
	next   int64 // next offset committed (as far as the handler has seen)
	from   int64 // first offset of the next batch (after those in flight)
	log    *slog.Logger
	cache  *cache
	effs   Effects
	es     estimators.Estimates
	rs     recordStore // storage of the estimate records being encoded
	pos    string      // topic/partition@ prefix for dead letters
	gauges partitionGauges
	rb     *reorderBuf
	rated  bool // appendEstimates published a rate (see countRated)

	seq       uint64       // the last prepared batch
	committed uint64       // the last committed batch
	inflight  []*flight    // oldest first
	free      []*batchWork // recycled batches
	evicted   map[string]evictedState
	scratch   []byte     // encoding buffer
	pools     *sitePools // per-site pooled priors (pooled.go)
	final     bool       // emitFinal: the priors are already folded
	det       *detector  // site profiles and the alert book (site.go, alerts.go)
	// storeMu serialises the partition's store calls (Get by the
	// handler's goroutine, Commit by a batch's goroutine): the Store
	// contract allows one call per partition at a time.
	storeMu sync.Mutex
}

// evictedState is an uncommitted state evicted from the cache.
type evictedState struct {
	seq uint64
	enc []byte
}

// maxInFlight bounds the batches whose outputs or commit are pending.
const maxInFlight = 2

func (p *Processor) newWorker(part state.Partition, c stream.Claim, next int64, log *slog.Logger) *worker {
	cch := newCache(p.cfg.CacheObjects, p.budget)
	return &worker{p: p, part: part, claim: c, gen: c.Generation(), next: next, from: next, log: log, cache: cch,
		pos: part.Topic + "/" + strconv.Itoa(int(part.ID)) + "@", gauges: p.metrics.partition(part), pools: newSitePools(p.cfg.Model.PoolSites),
		det: newDetector(&p.cfg.Model)}
}

// pending is one object of a batch: its cache entry, worked on in place.
type pending struct {
	name    string
	e       *entry // valid during prepare only
	visits  bool   // the batch applied visits
	access  bool   // the batch applied accesses
	due     bool   // the estimate is due for publication
	changed bool   // state to write
}

// batchWork is one prepared batch: its objects' new states, the outputs
// and the state writes. It is immutable once submitted, until recycled.
type batchWork struct {
	seq      uint64
	from, to int64
	first    int64 // offset of the first input message
	n        int   // input messages
	start    time.Time
	obs      []records.Observation
	seen     int64   // latest event time read so far on the partition (Unix ms; held ones included), 0: none
	offs     []int64 // input offset of each of obs
	order    []int32 // per decoded observation: index into objs
	idx      map[string]int32
	objs     []pending
	misses   []string
	missIdx  []int32
	vals     [][]byte
	out      []stream.Message
	writes   []state.Write
	enc      []byte // slab of the encoded states
	ends     []int  // end of each write's value in enc
}

func (w *worker) newBatch() *batchWork {
	if n := len(w.free); n > 0 {
		b := w.free[n-1]
		w.free = w.free[:n-1]
		return b
	}
	return &batchWork{idx: map[string]int32{}}
}

// recycle returns b for reuse, dropping references to large data.
func (w *worker) recycle(b *batchWork) {
	clear(b.obs)
	clear(b.objs)
	clear(b.misses)
	clear(b.vals)
	clear(b.out)
	clear(b.writes)
	clear(b.idx)
	b.offs = b.offs[:0]
	b.obs, b.order, b.objs, b.misses, b.missIdx, b.vals = b.obs[:0], b.order[:0], b.objs[:0], b.misses[:0], b.missIdx[:0], b.vals[:0]
	b.out, b.writes, b.enc, b.ends = b.out[:0], b.writes[:0], b.enc[:0], b.ends[:0]
	w.free = append(w.free, b)
}

// flight is a submitted batch: written, then committed, by one goroutine.
type flight struct {
	b       *batchWork
	written chan struct{} // closed when the outputs are written or failed
	done    chan struct{} // closed when committed or failed
	wErr    error         // set before written is closed
	err     error         // set before done is closed
}

// lookup returns the cache entry holding the latest state of name,
// bringing an evicted uncommitted state back into the cache. ok is false if
// the store must be read.
func (w *worker) lookup(name string) (*entry, bool) {
	if e, ok := w.cache.entry(name); ok {
		return e, true
	}
	if len(w.evicted) > 0 {
		if ev, ok := w.evicted[name]; ok {
			delete(w.evicted, name)
			e := w.cache.add(name)
			e.seq = ev.seq
			w.cache.setEnc(e, ev.enc)
			return e, true
		}
	}
	return nil, false
}

// trimCache applies the cache limit after a batch, keeping evicted
// uncommitted states until their batch is committed.
func (w *worker) trimCache() {
	w.cache.trim(func(e *entry) {
		if e.seq > w.committed {
			if w.evicted == nil {
				w.evicted = map[string]evictedState{}
			}
			w.evicted[e.name] = evictedState{seq: e.seq, enc: e.enc}
		}
	})
}

// prepare decodes msgs (one partition, offset order), applies them and
// encodes the batch's outputs and states. It fails only if the store
// cannot be read.
func (w *worker) prepare(ctx context.Context, msgs []stream.Message) (*batchWork, error) {
	p := w.p
	b := w.newBatch()
	b.start = time.Now()
	p.metrics.batchSize.Observe(float64(len(msgs)))
	// msgs empty: the input ended, release the whole reorder buffer.
	flush := len(msgs) == 0
	b.from, b.to, b.n = w.from, w.from, 0
	b.first = w.from
	if !flush {
		b.to = max(w.from, msgs[len(msgs)-1].Offset+1)
	}
	w.seq++
	b.seq = w.seq

	// Decode; observations behind the watermark are applied at once, the
	// others go into the reorder buffer, which after each message releases
	// those the watermark passed in event-time order (reorder.go).
	first := true
	for i := range msgs {
		if w.rb.replaying(msgs[i].Offset) {
			// Re-read after a restart only to refill the buffer.
			if o, err := records.DecodeObservation(msgs[i].Value); err == nil {
				w.rb.refill(&o, msgs[i].Offset)
			}
			continue
		}
		if first {
			first = false
			b.first = msgs[i].Offset
			w.rb.setLateness(p.cfg.ReorderWindow)
		}
		b.n++
		p.stats.messages.Add(1)
		o, err := records.DecodeObservation(msgs[i].Value)
		if err != nil {
			p.metrics.deadLetters.WithLabelValues("decode").Inc()
			p.stats.rejected.Add(1)
			dl := records.NewDeadLetter(p.now(), "aggregator", msgs[i].Topic,
				w.pos+strconv.FormatInt(msgs[i].Offset, 10), "decode", err, msgs[i].Value)
			b.out = append(b.out, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
			continue
		}
		p.metrics.observations.WithLabelValues(string(o.Kind)).Inc()
		p.stats.observations.Add(1)
		t := o.Time.UnixMilli()
		if w.rb.hasMax && t < w.rb.maxSeen {
			p.stats.reordered.Add(1)
			p.metrics.late.WithLabelValues("reordered").Inc()
		}
		if w.rb.late(t) {
			// Behind the watermark: applied at once, in arrival order; its
			// object decides (Object.Apply) whether it is still in time.
			b.obs = append(b.obs, o)
			b.offs = append(b.offs, msgs[i].Offset)
		} else {
			w.rb.push(&o, msgs[i].Offset)
		}
		b.obs, b.offs = w.rb.release(b.obs, b.offs, false)
	}
	b.obs, b.offs = w.rb.release(b.obs, b.offs, flush)
	b.seen = 0
	if w.rb.hasMax {
		b.seen = w.rb.maxSeen
	}
	// Group by object keeping each object's order.
	for i := range b.obs {
		o := &b.obs[i]
		j, ok := b.idx[o.Object]
		if !ok {
			j = int32(len(b.objs))
			b.idx[o.Object] = j
			b.objs = append(b.objs, pending{name: o.Object})
		}
		b.order = append(b.order, j)
	}
	// Load: batches in flight and cache first, then one store read for
	// the misses.
	var hits int
	for j := range b.objs {
		pd := &b.objs[j]
		if e, ok := w.lookup(pd.name); ok {
			pd.e = e
			hits++
			if _, err := w.cache.load(e); err != nil {
				w.corrupt(pd.name, err)
			}
			continue
		}
		b.misses = append(b.misses, pd.name)
		b.missIdx = append(b.missIdx, int32(j))
	}
	p.metrics.cache.WithLabelValues("hit").Add(float64(hits))
	p.metrics.cache.WithLabelValues("miss").Add(float64(len(b.misses)))
	if len(b.misses) > 0 {
		t0 := time.Now()
		w.storeMu.Lock()
		vals, err := p.store.Get(ctx, w.part, b.misses, b.vals[:0])
		w.storeMu.Unlock()
		b.vals = vals
		p.metrics.storeLatency.WithLabelValues("get").Observe(time.Since(t0).Seconds())
		if err != nil {
			return nil, fmt.Errorf("aggregate: load %d objects of %s/%d: %w", len(b.misses), w.part.Topic, w.part.ID, err)
		}
		for k, v := range vals {
			pd := &b.objs[b.missIdx[k]]
			pd.e = w.cache.add(pd.name)
			if v == nil {
				p.stats.objects.Add(1)
			} else {
				w.cache.setEnc(pd.e, bytes.Clone(v))
			}
			if _, err := w.cache.load(pd.e); err != nil {
				w.corrupt(pd.name, err)
			}
		}
	}
	if err := w.loadSites(ctx, b); err != nil {
		return nil, err
	}
	// Apply in order.
	var outcomes [len(outcomeNames)]int
	touchedSites := map[*siteEntry]string{}
	var reordered, dropped int
	for i := range b.obs {
		pd := &b.objs[b.order[i]]
		w.effs.Reset()
		oc, se := w.det.apply(pd.name, pd.e.obj, &b.obs[i], &w.effs)
		if se != nil && (w.effs.Accesses || w.effs.Visits) {
			touchedSites[se] = Site(pd.name)
		}
		if int(oc) < len(outcomes) {
			outcomes[oc]++
		} else {
			p.metrics.outcomes.WithLabelValues(oc.String()).Inc()
		}
		if w.effs.Reordered > 0 {
			reordered++
		}
		if oc == Late {
			// Older than its object's latest observation by more than the
			// allowed lateness: not applied, written to the late output.
			dropped++
			pos := w.pos + strconv.FormatInt(b.offs[i], 10)
			in, _ := json.Marshal(&b.obs[i])
			b.out = append(b.out, w.encode(p.cfg.LateTopic, pd.name, lateRecord(p.now(), pos, &b.obs[i], pd.e.obj.LastTime(), p.cfg.Model.LateTolerance, in)))
		}
		if oc == Duplicate || oc == Late {
			continue
		}
		pd.changed = true
		pd.visits = pd.visits || w.effs.Visits
		pd.access = pd.access || w.effs.Accesses
		pd.due = pd.due || w.effs.Due
		b.out = w.appendAlerts(b.out)
		for _, per := range w.effs.Periods {
			b.out = append(b.out, w.encode(p.cfg.AccessReportsTopic, pd.name, pd.e.obj.AccessReport(pd.name, per, &p.cfg.Model, &w.es)))
		}
	}
	p.stats.countOutcomes(outcomes[:])
	for oc, n := range outcomes {
		if n > 0 && Outcome(oc) != Late { // counted as late_events_total{action="late_output"}
			p.metrics.outcomes.WithLabelValues(Outcome(oc).String()).Add(float64(n))
		}
	}
	if reordered > 0 {
		p.metrics.late.WithLabelValues("applied_at_latest").Add(float64(reordered))
	}
	if dropped > 0 {
		p.metrics.late.WithLabelValues("late_output").Add(float64(dropped))
	}
	// Outputs and the encoded states. The states share one slab; each
	// value is capped so that appending to one cannot clobber the next.
	for j := range b.objs {
		pd := &b.objs[j]
		if !pd.changed {
			w.cache.release(pd.e)
			continue
		}
		pd.e.seq = b.seq
		if p.cfg.Emit == EmitUpdate && pd.due {
			b.out = w.appendEstimates(b.out, pd.name, pd.e.obj, pd.visits, pd.access)
		}
		start := len(b.enc)
		b.enc = pd.e.obj.AppendBinary(b.enc)
		w.cache.store(pd.e, b.enc[start:])
		p.metrics.stateBytes.Observe(float64(len(b.enc) - start))
		b.writes = append(b.writes, state.Write{Object: pd.name})
		b.ends = append(b.ends, len(b.enc))
	}
	if pos := w.rb.position(b.to); pos != nil && (b.to > b.from || flush) {
		// The buffer's position, committed with the states (reorder.go).
		b.enc = append(b.enc, pos...)
		b.writes = append(b.writes, state.Write{Object: reorderObject})
		b.ends = append(b.ends, len(b.enc))
	}
	start := 0
	for k, end := range b.ends {
		b.writes[k].Value = b.enc[start:end:end]
		start = end
	}
	w.writeSites(b, touchedSites)
	for j := range b.objs {
		b.objs[j].e = nil
	}
	w.trimCache()
	w.from = b.to
	w.gauges.held.Set(float64(w.rb.len()))
	return b, nil
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

// finish writes f's outputs after prev's, then commits f after prev.
func (w *worker) finish(ctx context.Context, f, prev *flight) {
	p := w.p
	b := f.b
	defer close(f.done)
	func() {
		defer close(f.written)
		if prev != nil {
			<-prev.written
			if prev.wErr != nil {
				f.wErr = prev.wErr
				return
			}
		}
		if len(b.out) > 0 {
			f.wErr = w.writeOutputs(ctx, b.out, w.batchPosition(b), true)
		}
	}()
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
	if b.to == b.from && len(b.writes) == 0 {
		// Nothing to commit: messages re-read only to refill the reorder
		// buffer.
		return
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
		f.err = err
		return
	}
	// Claim.MarkCommitted is called from this goroutine: the Kafka claim's
	// is atomic and never blocks.
	w.claim.MarkCommitted(b.to)
	w.gauges.next.Set(float64(b.to))
	w.gauges.committed(b.obs, b.seen)
	p.metrics.committed.Add(float64(b.n))
	p.committed.Add(int64(b.n))
	p.metrics.batchLatency.Observe(time.Since(b.start).Seconds())
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

// checkStored compares the partition's stored next offset with the last
// offset this handler committed (no batch may be in flight). A difference
// means the store lost or gained commits behind this handler's back; the
// handler then ends with an error, so that the source reassigns the
// partition and the next handler resumes from the stored offset.
func (w *worker) checkStored(ctx context.Context, gen int64) error {
	w.storeMu.Lock()
	stored, err := w.p.store.Claim(ctx, w.part, gen)
	w.storeMu.Unlock()
	if err != nil {
		return fmt.Errorf("aggregate: check stored offset of %s/%d: %w", w.part.Topic, w.part.ID, err)
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

// ReasonOutputRejected is the dead-letter reason of an output record that
// the sink refused permanently (stream.ErrRejected): the dead letter takes
// its place, naming the output's topic (as Format), key, size and the
// sink's reason.
const ReasonOutputRejected = "output_rejected"

// maxRejectedShown caps the bytes of a rejected output's key and value
// copied into its dead letter, so that the dead letter stays small.
const maxRejectedShown = 1024

// batchPosition locates b's input for dead letters of its outputs:
// "topic/partition@first-last" (inclusive), or "@offset" for one message.
func (w *worker) batchPosition(b *batchWork) string {
	last := b.to - 1
	if b.first == last {
		return w.pos + strconv.FormatInt(last, 10)
	}
	return w.pos + strconv.FormatInt(b.first, 10) + "-" + strconv.FormatInt(last, 10)
}

// writeOutputs writes out to the sink, retrying transient errors if retry
// is set. Outputs the sink rejects permanently (stream.ErrRejected) are
// replaced by dead letters with reason ReasonOutputRejected, located at
// position, which are then written (retried likewise); the other outputs
// were written, so nothing is lost and the batch may be committed. A
// rejected dead letter, whether an input's or a rejected output's, cannot
// be replaced: writeOutputs then returns an error wrapping both
// stream.ErrRejected and stream.ErrFatal, which stops the partition (and
// the Source) rather than skip the record or retry it forever.
func (w *worker) writeOutputs(ctx context.Context, out []stream.Message, position string, retry bool) error {
	p := w.p
	attempt := func(what string, f func() error) error {
		if retry {
			return w.retry(ctx, what, f)
		}
		return f()
	}
	err := attempt("write outputs", func() error {
		t0 := time.Now()
		err := p.sink.Write(ctx, out...)
		p.metrics.sinkLatency.Observe(time.Since(t0).Seconds())
		return err
	})
	var rej *stream.RejectedError
	if !errors.As(err, &rej) {
		if err == nil {
			p.metrics.outputs.Add(float64(len(out)))
		}
		return err
	}
	dls, err := w.replaceRejected(out, rej, position)
	if err != nil {
		return err
	}
	p.metrics.outputs.Add(float64(len(out) - len(dls)))
	err = attempt("write dead letters", func() error { return p.sink.Write(ctx, dls...) })
	if errors.As(err, &rej) {
		for _, r := range rej.Rejected {
			topic := p.cfg.DeadLetterTopic
			if r.Index >= 0 && r.Index < len(dls) {
				topic = dls[r.Index].Topic
			}
			p.metrics.rejected.WithLabelValues(topic, r.Reason).Inc()
		}
		w.log.Error("dead letters of rejected outputs were rejected too; stopping the partition", "dead_letters", len(dls), "err", err)
		return fmt.Errorf("aggregate: %s/%d: writing the dead letters of %d rejected outputs: %w: %w", w.part.Topic, w.part.ID, len(dls), err, stream.ErrFatal)
	}
	if err != nil {
		return fmt.Errorf("aggregate: %s/%d: writing the dead letters of %d rejected outputs: %w", w.part.Topic, w.part.ID, len(dls), err)
	}
	p.metrics.outputs.Add(float64(len(dls)))
	p.metrics.deadLetters.WithLabelValues(ReasonOutputRejected).Add(float64(len(dls)))
	return nil
}

// replaceRejected returns the dead letters replacing the outputs rej
// lists, counting and logging each. It fails (wrapping stream.ErrFatal) if
// a rejected output is itself a dead letter or rej does not index out.
func (w *worker) replaceRejected(out []stream.Message, rej *stream.RejectedError, position string) ([]stream.Message, error) {
	p := w.p
	dls := make([]stream.Message, 0, len(rej.Rejected))
	for _, r := range rej.Rejected {
		if r.Index < 0 || r.Index >= len(out) {
			return nil, fmt.Errorf("aggregate: %s/%d: the sink rejected message %d of a write of %d: %w: %w", w.part.Topic, w.part.ID, r.Index, len(out), rej, stream.ErrFatal)
		}
		m := &out[r.Index]
		p.metrics.rejected.WithLabelValues(m.Topic, r.Reason).Inc()
		key, value := m.Key, m.Value
		if len(key) > maxRejectedShown {
			key = key[:maxRejectedShown]
		}
		if len(value) > maxRejectedShown {
			value = value[:maxRejectedShown]
		}
		if m.Topic == p.cfg.DeadLetterTopic {
			w.log.Error("dead letter rejected by the sink; stopping the partition", "key", string(key), "bytes", len(m.Value), "reason", r.Reason, "err", r.Err)
			return nil, fmt.Errorf("aggregate: %s/%d: dead letter %q (%d bytes) rejected by the sink (%s): %w: %w", w.part.Topic, w.part.ID, key, len(m.Value), r.Reason, rej, stream.ErrFatal)
		}
		w.log.Error("output rejected by the sink; writing a dead letter instead", "output_topic", m.Topic, "key", string(key),
			"bytes", len(m.Value), "reason", r.Reason, "position", position, "err", r.Err)
		cause := fmt.Errorf("aggregate: output to topic %s with key %q (value of %d bytes) rejected by the sink (%s): %w", m.Topic, key, len(m.Value), r.Reason, r.Err)
		dl := records.NewDeadLetter(p.now(), "aggregator", m.Topic, position, ReasonOutputRejected, cause, value)
		dls = append(dls, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
	}
	return dls, nil
}

// retry runs f until it succeeds, fails with a fencing error or a permanent
// rejection (stream.ErrRejected), or ctx ends.
func (w *worker) retry(ctx context.Context, what string, f func() error) error {
	wait := backoff.New(w.p.cfg.RetryBackoff, 30*time.Second) // exponential with jitter
	for {
		err := f()
		if err == nil || errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrOffsetMismatch) || errors.Is(err, stream.ErrClosed) ||
			errors.Is(err, stream.ErrRejected) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := wait.Next()
		w.log.Warn("retrying", "op", what, "err", err, "backoff", d)
		w.p.metrics.retries.WithLabelValues(what).Inc()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

func (w *worker) appendEstimates(out []stream.Message, name string, obj *Object, change, access bool) []stream.Message {
	if change {
		if rec, ok := obj.changeEstimate(name, &w.p.cfg.Model, w.det.siteOf(name), &w.es, &w.rs); ok {
			w.pools.apply(&rec, obj, &w.p.cfg.Model, !w.final)
			out = append(out, w.encodeEstimate(w.p.cfg.EstimatesTopic, name, &rec))
			w.p.metrics.estimates.WithLabelValues(records.EstimateChange).Inc()
			w.p.stats.changeEst.Add(1)
			w.countRated(rec.RatePerS != nil)
		}
	}
	if access {
		if rec, ok := obj.accessEstimate(name, &w.p.cfg.Model, w.det.siteOf(name), &w.es, &w.rs); ok {
			out = append(out, w.encodeEstimate(w.p.cfg.EstimatesTopic, name+AccessKeySuffix, &rec))
			w.p.metrics.estimates.WithLabelValues(records.EstimateAccess).Inc()
			w.p.stats.accessEst.Add(1)
			w.countRated(rec.RatePerS != nil)
		}
	}
	return out
}

// emitFinal publishes every cached object's estimates, ordered by name.
// Estimates the sink rejects are replaced by dead letters located at
// "topic/partition@final", as in writeOutputs; write errors are not
// retried.
func (w *worker) emitFinal(ctx context.Context) error {
	names := w.cache.names()
	sort.Strings(names)
	for _, n := range names { // the site priors see every object first (pooled.go)
		e, _ := w.cache.entry(n)
		obj, err := w.cache.load(e)
		if err != nil {
			w.corrupt(n, err)
		}
		w.pools.fold(Site(n), obj, &w.p.cfg.Model)
		w.cache.release(e)
	}
	w.final = true
	var out []stream.Message
	for _, n := range names {
		e, _ := w.cache.entry(n)
		obj, err := w.cache.load(e)
		if err != nil {
			w.corrupt(n, err)
		}
		w.rated = false
		out = w.appendEstimates(out, n, obj, true, true)
		w.cache.release(e)
		w.p.stats.finalObjects.Add(1)
		if w.rated {
			w.p.stats.finalWithRate.Add(1)
		}
		if len(out) >= 1000 {
			if err := w.writeOutputs(ctx, out, w.pos+"final", false); err != nil {
				return fmt.Errorf("aggregate: final estimates: %w", err)
			}
			out = out[:0]
		}
	}
	if len(out) > 0 {
		if err := w.writeOutputs(ctx, out, w.pos+"final", false); err != nil {
			return fmt.Errorf("aggregate: final estimates: %w", err)
		}
	}
	return nil
}

// encode marshals v as a message. Records are plain data, so Marshal cannot
// fail; a failure is a programming error and panics.
func (w *worker) encode(topic, key string, v any) stream.Message {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("aggregate: marshal %T: %v", v, err))
	}
	return stream.Message{Topic: topic, Key: []byte(key), Value: b}
}

// encodeEstimate is encode for estimates, with records.AppendEstimateJSON
// (the same bytes as json.Marshal, without reflection).
func (w *worker) encodeEstimate(topic, key string, rec *records.Estimate) stream.Message {
	b, ok := records.AppendEstimateJSON(w.scratch[:0], rec)
	if !ok {
		return w.encode(topic, key, *rec)
	}
	w.scratch = b
	// Key and value in one allocation.
	kv := make([]byte, len(key)+len(b))
	copy(kv, key)
	copy(kv[len(key):], b)
	return stream.Message{Topic: topic, Key: kv[:len(key):len(key)], Value: kv[len(key):]}
}
