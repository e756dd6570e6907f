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
//     and plan (lower and upper 95 % bounds, rate, next visit, as_of) in
//     ordered B-trees, so /v1/top is O(log n + limit) per request and
//     /v1/plan reads one site's objects in order, without touching the
//     store. Its size is bounded by IndexConfig.MaxObjects: the objects
//     updated least recently are evicted first (and counted).
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
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/changerate/changerate/aggregate"
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

// siteDegree is the degree of the sites' B-trees (most sites hold few
// objects).
const siteDegree = 8

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

// score is one ranking of one object: the 95 % interval [lo, hi] and the
// point value.
type score struct {
	lo, hi, v float64
	has       bool
}

// siteCount is a site's shared name, its number of indexed objects and
// their order in each ranking (created on first use).
type siteCount struct {
	name string
	n    int
	tree [numBy]*btree.BTreeG[ranked]
}

// entry is one indexed object. site is a substring of name (no copy).
type entry struct {
	name, site string
	seq        uint64 // update sequence
	prev, next *entry // recency list (Index.recency)
	sc         *siteCount
	s          [numBy]score
	shiftKind  string // kind of the latest alert ("change" or "access")
	asOf       int64  // Unix ms of the latest change estimate
	accessAsOf int64  // Unix ms of the latest access estimate
	nextVisit  int64  // Unix µs; 0: none
}

// ranked is an entry's place in one ranking's global B-tree: the lower
// bound is held in the tree, so that a search compares without reading the
// entries (names only on equal bounds).
type ranked struct {
	lo float64
	e  *entry
}

// lessRanked orders by descending lower bound, then by name.
func lessRanked(x, y ranked) bool {
	if x.lo != y.lo {
		return x.lo > y.lo
	}
	return x.e.name < y.e.name
}

// Index is the bounded in-memory ranking of the objects whose estimates and
// alerts the aggregator published. It is safe for concurrent use: Observe
// (from the sink's writers) and the queries take one mutex; queries hold it
// for O(log n + limit) (Top) or O(objects of the site) (Candidates).
//
// Memory: per object one entry (its name, scores and times, linked in the
// recency order) and one item in each of up to six B-trees (global and
// per-site order of the three rankings; 16 bytes, the lower bound held in
// the tree): about 390 bytes of heap per object with a 47-byte
// name and both kinds of estimate (docs/query-bench.md, from
// cmd/benchreport, has the measured figure).
type Index struct {
	cfg IndexConfig

	mu      sync.Mutex
	seq     uint64
	objects map[string]*entry
	sites   map[string]*siteCount // objects per site; name is the site string its entries share
	global  [numBy]*btree.BTreeG[ranked]
	// free is the node free list the sites' trees share.
	free *btree.FreeListG[ranked]
	// recency lists the entries least recently updated first (a ring
	// through its sentinel: recency.next is the oldest).
	recency entry
	evicted uint64
	maxAsOf int64 // Unix ms: the latest as_of seen (event time)

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
	x := &Index{cfg: cfg, objects: map[string]*entry{}, sites: map[string]*siteCount{}, free: btree.NewFreeListG[ranked](btree.DefaultFreeListSize)}
	for b := 0; b < numBy; b++ {
		x.global[b] = btree.NewG(32, lessRanked)
	}
	x.recency.prev, x.recency.next = &x.recency, &x.recency
	return x
}

// Len returns the number of objects indexed.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.objects)
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
	var sc score
	if rec.RatePerS != nil {
		sc = score{v: *rec.RatePerS, lo: *rec.RatePerS, hi: *rec.RatePerS, has: true}
		if rec.CI95 != nil {
			sc.lo, sc.hi = rec.CI95[0], rec.CI95[1]
		}
	}
	var next int64
	if rec.NextVisit != nil {
		next = rec.NextVisit.UnixMicro()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addEstimate(rec.Object, rec.Site, rec.Kind, rec.AsOf.UnixMilli(), sc, next)
}

// IndexEstimates indexes the estimates a Processor published, as
// AddEstimate does their records (aggregate.EstimateIndex): the processor
// hands over the values it encoded, so the index reads no record.
func (x *Index) IndexEstimates(ests []aggregate.PublishedEstimate) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range ests {
		pe := &ests[i]
		var sc score
		if pe.HasRate {
			sc = score{v: pe.Rate, lo: pe.Rate, hi: pe.Rate, has: true}
			if pe.HasCI {
				sc.lo, sc.hi = pe.CI95[0], pe.CI95[1]
			}
		}
		var next int64
		if pe.HasNextVisit {
			next = pe.NextVisit.UnixMicro()
		}
		x.addEstimate(pe.Object, pe.Site, pe.Kind, pe.AsOf.UnixMilli(), sc, next)
	}
}

// addEstimate is AddEstimate of an estimate of kind on object (site: its
// site, "" to derive it) as of asOf (Unix ms), with its score and next
// visit (Unix µs, 0: none). Called with mu held.
func (x *Index) addEstimate(object, site, kind string, asOf int64, sc score, nextVisit int64) {
	b := byChange
	if kind == records.EstimateAccess {
		b = byAccess
	}
	e, ok := x.objects[object]
	if ok && e.s[b].has {
		if (b == byChange && asOf < e.asOf) || (b == byAccess && asOf < e.accessAsOf) {
			return
		}
	}
	e = x.touchEntry(e, object, site)
	x.setScore(e, b, sc)
	if b == byAccess {
		e.accessAsOf = asOf
	}
	if asOf > x.maxAsOf {
		x.maxAsOf = asOf
	}
	if b == byChange {
		e.asOf = asOf
		e.nextVisit = nextVisit
	}
	x.evict()
}

// AddAlert indexes one alert; raw is its encoding, served as it is (so that
// fields added to alerts appear in /v1/alerts unchanged).
func (x *Index) AddAlert(a *records.Alert, raw []byte) {
	sc := shiftScore(a)
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
	e := x.touch(a.Object, a.Site)
	e.shiftKind = a.Kind
	x.setScore(e, byShift, sc)
	x.evict()
}

// touch returns the entry of name, created if needed, and marks it the most
// recently updated. Called with mu held.
func (x *Index) touch(name, site string) *entry {
	return x.touchEntry(x.objects[name], name, site)
}

// touchEntry is touch with e, the entry of name (nil: none yet), looked up
// by the caller.
func (x *Index) touchEntry(e *entry, name, site string) *entry {
	if e != nil {
		e.unlink()
	} else {
		e = &entry{name: name, site: site}
		if e.site == "" || len(site) > len(name) {
			e.site = aggregate.Site(name)
		} else if i := strings.Index(name, site); i >= 0 {
			e.site = name[i : i+len(site)] // share the name's bytes
		}
		// The entries of a site share its siteCount: its name and its
		// rankings' trees.
		sc := x.sites[e.site]
		if sc == nil {
			sc = &siteCount{name: e.site}
			x.sites[sc.name] = sc
		}
		e.site, e.sc = sc.name, sc
		sc.n++
		x.objects[name] = e
	}
	x.seq++
	e.seq = x.seq
	e.prev, e.next = x.recency.prev, &x.recency // the newest: before the sentinel
	e.prev.next, x.recency.prev = e, e
	return e
}

// unlink takes e out of the recency list.
func (e *entry) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// setScore replaces e's ranking b. Called with mu held. The trees order
// by lower bound and entry only, so an unchanged lower bound keeps e's
// place in them.
func (x *Index) setScore(e *entry, b int, sc score) {
	if e.s[b].has && sc.has && e.s[b].lo == sc.lo {
		e.s[b] = sc
		return
	}
	if e.s[b].has {
		x.unrank(e, b)
	}
	e.s[b] = sc
	if sc.has {
		r := ranked{lo: sc.lo, e: e}
		x.global[b].ReplaceOrInsert(r)
		t := e.sc.tree[b]
		if t == nil {
			t = btree.NewWithFreeListG(siteDegree, lessRanked, x.free)
			e.sc.tree[b] = t
		}
		t.ReplaceOrInsert(r)
	}
}

// unrank takes e out of ranking b's trees. Called with mu held.
func (x *Index) unrank(e *entry, b int) {
	r := ranked{lo: e.s[b].lo, e: e}
	x.global[b].Delete(r)
	e.sc.tree[b].Delete(r)
}

// evict removes the least recently updated objects beyond MaxObjects.
func (x *Index) evict() {
	for len(x.objects) > x.cfg.MaxObjects {
		e := x.recency.next
		if e == &x.recency {
			return
		}
		e.unlink()
		for b := 0; b < numBy; b++ {
			if e.s[b].has {
				x.unrank(e, b)
			}
		}
		delete(x.objects, e.name)
		if e.sc.n--; e.sc.n <= 0 {
			delete(x.sites, e.site)
		}
		x.evicted++
	}
}
