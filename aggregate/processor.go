package aggregate

import (
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
	// step per partition. Default 2000.
	BatchSize int
	// Emit is EmitUpdate (default) or EmitFinal.
	Emit string
	// CacheObjects bounds the objects kept in memory per partition between
	// batches (a hit avoids a store read). 0 means unbounded, which
	// EmitFinal requires. Default 200000.
	CacheObjects int
	// Topics of the outputs. Defaults: stream.TopicEstimates,
	// stream.TopicAccessReports, stream.TopicAlerts, stream.TopicDeadLetter.
	EstimatesTopic, AccessReportsTopic, AlertsTopic, DeadLetterTopic string
	// RetryBackoff is the first wait before retrying a failed output write
	// or state commit; it doubles up to 30s. Default 200ms.
	RetryBackoff time.Duration
	// DrainTimeout bounds how long an in-flight batch may take to write its
	// outputs and commit after the handler's context is cancelled (SIGTERM,
	// revocation); past it the batch is abandoned uncommitted and will be
	// replayed. Default 10s.
	DrainTimeout time.Duration
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Model:              DefaultModel(),
		BatchSize:          2000,
		Emit:               EmitUpdate,
		CacheObjects:       200000,
		EstimatesTopic:     stream.TopicEstimates,
		AccessReportsTopic: stream.TopicAccessReports,
		AlertsTopic:        stream.TopicAlerts,
		DeadLetterTopic:    stream.TopicDeadLetter,
		RetryBackoff:       200 * time.Millisecond,
		DrainTimeout:       10 * time.Second,
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
	default:
		return fmt.Errorf("aggregate: Emit must be %q or %q, got %q", EmitUpdate, EmitFinal, c.Emit)
	}
	if c.CacheObjects < 0 {
		return fmt.Errorf("aggregate: CacheObjects must not be negative, got %d", c.CacheObjects)
	}
	for name, t := range map[string]string{"EstimatesTopic": c.EstimatesTopic, "AccessReportsTopic": c.AccessReportsTopic,
		"AlertsTopic": c.AlertsTopic, "DeadLetterTopic": c.DeadLetterTopic} {
		if t == "" {
			return fmt.Errorf("aggregate: %s must not be empty", name)
		}
	}
	if c.DrainTimeout <= 0 {
		return fmt.Errorf("aggregate: DrainTimeout must be positive, got %s", c.DrainTimeout)
	}
	if c.RetryBackoff <= 0 {
		return fmt.Errorf("aggregate: RetryBackoff must be positive, got %s", c.RetryBackoff)
	}
	return nil
}

// Processor aggregates the partitions a stream.Source assigns to it. Its
// Handle method is the Source's handler; handlers of different partitions
// run concurrently and share nothing but the store, the sink and the
// metrics.
//
// Delivery: per partition, each batch's outputs are written (and
// acknowledged) before the batch's states and next offset are committed in
// one atomic Store step, which checks the partition's epoch and offset. State
// is therefore effectively-once; outputs are at-least-once, and a replayed
// batch produces byte-identical outputs (they depend only on the input), so
// consumers of the compacted estimates topic see no difference.
type Processor struct {
	cfg     Config
	store   state.Store
	sink    stream.Sink
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time // dead-letter timestamps only

	committed atomic.Int64 // input messages committed, over all partitions

	mu     sync.Mutex
	owned  map[state.Partition]bool
	caches map[state.Partition]*cache // EmitFinal: kept after the handler returns
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
	return &Processor{cfg: cfg, store: store, sink: sink, log: logger, metrics: m, now: now,
		owned: map[state.Partition]bool{}, caches: map[state.Partition]*cache{}}, nil
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
		log.Warn("partition owned by a newer generation; not processing it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("aggregate: claim %s/%d: %w", part.Topic, part.ID, err)
	}
	if err := c.SeekTo(next); err != nil {
		return fmt.Errorf("aggregate: seek %s/%d to %d: %w", part.Topic, part.ID, next, err)
	}
	log.Info("partition claimed", "next_offset", next)
	p.mu.Lock()
	p.owned[part] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.owned, part)
		p.mu.Unlock()
	}()

	w := p.newWorker(part, c, next, log)
	// A batch that was fetched is finished (outputs written, state
	// committed) even when ctx is cancelled meanwhile, within DrainTimeout.
	bctx, cancelBatch := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBatch()
	stopDrain := context.AfterFunc(ctx, func() { time.AfterFunc(p.cfg.DrainTimeout, cancelBatch) })
	defer stopDrain()
	for {
		msgs, err := c.Fetch(ctx, p.cfg.BatchSize)
		switch {
		case err == io.EOF:
			if p.cfg.Emit == EmitFinal {
				return w.emitFinal(bctx)
			}
			return nil
		case errors.Is(err, stream.ErrRevoked) || ctx.Err() != nil:
			log.Info("partition released", "next_offset", w.next)
			return nil
		case err != nil:
			return fmt.Errorf("aggregate: fetch %s/%d: %w", part.Topic, part.ID, err)
		}
		if len(msgs) == 0 {
			continue
		}
		if err := w.batch(bctx, msgs); err != nil {
			if errors.Is(err, state.ErrFenced) || errors.Is(err, context.Canceled) {
				log.Info("stopped processing partition", "reason", err, "next_offset", w.next)
				return nil
			}
			return err
		}
	}
}

// worker is the per-partition state of a Handle call: its cache and the
// scratch space reused across batches.
type worker struct {
	p      *Processor
	part   state.Partition
	claim  stream.Claim
	gen    int64
	next   int64
	log    *slog.Logger
	cache  *cache
	effs   Effects
	es     estimators.Estimates
	pos    string // topic/partition@ prefix for dead letters
	gauges partitionGauges
}

func (p *Processor) newWorker(part state.Partition, c stream.Claim, next int64, log *slog.Logger) *worker {
	cch := newCache(p.cfg.CacheObjects)
	if p.cfg.Emit == EmitFinal {
		p.mu.Lock()
		p.caches[part] = cch
		p.mu.Unlock()
	}
	return &worker{p: p, part: part, claim: c, gen: c.Generation(), next: next, log: log, cache: cch,
		pos: part.Topic + "/" + strconv.Itoa(int(part.ID)) + "@", gauges: p.metrics.partition(part)}
}

// pending is one object's working copy during a batch.
type pending struct {
	name    string
	obj     Object
	visits  bool // the batch applied visits
	access  bool // the batch applied accesses
	due     bool // the estimate is due for publication
	changed bool // state to write
}

// batch applies msgs (one partition, offset order) and commits them.
func (w *worker) batch(ctx context.Context, msgs []stream.Message) error {
	p := w.p
	start := time.Now()
	p.metrics.batchSize.Observe(float64(len(msgs)))
	from, to := w.next, msgs[len(msgs)-1].Offset+1

	var out []stream.Message
	// Decode, and group by object keeping each object's order.
	obs := make([]records.Observation, 0, len(msgs))
	idx := make(map[string]int, len(msgs))
	var objs []*pending
	var order []int // per decoded observation: index into objs
	for i := range msgs {
		o, err := records.DecodeObservation(msgs[i].Value)
		if err != nil {
			p.metrics.deadLetters.WithLabelValues("decode").Inc()
			dl := records.NewDeadLetter(p.now(), "aggregator", msgs[i].Topic,
				w.pos+strconv.FormatInt(msgs[i].Offset, 10), "decode", err, msgs[i].Value)
			out = append(out, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
			continue
		}
		p.metrics.observations.WithLabelValues(string(o.Kind)).Inc()
		obs = append(obs, o)
		j, ok := idx[o.Object]
		if !ok {
			j = len(objs)
			idx[o.Object] = j
			objs = append(objs, &pending{name: o.Object})
		}
		order = append(order, j)
	}
	// Load: cache first, then one store read for the misses.
	var misses []string
	var missIdx []int
	for j, pd := range objs {
		if cached, ok := w.cache.get(pd.name); ok {
			pd.obj = *cached
			p.metrics.cache.WithLabelValues("hit").Inc()
			continue
		}
		p.metrics.cache.WithLabelValues("miss").Inc()
		misses = append(misses, pd.name)
		missIdx = append(missIdx, j)
	}
	if len(misses) > 0 {
		t0 := time.Now()
		vals, err := p.store.Get(ctx, w.part, misses, nil)
		p.metrics.storeLatency.WithLabelValues("get").Observe(time.Since(t0).Seconds())
		if err != nil {
			return fmt.Errorf("aggregate: load %d objects of %s/%d: %w", len(misses), w.part.Topic, w.part.ID, err)
		}
		for k, v := range vals {
			if v == nil {
				continue
			}
			pd := objs[missIdx[k]]
			if err := pd.obj.DecodeBinary(v); err != nil {
				// A stored value we cannot read is a bug or an incompatible
				// deployment; say so loudly and start the object afresh
				// rather than halting the partition forever.
				p.metrics.corrupt.Inc()
				w.log.Error("corrupt object state; starting it afresh", "object", pd.name, "err", err)
				pd.obj = Object{}
			}
		}
	}
	// Apply in order.
	for i := range obs {
		pd := objs[order[i]]
		w.effs.Reset()
		oc := pd.obj.Apply(&obs[i], &p.cfg.Model, &w.effs)
		p.metrics.outcomes.WithLabelValues(oc.String()).Inc()
		if w.effs.Reordered > 0 {
			p.metrics.late.WithLabelValues("reordered").Inc()
		}
		if oc == Late {
			p.metrics.late.WithLabelValues("dropped").Inc()
		}
		if oc == Duplicate || oc == Late {
			continue
		}
		pd.changed = true
		pd.visits = pd.visits || w.effs.Visits
		pd.access = pd.access || w.effs.Accesses
		pd.due = pd.due || w.effs.Due
		for _, sh := range w.effs.ChangeShifts {
			p.metrics.alerts.WithLabelValues(records.EstimateChange).Inc()
			out = append(out, w.encode(p.cfg.AlertsTopic, pd.name, Alert(pd.name, records.EstimateChange, sh)))
		}
		for _, sh := range w.effs.AccessShifts {
			p.metrics.alerts.WithLabelValues(records.EstimateAccess).Inc()
			out = append(out, w.encode(p.cfg.AlertsTopic, pd.name, Alert(pd.name, records.EstimateAccess, sh)))
		}
		for _, per := range w.effs.Periods {
			out = append(out, w.encode(p.cfg.AccessReportsTopic, pd.name, pd.obj.AccessReport(pd.name, per, &p.cfg.Model, &w.es)))
		}
	}
	// Outputs, then the atomic commit of states and offset.
	writes := make([]state.Write, 0, len(objs))
	var size int
	for _, pd := range objs {
		if !pd.changed {
			continue
		}
		if p.cfg.Emit == EmitUpdate && pd.due {
			out = w.appendEstimates(out, pd.name, &pd.obj, pd.visits, pd.access)
		}
		v := pd.obj.AppendBinary(nil)
		size += len(v)
		p.metrics.stateBytes.Observe(float64(len(v)))
		writes = append(writes, state.Write{Object: pd.name, Value: v})
	}
	if len(out) > 0 {
		if err := w.retry(ctx, "write outputs", func() error {
			t0 := time.Now()
			err := p.sink.Write(ctx, out...)
			p.metrics.sinkLatency.Observe(time.Since(t0).Seconds())
			return err
		}); err != nil {
			return err
		}
		p.metrics.outputs.Add(float64(len(out)))
	}
	err := w.retry(ctx, "commit", func() error {
		t0 := time.Now()
		err := p.store.Commit(ctx, w.part, w.gen, from, to, writes)
		p.metrics.storeLatency.WithLabelValues("commit").Observe(time.Since(t0).Seconds())
		return err
	})
	if err != nil {
		// Nothing of this batch is in the store: forget the working copies
		// and everything cached, since another owner may write from now on.
		w.cache.clear()
		if errors.Is(err, state.ErrOffsetMismatch) {
			p.metrics.fenced.WithLabelValues("offset").Inc()
			return fmt.Errorf("aggregate: %s/%d: %w", w.part.Topic, w.part.ID, err)
		}
		if errors.Is(err, state.ErrFenced) {
			p.metrics.fenced.WithLabelValues("epoch").Inc()
		}
		return err
	}
	for _, pd := range objs {
		if pd.changed {
			obj := pd.obj
			w.cache.put(pd.name, &obj)
		}
	}
	w.next = to
	w.claim.MarkCommitted(to)
	w.gauges.next.Set(float64(to))
	w.gauges.cached.Set(float64(w.cache.len()))
	p.metrics.committed.Add(float64(len(msgs)))
	p.committed.Add(int64(len(msgs)))
	p.metrics.batchLatency.Observe(time.Since(start).Seconds())
	return nil
}

// retry runs f until it succeeds, fails with a fencing error, or ctx ends.
func (w *worker) retry(ctx context.Context, what string, f func() error) error {
	backoff := w.p.cfg.RetryBackoff
	for {
		err := f()
		if err == nil || errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrOffsetMismatch) || errors.Is(err, stream.ErrClosed) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log.Warn("retrying", "op", what, "err", err, "backoff", backoff)
		w.p.metrics.retries.WithLabelValues(what).Inc()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (w *worker) appendEstimates(out []stream.Message, name string, obj *Object, change, access bool) []stream.Message {
	if change {
		if rec, ok := obj.ChangeEstimate(name, &w.p.cfg.Model, &w.es); ok {
			out = append(out, w.encode(w.p.cfg.EstimatesTopic, name, rec))
			w.p.metrics.estimates.WithLabelValues(records.EstimateChange).Inc()
		}
	}
	if access {
		if rec, ok := obj.AccessEstimate(name, &w.p.cfg.Model, &w.es); ok {
			out = append(out, w.encode(w.p.cfg.EstimatesTopic, name+AccessKeySuffix, rec))
			w.p.metrics.estimates.WithLabelValues(records.EstimateAccess).Inc()
		}
	}
	return out
}

// emitFinal publishes every cached object's estimates, ordered by name.
func (w *worker) emitFinal(ctx context.Context) error {
	names := w.cache.names()
	sort.Strings(names)
	var out []stream.Message
	for _, n := range names {
		obj, _ := w.cache.get(n)
		out = w.appendEstimates(out, n, obj, true, true)
		if len(out) >= 1000 {
			if err := w.p.sink.Write(ctx, out...); err != nil {
				return fmt.Errorf("aggregate: final estimates: %w", err)
			}
			out = out[:0]
		}
	}
	if len(out) > 0 {
		if err := w.p.sink.Write(ctx, out...); err != nil {
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

// Objects calls f for every object cached by a finished EmitFinal run, in
// no particular order. It is for the demo's summary table and tests.
func (p *Processor) Objects(f func(part state.Partition, name string, o *Object)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for part, c := range p.caches {
		for _, n := range c.names() {
			o, _ := c.get(n)
			f(part, n, o)
		}
	}
}
