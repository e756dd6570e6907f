package aggregate

import (
	"context"
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
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// The Processor's code, room by room:
//
//	config.go     Config, Model and AlertConfig: defaults and validation
//	processor.go  Processor and Handle: claim, seek, the partition's loop
//	              and its exits
//	batch.go      one batch: decode → load → apply → encode
//	inflight.go   batches in flight: submit, write and commit, reap and
//	              drain, the idle check
//	outputs.go    outputs: write, replace rejected ones by dead letters,
//	              retry, final emission, encoding
//	published.go  the published estimates handed to an EstimateIndex
//
// and of the Object a batch applies observations to: object.go (the state
// and its effects), apply.go (an observation becomes state),
// object_encoding.go (the state's bytes in the store), estimate.go (state
// becomes an estimate).

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
	grace   time.Duration    // store.ExpiryGrace() (expiry.go)

	committed atomic.Int64 // input messages committed, over all partitions
	stats     statCounters
	budget    *cacheBudget    // CacheBytes, shared by the partitions' caches
	inflight  *inflightBudget // InflightBytes, shared by the partitions' batches
	prep      sync.Pool       // *prepBufs: prepare's scratch buffers
	outChunks sync.Pool       // *[]byte: chunks of output bytes (outSlab)
	index     EstimateIndex   // nil: none (WithEstimateIndex)
	// claimLevel is the level of the "partition claimed" line: info, or
	// debug for a local input (WithLocalInput).
	claimLevel slog.Level

	mu    sync.Mutex
	owned map[state.Partition]bool
	seen  map[state.Partition]int64 // stored offsets claims found (stateloss.go)

	lossMetrics *stateLossMetrics
}

// NewProcessor returns a Processor configured by cfg.WithDefaults(). now
// stamps dead-letter records (use time.Now); everything else depends only
// on the input. opts add optional dependencies (WithEstimateIndex).
func NewProcessor(cfg Config, store state.Store, sink stream.Sink, logger *slog.Logger, reg prometheus.Registerer, now func() time.Time, opts ...Option) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
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
	inflight := newInflightBudget(cfg.InflightBytes)
	if err := registerInflight(reg, inflight); err != nil {
		return nil, err
	}
	p := &Processor{cfg: cfg, store: store, sink: sink, log: logger, metrics: m, now: now, grace: store.ExpiryGrace(),
		owned: map[state.Partition]bool{}, seen: map[state.Partition]int64{}, lossMetrics: lm, budget: budget,
		inflight: inflight}
	for _, o := range opts {
		o(p)
	}
	return p, nil
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
	next, err := p.claim(ctx, part, c.Generation(), log)
	if errors.Is(err, errClaimEnded) {
		return nil
	}
	if err != nil {
		return err
	}
	if next, err = p.checkClaimed(c, part, next, log); err != nil {
		return err
	}
	rb, seek, err := p.restoreReorder(ctx, part, next, log)
	if errors.Is(err, errClaimEnded) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.SeekTo(seek); err != nil {
		return fmt.Errorf("aggregate: seek %s/%d to %d: %w", part.Topic, part.ID, seek, err)
	}
	log.Log(ctx, p.claimLevel, "partition claimed", "next_offset", next, "reread_from", seek)
	p.setOwned(part, true)
	defer p.setOwned(part, false)

	w := p.newWorker(ctx, part, c, next, log)
	defer p.metrics.forget(part)
	w.rb = rb
	w.gauges.claimed(next, rb)
	defer w.cache.close()
	return w.run(ctx)
}

// claim makes generation gen the owner of part in the store and returns
// the stored next offset (-1: none). When the store holds a newer epoch,
// either this claim is late (a newer generation owns the partition and this
// one's context is about to end) or the consumer group was deleted and
// created again, so its generations restarted below the stored epoch: claim
// waits TakeoverDelay, long enough for a late generation to notice its end
// (heartbeats), then takes the partition over unless ctx ended meanwhile
// (then it returns -1 and errClaimEnded). The old epoch stays fenced, and
// the stored offset keeps the state effectively-once either way. A
// transient store error (Redis unreachable) is retried in place with
// backoff (retryStore) rather than ending the handler, which would make
// the member rejoin the group and rebalance every member's partitions.
func (p *Processor) claim(ctx context.Context, part state.Partition, gen int64, log *slog.Logger) (int64, error) {
	var next int64
	err := p.retryStore(ctx, "claim", log, func() (err error) {
		next, err = p.store.Claim(ctx, part, gen)
		return err
	})
	if errors.Is(err, state.ErrFenced) {
		log.Warn("stored epoch is newer than this generation; taking over unless the generation ends", "wait", p.cfg.TakeoverDelay, "err", err)
		select {
		case <-ctx.Done():
			return -1, errClaimEnded
		case <-time.After(p.cfg.TakeoverDelay):
		}
		err = p.retryStore(ctx, "claim", log, func() (err error) {
			next, err = p.store.Takeover(ctx, part, gen)
			return err
		})
		if err == nil {
			p.metrics.fenced.WithLabelValues("takeover").Inc()
			log.Warn("took the partition over from an earlier consumer group's epoch")
		}
	}
	if errors.Is(err, errClaimEnded) {
		return -1, err
	}
	if err != nil {
		return -1, fmt.Errorf("aggregate: claim %s/%d: %w", part.Topic, part.ID, err)
	}
	return next, nil
}

// errClaimEnded is the error of claim, restoreReorder and a batch's
// store reads (retryRead) when ctx ended before they could finish (during
// the takeover wait or a retry's backoff): the claim was revoked or the
// process is stopping. It ends the handler quietly (nil).
var errClaimEnded = errors.New("aggregate: claim ended while the state store was being retried")

// permanentStoreError reports whether a store error is one that retrying
// cannot cure: fencing (state.ErrFenced: a newer epoch owns the partition),
// state.ErrKeyCollision, state.ErrOffsetMismatch, stream.ErrFatal or a
// cancellation. Any other error (a connection refused, a timeout, a Redis
// LOADING or READONLY reply) is taken as transient.
func permanentStoreError(err error) bool {
	return errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrKeyCollision) || errors.Is(err, state.ErrOffsetMismatch) ||
		errors.Is(err, stream.ErrFatal) || errors.Is(err, context.Canceled)
}

// retryStore runs f, a store call that starts a claim (Claim, Takeover,
// the initial load), reads a batch's states (retryRead) or checks a fenced
// partition (checkLost), until it succeeds, fails with an error that retrying
// cannot cure (permanentStoreError), or ctx ends (then it returns
// errClaimEnded). A transient error is retried after RetryBackoff,
// doubling up to 30s, with jitter, as commits are. A streak of failures is
// logged once (a warning) and its end once (info); each retry counts in
// changerate_aggregator_retries_total{op}.
func (p *Processor) retryStore(ctx context.Context, op string, log *slog.Logger, f func() error) error {
	var wait *backoff.Backoff
	failures := 0
	for {
		err := f()
		if err == nil {
			if failures > 0 {
				log.Info("state store answers again; continuing", "op", op, "retries", failures)
			}
			return nil
		}
		if ctx.Err() != nil {
			return errClaimEnded
		}
		if permanentStoreError(err) {
			return err
		}
		if wait == nil {
			wait = backoff.New(p.cfg.RetryBackoff, 30*time.Second)
			log.Warn("state store failed; retrying with backoff until it answers or the partition is revoked", "op", op, "err", err)
		}
		failures++
		p.metrics.retries.WithLabelValues(op).Inc()
		t := time.NewTimer(wait.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return errClaimEnded
		case <-t.C:
		}
	}
}

// setOwned records whether this processor owns part (see Owned).
func (p *Processor) setOwned(part state.Partition, owned bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owned {
		p.owned[part] = true
	} else {
		delete(p.owned, part)
	}
}

// run is the partition's loop: fetch a batch, take its share of the
// in-flight budget (inflight_budget.go), prepare it (batch.go) and submit
// it (inflight.go), until one of these exits, each of which first
// drains the batches in flight:
//   - the input ends (io.EOF): the reorder buffer is released, alerts
//     flushed and, with EmitFinal, every estimate emitted; returns nil;
//   - the claim is revoked (stream.ErrRevoked) or ctx ends (SIGTERM): the
//     batches in flight still get DrainTimeout to write and commit, then
//     are abandoned uncommitted; returns nil;
//   - a fetch fails otherwise: returns the fetch error;
//   - a batch fails (store read, output write, commit): a fencing error
//     (a newer generation owns the partition) or cancellation returns nil,
//     anything else is returned (see stopped);
//   - the idle check finds the stored offset moved (verifyStoredOffset):
//     returns an error wrapping state.ErrOffsetMismatch.
func (w *worker) run(ctx context.Context) error {
	p := w.p
	// A batch that was fetched is finished (outputs written, state
	// committed) even when ctx is cancelled meanwhile, within DrainTimeout.
	bctx, cancelBatch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBatch()
	stopDrain := context.AfterFunc(ctx, func() { time.AfterFunc(p.cfg.DrainTimeout, cancelBatch) })
	defer stopDrain()
	lastInput := time.Now()
	for {
		msgs, err := w.fetch(ctx)
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			if err := w.idle(bctx, time.Since(lastInput)); err != nil {
				return w.stopped(err)
			}
			continue
		}
		switch {
		case err == io.EOF:
			return w.endOfInput(bctx)
		case errors.Is(err, stream.ErrRevoked) || ctx.Err() != nil:
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			w.log.Info("partition released", "next_offset", w.next)
			return nil
		case err != nil:
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			return fmt.Errorf("aggregate: fetch %s/%d: %w", w.part.Topic, w.part.ID, err)
		}
		if len(msgs) == 0 {
			continue
		}
		lastInput = time.Now()
		held, err := p.inflight.acquire(ctx, p.inflight.estimate(msgs))
		if err != nil { // ctx ended while waiting: as a revocation
			if err := w.drain(); err != nil {
				return w.stopped(err)
			}
			w.log.Info("partition released", "next_offset", w.next)
			return nil
		}
		b, err := w.prepare(bctx, msgs)
		if err != nil {
			p.inflight.release(held)
			if derr := w.drain(); derr != nil {
				return w.stopped(derr)
			}
			return w.stopped(err)
		}
		fp, used := b.footprint()
		p.inflight.learn(len(msgs), used)
		b.held = p.inflight.resize(held, fp)
		if err := w.submit(bctx, b); err != nil {
			return w.stopped(err)
		}
	}
}

// fetch returns the next batch of input. While the handler has idle work
// (see idleWait) the fetch waits at most that long and then fails with
// context.DeadlineExceeded.
func (w *worker) fetch(ctx context.Context) ([]stream.Message, error) {
	idle := w.p.idleWait(w.rb.len() > 0)
	if idle <= 0 {
		return w.claim.Fetch(ctx, w.p.inflight.batchLimit(w.p.cfg.BatchSize))
	}
	fctx, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	return w.claim.Fetch(fctx, w.p.inflight.batchLimit(w.p.cfg.BatchSize))
}

// endOfInput finishes a finite input: it applies what the reorder buffer
// holds, drains the batches in flight, flushes the held alerts and, with
// EmitFinal, emits every object's estimate.
func (w *worker) endOfInput(ctx context.Context) error {
	if err := w.releaseIdle(ctx); err != nil {
		return w.stopped(err)
	}
	if err := w.drain(); err != nil {
		return w.stopped(err)
	}
	if err := w.flushAlerts(ctx); err != nil {
		return w.stopped(err)
	}
	if w.p.cfg.Emit == EmitFinal {
		return w.emitFinal(ctx)
	}
	return nil
}

// stopped maps a batch error to Handle's result: losing the partition
// (fencing), cancellation or the end of the claim while a store read was
// being retried (errClaimEnded) ends the claim quietly; anything else is
// returned.
func (w *worker) stopped(err error) error {
	if errors.Is(err, state.ErrFenced) {
		if lerr := w.checkLost(); lerr != nil {
			return lerr
		}
	}
	if errors.Is(err, state.ErrFenced) || errors.Is(err, context.Canceled) || errors.Is(err, errClaimEnded) {
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
	p *Processor
	// hctx is Handle's context: it ends when the claim is revoked or the
	// process stops. Store reads retried in place (retryRead, checkLost)
	// give up when it ends; the batches' own store calls use the batch
	// context (run), which outlives it by DrainTimeout.
	hctx  context.Context
	part  state.Partition
	claim stream.Claim
	gen   int64
	next  int64 // next offset committed (as far as the handler has seen)
	from  int64 // first offset of the next batch (after those in flight)
	log   *slog.Logger
	cache *cache
	effs  Effects
	es    estimators.Estimates
	rs    recordStore // storage of the estimate records being encoded
	// siteView holds the prior of a PriorOnly site for an estimate
	// (PriorView).
	siteView SiteState
	pos      string // topic/partition@ prefix for dead letters
	gauges   partitionGauges
	rb       *reorderBuf
	rated    bool // appendEstimates published a rate (see countRated)
	// ratedAbove0: a rate above 0
	ratedAbove0 bool

	seq       uint64       // the last prepared batch
	committed uint64       // the last committed batch
	inflight  []*flight    // oldest first
	free      []*batchWork // recycled batches
	evicted   map[string]evictedState
	scratch   []byte                // encoding buffer
	det       *detector             // site profiles and the alert book (site.go, alerts.go)
	touched   map[*siteEntry]string // sites the batch being prepared changed, by host (apply → writeSites)
	// prefetched sums what cache.prefetch read (kept only so that its
	// loads are not dropped).
	prefetched uint64
	// estChange and estAccess count the estimates appendEstimates made
	// since the last countEstimates.
	estChange, estAccess int
	// stateBytes is the encoded state bytes per dirty object of the last
	// batch (a little more), which sizes the next batch's slab.
	stateBytes int
	// checkFailing: the last idle check could not reach the store (logged
	// once per streak).
	checkFailing bool
	// storeMu serialises the partition's store calls (Get by the
	// handler's goroutine, Commit by a batch's goroutine): the Store
	// contract allows one call per partition at a time.
	storeMu sync.Mutex
}

func (p *Processor) newWorker(ctx context.Context, part state.Partition, c stream.Claim, next int64, log *slog.Logger) *worker {
	cch := newCache(p.cfg.CacheObjects, p.budget)
	return &worker{p: p, hctx: ctx, part: part, claim: c, gen: c.Generation(), next: next, from: next, log: log, cache: cch,
		pos: part.Topic + "/" + strconv.Itoa(int(part.ID)) + "@", gauges: p.metrics.partition(part),
		det: newDetector(&p.cfg.Model)}
}
