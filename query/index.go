// Package query makes the aggregator's knowledge usable while it runs: a
// JSON API (/v1/objects, /v1/top, /v1/plan, /v1/alerts; api/openapi.yaml)
// and server-rendered HTML pages (/ and /objects) built from the same
// response structs.
//
// Two sources feed it:
//
//   - the state store the aggregator writes (state.Store): /v1/objects
//     decodes the object's committed state and builds its estimate record
//     exactly as the aggregator publishes it (aggregate.Object.ChangeEstimate
//     and AccessEstimate), so a lookup is one store read and never a scan;
//   - an Index, fed with the estimates the aggregator published (the
//     processor hands over their values once the sink acknowledged them:
//     IndexEstimates) and the alert records it writes to its sink (TeeSink
//     observes them after the sink acknowledged them; it also reads back
//     encoded estimates, as when the index is rebuilt). It keeps, per object, the few numbers that rank
//     and plan (lower and upper 95 % bounds, rate, next visit, as_of) in a
//     compact, pointer-free table that an estimate updates in O(1)
//     (amortised); /v1/top and /v1/plan scan it for their answer (a
//     bounded heap for /v1/top, a sort of the site's objects for
//     /v1/plan), without touching the store (/v1/top's records are the
//     index's, Index.TopRecords, so /v1/top and / answer while Redis is
//     away): the writes, one per
//     published estimate, are many, the queries few. Its size is bounded
//     by IndexConfig.MaxObjects: the objects updated least recently are
//     evicted first (and counted).
//
// In service mode each replica indexes the partitions it owns; /v1/objects
// answers for every object (the store is shared).
//
// The API reads the store concurrently with the aggregator's handler of the
// same partition (Store.Get only). Both implementations allow it: Memory
// takes its mutex, Redis sends one MGET per call on a connection pool.
package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/idtable"
	"github.com/changerate/changerate/records"
)

// Ranking keys of /v1/top?by=.
const (
	ByChangeRate = "change_rate"
	ByAccessRate = "access_rate"
	ByShift      = "shift"
)

// by indices.
const (
	byChange = iota
	byAccess
	byShift
	numBy
)

var byNames = [numBy]string{ByChangeRate, ByAccessRate, ByShift}

// byIndex maps a ranking key to its index; ok is false for unknown keys.
func byIndex(s string) (int, bool) {
	for i, n := range byNames {
		if n == s {
			return i, true
		}
	}
	return 0, false
}

// IndexConfig bounds an Index. The zero value of every field means its
// documented default (WithDefaults fills them in).
type IndexConfig struct {
	// MaxObjects bounds the objects indexed; beyond it the object updated
	// least recently is evicted. Default DefaultIndexObjects.
	MaxObjects int
	// MaxAlerts bounds the recent alerts kept for /v1/alerts (a ring).
	// Default DefaultIndexAlerts.
	MaxAlerts int
}

// Defaults of IndexConfig.
const (
	DefaultIndexObjects = 200_000
	DefaultIndexAlerts  = 10_000
)

// WithDefaults returns c with the default of every zero field filled in.
func (c IndexConfig) WithDefaults() IndexConfig {
	if c.MaxObjects == 0 {
		c.MaxObjects = DefaultIndexObjects
	}
	if c.MaxAlerts == 0 {
		c.MaxAlerts = DefaultIndexAlerts
	}
	return c
}

// Validate reports every problem of c at once, each naming its field.
func (c IndexConfig) Validate() error {
	var errs []error
	if c.MaxObjects < 0 {
		errs = append(errs, fmt.Errorf("query: Index.MaxObjects %d is negative", c.MaxObjects))
	}
	if c.MaxAlerts < 0 {
		errs = append(errs, fmt.Errorf("query: Index.MaxAlerts %d is negative", c.MaxAlerts))
	}
	return errors.Join(errs...)
}

// Index is the bounded in-memory ranking of the objects whose estimates and
// alerts the aggregator published. It is safe for concurrent use: the
// writes (IndexEstimates, AddEstimate, AddAlert) and the queries take one
// mutex.
//
// The writes are the hot path (every published estimate): an estimate
// costs one hash-table lookup and O(1) amortised updates, keeping no
// order. The queries, a few per second, scan for their answer instead,
// with the mutex held: Top is O(n log limit) for n objects (a bounded
// heap; by shift only the objects with a shift alert are scanned) and
// Candidates O(n + m log m) for the m objects answered (a sort); a site's
// objects are found by a scan of 8 bytes per object. At 200,000 objects
// on a 2-core machine: about 1 ms for Top over every object, 65 µs over
// one site, 45 ms for every object's Candidates (BenchmarkIndexQuery).
//
// Memory: per object one 128-byte entry (scores, times, the fields of
// the records /v1/top shows, where its name is), 8 bytes of site and recency (slotMeta), its name copied into one
// arena (which holds up to a third more: the names of evicted objects,
// until it is compacted), 1 to 1.5 8-byte records of the recency queue
// and an 8-byte slot of the table (which is 40 to 80 % full); an object
// with a shift alert takes a 40-byte shift record more. None of it holds
// a pointer, so the garbage collector has nothing to mark: about 210 to
// 225 bytes of heap per object with a 47 to 53-byte name (211.9 in
// BenchmarkIndexEstimatesLive at 200,000 objects, 171.9 before the
// records' fields were kept)
// (BenchmarkIndexEstimatesLive measures it, and docs/query-bench.md from
// research/cmd/benchreport).
type Index struct {
	cfg IndexConfig

	mu   sync.Mutex
	seed maphash.Seed
	// table finds an object's entry by name (index_store.go: lookup).
	table   idtable.Table // its Len is the number of objects indexed
	entries []entry       // by slot; free slots are listed in free
	meta    []slotMeta
	free    []int32
	// names holds the objects' names; garbage counts the bytes of removed
	// objects' names still in it.
	names   []byte
	garbage int
	// sites lists the sites by index (n 0: free, listed in freeSites);
	// siteIDs finds them by name.
	sites     []siteInfo
	siteIDs   map[string]int32
	freeSites []int32
	// shifts holds the shift scores (by=shift), free ones listed in
	// freeShifts; their alerts' kinds are interned in kinds.
	shifts       []shiftRec
	freeShifts   []int32
	kinds        []string
	kindOverflow map[int32]string
	// estimators are the estimator names of the records (interned).
	estimators []string
	// recency[head:] are the touches of the entries, oldest first: the
	// first live one is the least recently updated object.
	recency []touchRec
	head    int
	seq     uint32
	evicted uint64
	maxAsOf int64  // Unix ms: the latest as_of seen (event time)
	touched uint64 // prefetch's result, unused

	alerts    []alertRec // ring
	alertNext int        // next slot
	alertN    uint64     // alerts observed in all
}

// alertRec is one alert as encoded by the aggregator, with the fields the
// queries filter on.
type alertRec struct {
	asOf   time.Time
	object string
	site   string
	raw    json.RawMessage
}

// NewIndex returns an empty Index. A cfg that does not Validate (a
// negative bound) gets the default of that bound.
func NewIndex(cfg IndexConfig) *Index {
	if cfg.MaxObjects < 0 {
		cfg.MaxObjects = 0
	}
	if cfg.MaxAlerts < 0 {
		cfg.MaxAlerts = 0
	}
	cfg = cfg.WithDefaults()
	x := &Index{cfg: cfg, seed: maphash.MakeSeed(), siteIDs: map[string]int32{}}
	x.table.Grow()
	return x
}

// Len returns the number of objects indexed.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.table.Len()
}

// Evicted returns the number of objects evicted to respect MaxObjects.
func (x *Index) Evicted() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.evicted
}

// Latest returns the latest as_of of the indexed estimates (event time),
// zero when none.
func (x *Index) Latest() time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.maxAsOf == 0 {
		return time.Time{}
	}
	return time.UnixMilli(x.maxAsOf).UTC()
}

// AddEstimate indexes one estimate record, unless the object's indexed
// estimate of the same kind is newer (as_of), as when the index is rebuilt
// from the estimates topic while live estimates arrive.
func (x *Index) AddEstimate(rec *records.Estimate) {
	f := recordFacts(rec)
	h := x.hashName(rec.Object)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addEstimate(rec.Object, h, rec.Site, rec.Kind, rec.AsOf.UnixMilli(), &f)
}

// IndexEstimates indexes the estimates a Processor published, as
// AddEstimate does their records (aggregate.EstimateIndex): the processor
// hands over the values it encoded, so the index reads no record. The
// names are hashed before the mutex is taken, estimatesPerLock at a time.
func (x *Index) IndexEstimates(ests []aggregate.PublishedEstimate) {
	var hs [estimatesPerLock]uint64
	for len(ests) > 0 {
		chunk := ests[:min(len(ests), estimatesPerLock)]
		ests = ests[len(chunk):]
		for i := range chunk {
			hs[i] = x.hashName(chunk[i].Object)
		}
		x.mu.Lock()
		x.prefetch(hs[:len(chunk)])
		for i := range chunk {
			pe := &chunk[i]
			f := publishedFacts(pe)
			x.addEstimate(pe.Object, hs[i], pe.Site, pe.Kind, pe.AsOf.UnixMilli(), &f)
		}
		x.mu.Unlock()
	}
}

// prefetch touches what the lookups of the names with hashes hs will
// read — their table positions, then the entries and meta found there,
// then the names those point at — one step for all of them at a time:
// each step's loads do not depend on one another, so their cache misses
// overlap, where a lookup's misses follow one another. Called with mu
// held; the result is stored only so that the loads are not dropped.
func (x *Index) prefetch(hs []uint64) {
	var ids [estimatesPerLock]int32
	for i, h := range hs {
		ids[i] = x.table.Peek(h)
	}
	var sum uint64
	for _, id := range ids[:len(hs)] {
		if id >= 0 {
			sum += uint64(x.entries[id].nameLen) + uint64(x.meta[id].seq)
		}
	}
	for _, id := range ids[:len(hs)] {
		if id >= 0 {
			if off := x.entries[id].nameOff(); off < len(x.names) {
				sum += uint64(x.names[off])
			}
		}
	}
	x.touched = sum
}

// facts is what the index keeps of one estimate: its ranking score and
// next visit (Unix µs, 0: none), and the fields its records show.
type facts struct {
	sc        score
	next      int64
	ciLo      float64 // the interval's lower bound, when hasCI
	hasCI     bool
	estimator string
	obs       int64
	changes   int64
	ttl       float64 // when hasTTL
	hasTTL    bool
	// what the plan's posterior is made of (records.Estimate.
	// PlanEvidence), when hasPlan
	plan    planFacts
	hasPlan bool
}

// recordFacts is the facts of an estimate record (its ranking score: its
// rate and 95 % interval; has false without a rate).
func recordFacts(rec *records.Estimate) (f facts) {
	if rec.RatePerS != nil {
		f.sc = score{v: *rec.RatePerS, hi: *rec.RatePerS, has: true}
		if rec.CI95 != nil {
			f.sc.lo, f.sc.hi = rankedLower(rec.Kind, rec.Changes, rec.CI95[0]), rec.CI95[1]
		}
	}
	if rec.CI95 != nil {
		f.ciLo, f.hasCI = rec.CI95[0], true
	}
	if rec.NextVisit != nil {
		f.next = rec.NextVisit.UnixMicro()
	}
	if rec.TTLS != nil {
		f.ttl, f.hasTTL = *rec.TTLS, true
	}
	if rec.PlanEvidence != nil && rec.PlanPrior != nil && rec.PlanOmega != nil {
		f.plan, f.hasPlan = planFacts{*rec.PlanEvidence, *rec.PlanPrior, *rec.PlanOmega}, true
	}
	f.estimator, f.obs, f.changes = rec.Estimator, rec.Observations, rec.Changes
	return f
}

// publishedFacts is recordFacts of the values a Processor published.
func publishedFacts(pe *aggregate.PublishedEstimate) (f facts) {
	if pe.HasRate {
		f.sc = score{v: pe.Rate, hi: pe.Rate, has: true}
		if pe.HasCI {
			f.sc.lo, f.sc.hi = rankedLower(pe.Kind, pe.Changes, pe.CI95[0]), pe.CI95[1]
		}
	}
	if pe.HasCI {
		f.ciLo, f.hasCI = pe.CI95[0], true
	}
	if pe.HasNextVisit {
		f.next = pe.NextVisit.UnixMicro()
	}
	if pe.HasTTL {
		f.ttl, f.hasTTL = pe.TTL, true
	}
	if pe.HasPlan {
		f.plan, f.hasPlan = planFacts{pe.PlanEvidence, pe.PlanPrior, pe.PlanOmega}, true
	}
	f.estimator, f.obs, f.changes = pe.Estimator, pe.Observations, pe.Changes
	return f
}

// rankedLower is the lower bound a ranking uses: the interval's lower bound
// lo, except 0 for a change estimate without a detected change (and an
// estimate without an interval ranks at 0 too: a point estimate from a few
// visits is no bound, and ranking by it would let objects seen twice top
// the list).
// There the data are no evidence of any change, and a positive lower bound
// comes from the estimator's prior alone (bayes_beta's Beta prior on the
// change probability per visit interval: a few revalidations minutes apart
// give a prior rate of several changes a day), which would rank such an
// object above every object seen to change slowly.
func rankedLower(kind string, changes int64, lo float64) float64 {
	if kind == records.EstimateChange && changes == 0 {
		return 0
	}
	return lo
}

// estimatesPerLock is the number of estimates IndexEstimates indexes per
// hold of the mutex: a query waits for at most so many.
const estimatesPerLock = 256

// addEstimate is AddEstimate of an estimate of kind on object (hash h;
// site: its site, "" to derive it) as of asOf (Unix ms), with its facts.
// Called with mu held.
func (x *Index) addEstimate(object string, h uint64, site, kind string, asOf int64, f *facts) {
	sc := f.sc
	b, bit, ci, seen := byChange, uint8(hasChange), uint8(ciChange), uint8(seenChange)
	if kind == records.EstimateAccess {
		b, bit, ci, seen = byAccess, hasAccess, ciAccess, seenAccess
	}
	slot, pos := x.lookup(object, h)
	if slot >= 0 {
		e := &x.entries[slot]
		if e.has&bit != 0 && ((b == byChange && asOf < e.asOf) || (b == byAccess && asOf < e.accessAsOf)) {
			return
		}
		x.touchSlot(slot)
	} else {
		slot = x.create(object, h, pos, site)
	}
	e := &x.entries[slot]
	if sc.has {
		e.s[b] = point{lo: sc.lo, hi: sc.hi, v: sc.v}
		e.has |= bit
	} else {
		e.s[b] = point{}
		e.has &^= bit
	}
	e.has |= seen
	e.has &^= ci
	if f.hasCI {
		e.has |= ci
	}
	e.obs[b], e.est[b] = f.obs, x.internEstimator(f.estimator)
	if b == byAccess {
		e.accessAsOf = asOf
	} else {
		e.asOf = asOf
		e.nextVisit = f.next
		e.changes, e.ciLo, e.ttl = f.changes, f.ciLo, f.ttl
		e.has &^= hasTTL
		if f.hasTTL {
			e.has |= hasTTL
		}
		e.planEv, e.plan = [2]float64{}, 0
		if f.hasPlan {
			e.planEv, e.plan = f.plan.ev, 1
			// the site's prior and ω: its latest record's
			si := &x.sites[x.meta[slot].site]
			if !si.hasPrior || asOf >= si.priorAsOf {
				si.prior, si.omega, si.priorAsOf, si.hasPrior = f.plan.prior, f.plan.omega, asOf, true
			}
		}
	}
	if asOf > x.maxAsOf {
		x.maxAsOf = asOf
	}
	x.evict()
}

// AddAlert indexes one alert; raw is its encoding, served as it is (so that
// fields added to alerts appear in /v1/alerts unchanged).
func (x *Index) AddAlert(a *records.Alert, raw []byte) {
	sc := shiftScore(a)
	h := x.hashName(a.Object)
	x.mu.Lock()
	defer x.mu.Unlock()
	r := alertRec{asOf: a.AsOf, object: a.Object, site: a.Site, raw: append(json.RawMessage(nil), raw...)}
	if len(x.alerts) < x.cfg.MaxAlerts {
		x.alerts = append(x.alerts, r)
	} else {
		x.alerts[x.alertNext] = r
	}
	x.alertNext = (x.alertNext + 1) % x.cfg.MaxAlerts
	x.alertN++
	slot, pos := x.lookup(a.Object, h)
	if slot >= 0 {
		x.touchSlot(slot)
	} else {
		slot = x.create(a.Object, h, pos, a.Site)
	}
	x.setShift(slot, a.Kind, sc)
	x.evict()
}

// setShift sets the shift score of the entry of slot and the kind of its
// alert. Called with mu held.
func (x *Index) setShift(slot int32, kind string, sc score) {
	e := &x.entries[slot]
	i := e.shift - 1
	if i < 0 {
		if n := len(x.freeShifts); n > 0 {
			i, x.freeShifts = x.freeShifts[n-1], x.freeShifts[:n-1]
		} else {
			i = int32(len(x.shifts))
			x.shifts = append(x.shifts, shiftRec{})
		}
		e.shift = i + 1
	}
	delete(x.kindOverflow, i)
	k := x.internKind(kind)
	if k < 0 {
		if x.kindOverflow == nil {
			x.kindOverflow = map[int32]string{}
		}
		x.kindOverflow[i] = kind
	}
	sc.has = true
	x.shifts[i] = shiftRec{s: sc, owner: slot, kind: k}
}

// create indexes name (hash h, pos its place in the table from lookup) as
// a new object of site ("" or longer than name: derived from name), the
// most recently updated, and returns its slot. Called with mu held.
func (x *Index) create(name string, h uint64, pos uint64, site string) int32 {
	if x.table.Grow() {
		_, pos = x.lookup(name, h)
	}
	if site == "" || len(site) > len(name) {
		site = aggregate.Site(name)
	}
	id, ok := x.siteIDs[site]
	if !ok {
		// The site's name is copied: the index keeps no string of its callers.
		sc := siteInfo{name: strings.Clone(site)}
		if n := len(x.freeSites); n > 0 {
			id, x.freeSites = x.freeSites[n-1], x.freeSites[:n-1]
			x.sites[id] = sc
		} else {
			id = int32(len(x.sites))
			x.sites = append(x.sites, sc)
		}
		x.siteIDs[sc.name] = id
	}
	x.sites[id].n++
	var slot int32
	if n := len(x.free); n > 0 {
		slot, x.free = x.free[n-1], x.free[:n-1]
	} else {
		slot = int32(len(x.entries))
		if len(x.entries) == cap(x.entries) {
			// Grown by hand: at most MaxObjects+1 slots are used (an
			// object is created before the oldest is evicted), so the
			// slices need no capacity beyond.
			c := len(x.entries) + min(max(len(x.entries), 1024), x.cfg.MaxObjects+1-len(x.entries))
			x.entries, x.meta = growTo(x.entries, c), growTo(x.meta, c)
		}
		x.entries = append(x.entries, entry{})
		x.meta = append(x.meta, slotMeta{site: -1})
	}
	off, n := x.storeName(name)
	x.entries[slot] = entry{nameLen: n}
	x.entries[slot].setNameOff(off)
	x.meta[slot].site = id
	x.table.Put(pos, h, slot)
	x.touchSlot(slot)
	return slot
}

// evict removes the least recently updated objects beyond MaxObjects.
// Called with mu held.
func (x *Index) evict() {
	for x.table.Len() > x.cfg.MaxObjects && x.head < len(x.recency) {
		r := x.recency[x.head]
		x.head++
		if x.live(r) {
			x.remove(r.slot)
			x.evicted++
		}
	}
}

// remove takes the entry of slot out of the index. Called with mu held.
func (x *Index) remove(slot int32) {
	e := &x.entries[slot]
	x.table.Delete(maphash.Bytes(x.seed, x.nameBytes(slot)), slot)
	x.garbage += int(e.nameLen)
	if e.shift > 0 {
		i := e.shift - 1
		x.shifts[i] = shiftRec{}
		delete(x.kindOverflow, i)
		x.freeShifts = append(x.freeShifts, i)
	}
	id := x.meta[slot].site
	if x.sites[id].n--; x.sites[id].n == 0 {
		delete(x.siteIDs, x.sites[id].name)
		x.sites[id] = siteInfo{}
		x.freeSites = append(x.freeSites, id)
	}
	x.entries[slot] = entry{}
	x.meta[slot] = slotMeta{site: -1}
	x.free = append(x.free, slot)
}
