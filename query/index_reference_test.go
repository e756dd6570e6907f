package query

// The Index as it was before its pointer-free rewrite (B-trees kept in
// order on every update), kept as the reference the differential test
// (index_diff_test.go's TestIndexMatchesReference) compares the Index with.

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/records"
)

// refSiteDegree is the degree of the sites' B-trees (most sites hold few
// objects).
const refSiteDegree = 8

// refSiteCount is a site's shared name, its number of indexed objects and
// their order in each ranking (created on first use).
type refSiteCount struct {
	name string
	n    int
	tree [numBy]*btree.BTreeG[refRanked]
}

// refEntry is one indexed object. site is a substring of name (no copy).
type refEntry struct {
	name, site string
	seq        uint64    // update sequence
	prev, next *refEntry // recency list (refIndex.recency)
	sc         *refSiteCount
	s          [numBy]score
	shiftKind  string // kind of the latest alert ("change" or "access")
	asOf       int64  // Unix ms of the latest change estimate
	accessAsOf int64  // Unix ms of the latest access estimate
	nextVisit  int64  // Unix µs; 0: none
}

// refRanked is an refEntry's place in one ranking's global B-tree: the lower
// bound is held in the tree, so that a search compares without reading the
// entries (names only on equal bounds).
type refRanked struct {
	lo float64
	e  *refEntry
}

// refLessRanked orders by descending lower bound, then by name.
func refLessRanked(x, y refRanked) bool {
	if x.lo != y.lo {
		return x.lo > y.lo
	}
	return x.e.name < y.e.name
}

// refIndex is the bounded in-memory ranking of the objects whose estimates and
// alerts the aggregator published. It is safe for concurrent use: Observe
// (from the sink's writers) and the queries take one mutex; queries hold it
// for O(log n + limit) (Top) or O(objects of the site) (Candidates).
//
// Memory: per object one refEntry (its name, scores and times, linked in the
// recency order) and one item in each of up to six B-trees (global and
// per-site order of the three rankings; 16 bytes, the lower bound held in
// the tree): about 390 bytes of heap per object with a 47-byte
// name and both kinds of estimate (docs/query-bench.md, from
// research/cmd/benchreport, has the measured figure).
type refIndex struct {
	cfg IndexConfig

	mu      sync.Mutex
	seq     uint64
	objects map[string]*refEntry
	sites   map[string]*refSiteCount // objects per site; name is the site string its entries share
	global  [numBy]*btree.BTreeG[refRanked]
	// free is the node free list the sites' trees share.
	free *btree.FreeListG[refRanked]
	// recency lists the entries least recently updated first (a ring
	// through its sentinel: recency.next is the oldest).
	recency refEntry
	evicted uint64
	maxAsOf int64 // Unix ms: the latest as_of seen (event time)

	alerts    []alertRec // ring
	alertNext int        // next slot
	alertN    uint64     // alerts observed in all
}

// newRefIndex returns an empty refIndex. A cfg that does not Validate (a
// negative bound) gets the default of that bound.
func newRefIndex(cfg IndexConfig) *refIndex {
	if cfg.MaxObjects < 0 {
		cfg.MaxObjects = 0
	}
	if cfg.MaxAlerts < 0 {
		cfg.MaxAlerts = 0
	}
	cfg = cfg.WithDefaults()
	x := &refIndex{cfg: cfg, objects: map[string]*refEntry{}, sites: map[string]*refSiteCount{}, free: btree.NewFreeListG[refRanked](btree.DefaultFreeListSize)}
	for b := 0; b < numBy; b++ {
		x.global[b] = btree.NewG(32, refLessRanked)
	}
	x.recency.prev, x.recency.next = &x.recency, &x.recency
	return x
}

// Len returns the number of objects indexed.
func (x *refIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.objects)
}

// Evicted returns the number of objects evicted to respect MaxObjects.
func (x *refIndex) Evicted() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.evicted
}

// Latest returns the latest as_of of the indexed estimates (event time),
// zero when none.
func (x *refIndex) Latest() time.Time {
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
func (x *refIndex) AddEstimate(rec *records.Estimate) {
	f := recordFacts(rec)
	sc, next := f.sc, f.next
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addEstimate(rec.Object, rec.Site, rec.Kind, rec.AsOf.UnixMilli(), sc, next)
}

// IndexEstimates indexes the estimates a Processor published, as
// AddEstimate does their records (aggregate.EstimateIndex): the processor
// hands over the values it encoded, so the index reads no record.
func (x *refIndex) IndexEstimates(ests []aggregate.PublishedEstimate) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range ests {
		pe := &ests[i]
		f := publishedFacts(pe)
		sc, next := f.sc, f.next
		x.addEstimate(pe.Object, pe.Site, pe.Kind, pe.AsOf.UnixMilli(), sc, next)
	}
}

// addEstimate is AddEstimate of an estimate of kind on object (site: its
// site, "" to derive it) as of asOf (Unix ms), with its score and next
// visit (Unix µs, 0: none). Called with mu held.
func (x *refIndex) addEstimate(object, site, kind string, asOf int64, sc score, nextVisit int64) {
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
func (x *refIndex) AddAlert(a *records.Alert, raw []byte) {
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

// touch returns the refEntry of name, created if needed, and marks it the most
// recently updated. Called with mu held.
func (x *refIndex) touch(name, site string) *refEntry {
	return x.touchEntry(x.objects[name], name, site)
}

// touchEntry is touch with e, the refEntry of name (nil: none yet), looked up
// by the caller.
func (x *refIndex) touchEntry(e *refEntry, name, site string) *refEntry {
	if e != nil {
		e.unlink()
	} else {
		e = &refEntry{name: name, site: site}
		if e.site == "" || len(site) > len(name) {
			e.site = aggregate.Site(name)
		} else if i := strings.Index(name, site); i >= 0 {
			e.site = name[i : i+len(site)] // share the name's bytes
		}
		// The entries of a site share its refSiteCount: its name and its
		// rankings' trees.
		sc := x.sites[e.site]
		if sc == nil {
			sc = &refSiteCount{name: e.site}
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
func (e *refEntry) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// setScore replaces e's ranking b. Called with mu held. The trees order
// by lower bound and refEntry only, so an unchanged lower bound keeps e's
// place in them.
func (x *refIndex) setScore(e *refEntry, b int, sc score) {
	if e.s[b].has && sc.has && e.s[b].lo == sc.lo {
		e.s[b] = sc
		return
	}
	if e.s[b].has {
		x.unrank(e, b)
	}
	e.s[b] = sc
	if sc.has {
		r := refRanked{lo: sc.lo, e: e}
		x.global[b].ReplaceOrInsert(r)
		t := e.sc.tree[b]
		if t == nil {
			t = btree.NewWithFreeListG(refSiteDegree, refLessRanked, x.free)
			e.sc.tree[b] = t
		}
		t.ReplaceOrInsert(r)
	}
}

// unrank takes e out of ranking b's trees. Called with mu held.
func (x *refIndex) unrank(e *refEntry, b int) {
	r := refRanked{lo: e.s[b].lo, e: e}
	x.global[b].Delete(r)
	e.sc.tree[b].Delete(r)
}

// evict removes the least recently updated objects beyond MaxObjects.
func (x *refIndex) evict() {
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

// Top returns at most limit objects of ranking by (ByChangeRate, ...) on
// site ("" for every site), in descending order of the lower 95 % bound.
func (x *refIndex) Top(by string, site string, limit int) []Ranked {
	b, ok := byIndex(by)
	if !ok || limit <= 0 {
		return nil
	}
	out := make([]Ranked, 0, min(limit, 64))
	add := func(e *refEntry) bool {
		kind := records.EstimateChange
		switch b {
		case byAccess:
			kind = records.EstimateAccess
		case byShift:
			kind = e.shiftKind
		}
		s := e.s[b]
		out = append(out, Ranked{Object: e.name, Site: e.site, Kind: kind, Lower: s.lo, Upper: s.hi, Value: s.v})
		return len(out) < limit
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if site == "" {
		x.global[b].Ascend(func(r refRanked) bool { return add(r.e) })
		return out
	}
	sc := x.sites[site]
	if sc == nil {
		return out
	}
	if t := sc.tree[b]; t != nil {
		t.Ascend(func(r refRanked) bool { return add(r.e) })
	}
	return out
}

// Candidates returns the objects with a change estimate on site ("": all),
// in descending order of the lower bound, at most limit of them (0: all).
func (x *refIndex) Candidates(site string, limit int) []Candidate {
	var out []Candidate
	add := func(e *refEntry) bool {
		s := e.s[byChange]
		c := Candidate{Object: e.name, Site: e.site, Rate: s.v, Lo: s.lo, Hi: s.hi, AsOf: time.UnixMilli(e.asOf).UTC()}
		if e.nextVisit != 0 {
			c.NextVisit = time.UnixMicro(e.nextVisit).UTC()
		}
		if e.s[byAccess].has {
			c.AccessRate = e.s[byAccess].v
		}
		out = append(out, c)
		return limit <= 0 || len(out) < limit
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if site == "" {
		x.global[byChange].Ascend(func(r refRanked) bool { return add(r.e) })
		return out
	}
	sc := x.sites[site]
	if sc == nil {
		return out
	}
	if t := sc.tree[byChange]; t != nil {
		t.Ascend(func(r refRanked) bool { return add(r.e) })
	}
	return out
}

// Sites returns the indexed sites with the most objects first (then by
// name), at most limit.
func (x *refIndex) Sites(limit int) []SiteCount {
	x.mu.Lock()
	out := make([]SiteCount, 0, len(x.sites))
	for s, sc := range x.sites {
		n := sc.n
		out = append(out, SiteCount{s, n})
	}
	x.mu.Unlock()
	return topSites(out, limit)
}
