package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// The batch pipeline. prepare turns one fetched batch of messages into a
// batchWork in four steps, each a function of its own, all on the
// handler's goroutine:
//
//	decode: messages → observations in application order (reorder buffer);
//	        undecodable ones become dead letters
//	load:   group the observations by object and bring each object's
//	        latest state into the cache (batches in flight, cache, store)
//	apply:  apply the observations to their objects in order, collecting
//	        access reports, alerts and late records
//	encode: encode the changed states (the store writes) and the due
//	        estimates
//
// The batchWork is then submitted (inflight.go) to be written and
// committed.

// evictedState is an uncommitted state evicted from the cache.
type evictedState struct {
	seq    uint64
	enc    []byte
	digest state.Digest
}

// pending is one object of a batch: its cache entry, worked on in place.
type pending struct {
	name   string
	site   string     // the object's host (Site), found once per batch
	se     *siteEntry // its seasonal profile (nil: seasonal profiles off); set by loadSites
	e      *entry     // valid during prepare only
	obj    *Object    // the object, decoded from e by load, during prepare only
	visits bool       // the batch applied visits
	access bool       // the batch applied accesses
	due    bool       // the estimate is due for publication
	dirty  bool       // the state changed and must be written
}

// batchWork is one prepared batch: its objects' new states, the outputs
// and the state writes. It is immutable once submitted, until recycled.
// The buffers only prepare uses (prepBufs) go back to the Processor's pool
// when prepare returns, so that a batch in flight holds just its outputs
// and state writes.
type batchWork struct {
	prepBufs
	seq      uint64
	from, to int64
	first    int64 // offset of the first input message
	n        int   // input messages
	start    time.Time
	seen     int64 // latest event time read so far on the partition (Unix ms; held ones included), 0: none
	newest   int64 // latest event time of the applied observations (Unix ns), 0: none
	out      []stream.Message
	pub      []PublishedEstimate // the estimates among out, for Processor.index
	writes   []state.Write
	enc      []byte // slab of the encoded states
	ends     []int  // end of each write's value in enc
	// outBytes holds the estimates' keys and values (encodeEstimate)
	// until the sink acknowledged them (writeBatch).
	outBytes outSlab
	held     int64 // bytes of the in-flight budget the batch holds
}

// prepBufs are the scratch buffers of prepare: the decoded observations and
// their objects, released (to Processor.prep) when prepare returns.
type prepBufs struct {
	obs     []records.Observation
	offs    []int64 // input offset of each of obs
	order   []int32 // per decoded observation: index into objs
	idx     map[string]int32
	objs    []pending
	misses  []string
	digests []state.Digest // of misses
	missIdx []int32
	vals    [][]byte
	objects batchObjects
}

// batchObjects holds the decoded Objects of a batch's objects (about
// 1 KB each; objs[j].obj is the j-th) in chunks of objectChunk taken from
// the Processor's pool (cacheBudget.chunks) as the batch loads them and
// handed back as soon as encodeStates is done with a chunk, so that
// another partition's batch reuses them at once, as it did the Objects
// pooled one by one: a pool's Put and Get per object were 1.5 % of the
// aggregator's perf samples in a live run; per chunk they are 1/64 of
// that. (Keeping the chunks with the batch until prepare returned instead
// cost about 23 MiB of peak RSS in a live run.)
type batchObjects struct {
	chunks []*[objectChunk]Object
	n      int
}

// objectChunk is the number of Objects in one chunk.
const objectChunk = 64

// next returns the next Object, taking a chunk from the pool when the
// last one is full (its contents are whatever it held: cache.loadInto
// sets them).
func (bo *batchObjects) next(pool *sync.Pool) *Object {
	c, i := bo.n/objectChunk, bo.n%objectChunk
	if c == len(bo.chunks) {
		ch, _ := pool.Get().(*[objectChunk]Object)
		if ch == nil {
			ch = new([objectChunk]Object)
		}
		bo.chunks = append(bo.chunks, ch)
	}
	bo.n++
	return &bo.chunks[c][i]
}

// give hands chunk c back to the pool: none of its Objects is used again.
func (bo *batchObjects) give(pool *sync.Pool, c int) {
	if c < len(bo.chunks) && bo.chunks[c] != nil {
		pool.Put(bo.chunks[c])
		bo.chunks[c] = nil
	}
}

// reset drops the chunks (given back or not) and their count.
func (bo *batchObjects) reset() {
	clear(bo.chunks)
	bo.chunks, bo.n = bo.chunks[:0], 0
}

// reset empties the buffers, dropping their references, and keeps their
// capacity.
func (pb *prepBufs) reset() {
	clear(pb.obs)
	clear(pb.objs)
	clear(pb.misses)
	clear(pb.vals)
	clear(pb.idx)
	pb.obs, pb.offs, pb.order, pb.objs = pb.obs[:0], pb.offs[:0], pb.order[:0], pb.objs[:0]
	pb.misses, pb.digests, pb.missIdx, pb.vals = pb.misses[:0], pb.digests[:0], pb.missIdx[:0], pb.vals[:0]
	pb.objects.reset()
}

// Sizes of the elements of a batch's buffers, for footprint.
const (
	messageSize   = int64(unsafe.Sizeof(stream.Message{}))
	writeSize     = int64(unsafe.Sizeof(state.Write{}))
	publishedSize = int64(unsafe.Sizeof(PublishedEstimate{}))
)

// footprint is the heap a prepared batch holds until it is recycled: its
// outputs (message headers, keys, values), its state writes and their slab.
// used is the part of it that the batch's own outputs and states take
// (lengths, not the capacities of buffers recycled from larger batches):
// what the in-flight budget learns per message (inflightBudget.learn).
func (b *batchWork) footprint() (footprint, used int64) {
	var kv int64
	for i := range b.out {
		kv += int64(len(b.out[i].Key) + len(b.out[i].Value))
	}
	footprint = kv + int64(cap(b.out))*messageSize + int64(cap(b.pub))*publishedSize + int64(cap(b.writes))*writeSize + int64(cap(b.enc)) + int64(cap(b.ends))*8
	used = kv + int64(len(b.out))*messageSize + int64(len(b.pub))*publishedSize + int64(len(b.writes))*writeSize + int64(len(b.enc)) + int64(len(b.ends))*8
	return footprint, used
}

func (w *worker) newBatch() *batchWork {
	var b *batchWork
	if n := len(w.free); n > 0 {
		b = w.free[n-1]
		w.free = w.free[:n-1]
	} else {
		b = &batchWork{}
	}
	if pb, ok := w.p.prep.Get().(*prepBufs); ok {
		b.prepBufs = *pb
	}
	if b.idx == nil {
		b.idx = map[string]int32{}
	}
	return b
}

// putPrep returns b's prepare buffers to the Processor's pool.
func (w *worker) putPrep(b *batchWork) {
	pb := b.prepBufs
	b.prepBufs = prepBufs{}
	pb.reset()
	w.p.prep.Put(&pb)
}

// maxFreeBatches bounds the recycled batches a worker keeps (with their
// output buffers' capacity) between batches.
const maxFreeBatches = 1

// recycle returns b for reuse, dropping references to large data, and
// its bytes of the in-flight budget if it still holds them.
func (w *worker) recycle(b *batchWork) {
	w.releaseInflight(b)
	if b.obs != nil || b.idx != nil {
		w.putPrep(b)
	}
	b.outBytes.release(w, false) // not acknowledged (acknowledged ones are released by writeBatch)
	if len(w.free) >= maxFreeBatches {
		return
	}
	clear(b.out)
	clear(b.pub)
	clear(b.writes)
	b.out, b.pub, b.writes, b.enc, b.ends = b.out[:0], b.pub[:0], b.writes[:0], b.enc[:0], b.ends[:0]
	w.free = append(w.free, b)
}

// lookup returns the cache entry holding the latest state of name,
// bringing an evicted uncommitted state back into the cache. ok is false if
// the store must be read.
func (w *worker) lookup(name string) (*entry, bool) { return w.lookupHash(name, w.cache.hash(name)) }

// lookupHash is lookup with name's hash in the cache (cache.hash).
func (w *worker) lookupHash(name string, h uint64) (*entry, bool) {
	if e, ok := w.cache.entryHash(name, h); ok {
		return e, true
	}
	if len(w.evicted) > 0 {
		if ev, ok := w.evicted[name]; ok {
			delete(w.evicted, name)
			e := w.cache.add(name, ev.digest)
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
			w.evicted[w.cache.name(e)] = evictedState{seq: e.seq, enc: bytes.Clone(w.cache.enc(e)), digest: e.digest}
		}
	})
}

// prepare decodes msgs (one partition, offset order), applies them and
// encodes the batch's outputs and states. msgs empty means the input ended
// or went idle: the whole reorder buffer is released. It fails only if the
// store cannot be read.
func (w *worker) prepare(ctx context.Context, msgs []stream.Message) (*batchWork, error) {
	b := w.newBatch()
	b.start = time.Now()
	w.p.metrics.batchSize.Observe(float64(len(msgs)))
	flush := len(msgs) == 0
	b.from, b.to, b.n = w.from, w.from, 0
	b.first = w.from
	if !flush {
		b.to = max(w.from, msgs[len(msgs)-1].Offset+1)
	}
	w.seq++
	b.seq = w.seq
	b.newest = 0

	w.decode(b, msgs, flush)
	if err := w.load(ctx, b); err != nil {
		return nil, err
	}
	w.apply(b)
	w.encodeStates(b, flush)
	w.writeSites(b, w.touched)
	b.sliceWrites()
	clear(w.touched)
	for j := range b.objs {
		b.objs[j].e = nil
	}
	for i := range b.obs {
		if t := b.obs[i].Time.UnixNano(); t > b.newest {
			b.newest = t
		}
	}
	w.putPrep(b)
	w.trimCache()
	w.from = b.to
	w.gauges.held.Set(float64(w.rb.len()))
	return b, nil
}

// retryRead runs f, one store read of the batch being prepared, until it
// succeeds, fails with an error retrying cannot cure, or the claim ends
// (errClaimEnded; w.hctx): a transient error (Redis unreachable) is
// retried in place with backoff (retryStore, op "load") instead of ending
// the handler, which would make the member rejoin the consumer group and
// rebalance every member's partitions while the store is down. The
// batches in flight go on meanwhile (their commits retry too).
func (w *worker) retryRead(f func() error) error {
	return w.p.retryStore(w.hctx, "load", w.log, f)
}

// rejectFuture appends the dead letter of m, an observation at t, further
// ahead of the clock than Config.MaxFuture allows.
func (w *worker) rejectFuture(out []stream.Message, m *stream.Message, t time.Time) []stream.Message {
	p := w.p
	p.metrics.deadLetters.WithLabelValues(ReasonFuture).Inc()
	p.stats.future.Add(1)
	now := p.now()
	ahead := t.Sub(now).Round(time.Second).String()
	if d := t.Sub(now); d > 48*time.Hour {
		ahead = strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
	}
	err := fmt.Errorf("aggregate: event time %s is %s ahead of the clock (%s), more than the %s allowed (MAX_FUTURE); not applied",
		t.UTC().Format(time.RFC3339Nano), ahead, now.UTC().Format(time.RFC3339), p.cfg.MaxFuture)
	dl := records.NewDeadLetter(now, "aggregator", m.Topic, w.pos+strconv.FormatInt(m.Offset, 10), ReasonFuture, err, m.Value)
	return append(out, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
}

// decode appends to b.obs (with their offsets in b.offs) the observations
// of msgs to apply now, in order: those behind the watermark at once, the
// others through the reorder buffer, which after each message releases
// those the watermark passed in event-time order (reorder.go); with flush
// it releases everything it holds. Messages re-read after a restart only
// refill the buffer. An undecodable message becomes a dead letter in b.out.
func (w *worker) decode(b *batchWork, msgs []stream.Message, flush bool) {
	p := w.p
	first := true
	future := int64(math.MaxInt64) // latest event time accepted, Unix ms
	if p.cfg.MaxFuture > 0 {
		future = p.now().Add(p.cfg.MaxFuture).UnixMilli()
	}
	b.obs, b.offs = slices.Grow(b.obs, len(msgs)), slices.Grow(b.offs, len(msgs)) // as encodeStates
	// The counts are added once, after the loop: p's counters are shared
	// by the partitions' handlers, and an atomic add per message on a
	// cache line other cores write costs more than the count.
	var visits, accesses, others int
	n0 := b.n
	defer func() {
		p.stats.messages.Add(int64(b.n - n0))
		if n := visits + accesses + others; n > 0 {
			p.stats.observations.Add(int64(n))
		}
		if visits > 0 {
			p.metrics.obsVisit.Add(float64(visits))
		}
		if accesses > 0 {
			p.metrics.obsAccess.Add(float64(accesses))
		}
	}()
	for i := range msgs {
		if w.rb.replaying(msgs[i].Offset) {
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
		o, err := records.DecodeObservation(msgs[i].Value)
		if err != nil {
			p.metrics.deadLetters.WithLabelValues("decode").Inc()
			p.stats.rejected.Add(1)
			dl := records.NewDeadLetter(p.now(), "aggregator", msgs[i].Topic,
				w.pos+strconv.FormatInt(msgs[i].Offset, 10), "decode", err, msgs[i].Value)
			b.out = append(b.out, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
			continue
		}
		t := o.Time.UnixMilli()
		if t > future {
			b.out = w.rejectFuture(b.out, &msgs[i], o.Time)
			continue
		}
		switch o.Kind {
		case records.KindVisit:
			visits++
		case records.KindAccess:
			accesses++
		default:
			others++
			p.metrics.observation(o.Kind)
		}
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
}

// load groups b's observations by object (b.objs, each object's order
// kept in b.order) and points each object at the cache entry holding its
// latest state: from the batches in flight or the cache first, then with
// one store read for the misses, and the sites' states (site.go).
//
// A store read that fails transiently is retried in place (retryRead):
// nothing has been applied yet (decode only filled b.obs and the reorder
// buffer, once), and a failed read changes neither b, the cache nor the
// reorder buffer, so the retry continues the batch exactly where the
// failed read left it. It fails when the claim ends meanwhile
// (errClaimEnded) or with an error retrying cannot cure.
func (w *worker) load(ctx context.Context, b *batchWork) error {
	p := w.p
	// One cache lookup per observation: a cached object's first
	// observation in the batch marks its entry with the batch's mark and
	// its index in objs, which its later observations read; the objects
	// not cached are indexed by name (b.idx) and read from the store below.
	mark := w.cache.nextMark()
	var hits int
	b.order, b.objs = slices.Grow(b.order, len(b.obs)), slices.Grow(b.objs, len(b.obs)) // as encodeStates
	var hs [prefetchRun]uint64
	for i := range b.obs {
		o := &b.obs[i]
		// The lookups go prefetchRun at a time: their hashes first, and
		// what they will read touched together (cache.prefetch).
		k := i % prefetchRun
		if k == 0 {
			run := b.obs[i:min(len(b.obs), i+prefetchRun)]
			for j := range run {
				hs[j] = w.cache.hash(run[j].Object)
			}
			w.prefetched += w.cache.prefetch(hs[:len(run)])
		}
		if e, ok := w.lookupHash(o.Object, hs[k]); ok {
			if e.mark != mark {
				e.mark, e.slot = mark, int32(len(b.objs))
				obj := b.objects.next(&w.cache.budget.chunks)
				if err := w.cache.loadInto(e, obj); err != nil {
					w.corrupt(o.Object, err)
				}
				// The observation's string is the name: the cache's copy
				// is in its slab, which later batches reuse.
				b.objs = append(b.objs, pending{name: o.Object, site: Site(o.Object), e: e, obj: obj})
				hits++
			}
			b.order = append(b.order, e.slot)
			continue
		}
		j, ok := b.idx[o.Object]
		if !ok {
			j = int32(len(b.objs))
			b.idx[o.Object] = j
			// Its Object now, so that objs[j].obj is the j-th of
			// b.objects (encodeStates gives them back in order); it is
			// loaded once the store was read.
			b.objs = append(b.objs, pending{name: o.Object, site: Site(o.Object), obj: b.objects.next(&w.cache.budget.chunks)})
			b.misses = append(b.misses, o.Object)
			b.digests = append(b.digests, state.DigestOf(o.Object))
			b.missIdx = append(b.missIdx, j)
		}
		b.order = append(b.order, j)
	}
	p.metrics.cache.WithLabelValues("hit").Add(float64(hits))
	p.metrics.cache.WithLabelValues("miss").Add(float64(len(b.misses)))
	if len(b.misses) > 0 {
		var vals [][]byte
		err := w.retryRead(func() (err error) {
			t0 := time.Now()
			w.storeMu.Lock()
			if dg, ok := p.store.(state.DigestGetter); ok {
				vals, err = dg.GetDigests(ctx, w.part, b.misses, b.digests, b.vals[:0])
			} else {
				vals, err = p.store.Get(ctx, w.part, b.misses, b.vals[:0])
			}
			w.storeMu.Unlock()
			if vals != nil {
				b.vals = vals
			}
			p.metrics.storeLatency.WithLabelValues("get").Observe(time.Since(t0).Seconds())
			return err
		})
		if errors.Is(err, errClaimEnded) {
			return err
		}
		if err != nil {
			return fmt.Errorf("aggregate: load %d objects of %s/%d: %w", len(b.misses), w.part.Topic, w.part.ID, err)
		}
		for k, v := range vals {
			pd := &b.objs[b.missIdx[k]]
			pd.e = w.cache.add(pd.name, b.digests[k])
			if v == nil {
				p.stats.objects.Add(1)
			} else {
				w.cache.setEnc(pd.e, v)
			}
			if err := w.cache.loadInto(pd.e, pd.obj); err != nil {
				w.corrupt(pd.name, err)
			}
		}
	}
	if err := w.loadSites(ctx, b); err != nil {
		return err
	}
	w.bindSites(b)
	return nil
}

// apply applies b's observations to their objects in order, marking the
// objects dirty and their estimates due, and appends the access reports,
// alerts and late records to b.out. It adds the sites whose state the batch
// changed to w.touched.
func (w *worker) apply(b *batchWork) {
	p := w.p
	var outcomes [len(outcomeNames)]int
	if w.touched == nil {
		w.touched = map[*siteEntry]string{}
	}
	var reordered, dropped int
	for i := range b.obs {
		pd := &b.objs[b.order[i]]
		w.effs.Reset()
		oc := w.det.apply(pd.name, pd.se, pd.obj, &b.obs[i], &w.effs)
		if pd.se != nil && (w.effs.Accesses || w.effs.Visits || w.effs.SiteChanged) {
			w.touched[pd.se] = pd.site
		}
		if w.effs.SitemapUse != SitemapNone {
			p.metrics.sitemap.WithLabelValues(w.effs.SitemapUse.String()).Inc()
			p.stats.sitemapUse[w.effs.SitemapUse].Add(1)
		}
		if w.effs.SitemapCheck != verdictNone {
			p.metrics.sitemapCheck.WithLabelValues(verdictNames[w.effs.SitemapCheck]).Inc()
			switch w.effs.SitemapCheck {
			case verdictAgree:
				p.stats.sitemapAgree.Add(1)
			case verdictDisagree:
				p.stats.sitemapDisagree.Add(1)
			}
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
			b.out = append(b.out, w.encode(p.cfg.LateTopic, pd.name, lateRecord(p.now(), pos, &b.obs[i], pd.obj.LastTime(), p.cfg.Model.LateTolerance, in)))
		}
		if oc == Duplicate || oc == Late {
			continue
		}
		pd.dirty = true
		pd.visits = pd.visits || w.effs.Visits
		pd.access = pd.access || w.effs.Accesses
		pd.due = pd.due || w.effs.Due
		b.out = w.appendAlerts(b.out)
		for _, per := range w.effs.Periods {
			b.out = append(b.out, w.encode(p.cfg.AccessReportsTopic, pd.name, pd.obj.AccessReport(pd.name, per, &p.cfg.Model, &w.es)))
		}
	}
	p.stats.countOutcomes(outcomes[:])
	for oc, n := range outcomes {
		if n > 0 && Outcome(oc) != Late { // counted as late_events_total{action="late_output"}
			p.metrics.outcomes.WithLabelValues(Outcome(oc).String()).Add(float64(n))
		}
	}
	if reordered > 0 {
		p.stats.atLatest.Add(int64(reordered))
		p.metrics.late.WithLabelValues("applied_at_latest").Add(float64(reordered))
	}
	if dropped > 0 {
		p.metrics.late.WithLabelValues("late_output").Add(float64(dropped))
	}
}

// encodeStates encodes the dirty objects' states into b.writes (and the
// cache) and appends their due estimates (EmitUpdate) to b.out; a clean
// object's entry is released. The reorder buffer's position is committed
// with the states (reorder.go). The states share one slab (with the sites'
// states, writeSites); sliceWrites caps each value so that appending to one
// cannot clobber the next.
func (w *worker) encodeStates(b *batchWork, flush bool) {
	p := w.p
	exp := newExpiryClock(b.start, p.grace)
	// The batch's slices are sized once for what follows, from the
	// counts of dirty objects and due estimates (and the state bytes per
	// object of the batch before), instead of regrown (and copied) as
	// they fill: in the live shape they were 15 % of the aggregator's
	// allocated bytes.
	var dirty, ests int
	for j := range b.objs {
		if pd := &b.objs[j]; pd.dirty {
			dirty++
			if p.cfg.Emit == EmitUpdate && pd.due {
				ests += btoi(pd.visits) + btoi(pd.access)
			}
		}
	}
	b.out = slices.Grow(b.out, ests)
	if p.index != nil {
		b.pub = slices.Grow(b.pub, ests)
	}
	const more = 2 // the reorder position and the alert book (writeSites adds the sites')
	b.writes, b.ends = slices.Grow(b.writes, dirty+more), slices.Grow(b.ends, dirty+more)
	b.enc = slices.Grow(b.enc, dirty*w.stateBytes)
	enc0 := len(b.enc)
	defer func() {
		if dirty > 0 {
			w.stateBytes = (len(b.enc)-enc0)/dirty + 8
		}
	}()
	chunks := &w.cache.budget.chunks
	var sizes sizeCounts
	for j := range b.objs {
		if j > 0 && j%objectChunk == 0 {
			b.objects.give(chunks, j/objectChunk-1) // done with objs[j-objectChunk:j]
		}
		pd := &b.objs[j]
		if !pd.dirty {
			continue
		}
		pd.e.seq = b.seq
		if p.cfg.Emit == EmitUpdate && pd.due {
			b.out, b.pub = w.appendEstimates(&b.outBytes, b.out, b.pub, pd.name, pd.site, pd.se, pd.obj, pd.visits, pd.access)
		}
		start := len(b.enc)
		b.enc = pd.obj.AppendBinary(b.enc)
		w.cache.setEnc(pd.e, b.enc[start:])
		sizes.add(len(b.enc) - start)
		b.writes = append(b.writes, state.Write{Object: pd.name, KeepExpiry: exp.keep(pd.e), Digest: pd.e.digest})
		b.ends = append(b.ends, len(b.enc))
	}
	for c := range b.objects.chunks {
		b.objects.give(chunks, c)
	}
	p.metrics.stateBytes.add(&sizes)
	w.countEstimates()
	if pos := w.rb.position(b.to); pos != nil && (b.to > b.from || flush) {
		b.enc = append(b.enc, pos...)
		b.writes = append(b.writes, state.Write{Object: reorderObject})
		b.ends = append(b.ends, len(b.enc))
	}
}

// sliceWrites points each of b.writes at its value in the slab b.enc, once
// every state of the batch (objects, reorder position, sites) is encoded.
func (b *batchWork) sliceWrites() {
	start := 0
	for k, end := range b.ends {
		b.writes[k].Value = b.enc[start:end:end]
		start = end
	}
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
