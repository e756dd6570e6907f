package query

import (
	"hash/maphash"
	"math"
	"strings"
)

// The Index's storage: its objects as entries in one slice, found by name
// through an open-addressing table (internal/idtable), their names in one
// byte arena, their recency as a queue of touches. None of it holds a
// pointer, so the garbage collector neither scans nor marks the objects:
// their number only costs memory. The Index's writes are in index.go, its reads in
// index_read.go.

// score is one ranking of one object: the 95 % interval [lo, hi] and the
// point value.
type score struct {
	lo, hi, v float64
	has       bool
}

// point is one ranking of one indexed object: score without has (which
// entry.has holds).
type point struct{ lo, hi, v float64 }

// Bits of entry.has: which rankings the entry holds (hasChange,
// hasAccess: the kind's estimate has a rate), and what its records hold:
// a 95 % interval (ciChange, ciAccess), an estimate at all (seenChange,
// seenAccess) and a TTL (hasTTL).
const (
	hasChange  = 1 << byChange
	hasAccess  = 1 << byAccess
	ciChange   = 1 << 2
	ciAccess   = 1 << 3
	seenChange = 1 << 4
	seenAccess = 1 << 5
	hasTTL     = 1 << 6
)

// entry is one indexed object (152 bytes). Its site and recency are in
// Index.meta, its shift score (if any) in Index.shifts: a minority of the
// objects have one. Beside what ranks and plans, it keeps the fields of
// the latest records that /v1/top and / show (estimator, observations,
// changes, the interval's lower bound, TTL), so that they answer without
// reading the store (Index.TopRecords).
type entry struct {
	s          [2]point // change and access rankings (has says which)
	asOf       int64    // Unix ms of the latest change estimate
	accessAsOf int64    // Unix ms of the latest access estimate
	nextVisit  int64    // Unix µs; 0: none
	obs        [2]int64 // the records' observations, by kind
	changes    int64    // the change record's changes
	ciLo       float64  // the change record's ci95[0] (s[byChange].lo is rankedLower's)
	ttl        float64  // the change record's ttl_s, when has&hasTTL
	// the change record's plan_evidence [X, E], when plan is 1 (its
	// site's prior and ω are the site's, siteInfo)
	planEv [2]float64
	// The name is names[off : off+nameLen], off = nameHi<<32 | nameLo (40
	// bits: an arena of up to a TiB).
	nameLo  uint32
	nameLen uint32
	shift   int32 // 1 + index in Index.shifts; 0: no shift score
	nameHi  uint8
	has     uint8    // the bits above
	est     [2]uint8 // 1 + index in Index.estimators, by kind; 0: none
	plan    uint8    // 1: the change record has plan_evidence
}

// nameOff is the offset of e's name in the arena.
func (e *entry) nameOff() int { return int(e.nameHi)<<32 | int(e.nameLo) }

// setNameOff sets the offset of e's name in the arena.
func (e *entry) setNameOff(off int) { e.nameLo, e.nameHi = uint32(off), uint8(off>>32) }

// slotMeta is what a scan by site and the recency queue read of an entry
// slot: kept apart from the entries so that both read 8 bytes per object.
type slotMeta struct {
	site int32  // index in Index.sites; -1: the slot is free
	seq  uint32 // the sequence number of the entry's latest touch
}

// touchRec is one touch of an entry in the recency queue: stale once the
// entry is touched again (its seq changed) or removed.
type touchRec struct {
	slot int32
	seq  uint32
}

// shiftRec is the shift score of one entry (owner).
type shiftRec struct {
	s     score // has: false when the record is free
	owner int32
	kind  int32 // index in Index.kinds; -1: the kind is in kindOverflow
}

// siteInfo is one site: its name and its number of indexed objects.
type siteInfo struct {
	name string
	n    int
	// prior and omega are the plan_prior and plan_omega of the site's
	// latest change record (by as_of) that has them, at priorAsOf (Unix
	// ms), when hasPrior.
	prior     [2]float64
	omega     float64
	priorAsOf int64
	hasPrior  bool
}

// maxKinds bounds the interned alert kinds (two in practice: change and
// access); an alert of yet another kind keeps its kind in kindOverflow.
const maxKinds = 64

// hashName is the hash of an object's name in x's table (equal to
// maphash.Bytes of the name's bytes).
func (x *Index) hashName(name string) uint64 { return maphash.String(x.seed, name) }

// nameBytes is the arena's copy of the name of the entry in slot.
func (x *Index) nameBytes(slot int32) []byte {
	e := &x.entries[slot]
	off := e.nameOff()
	return x.names[off : off+int(e.nameLen)]
}

// lookup returns the slot of name (hash h), -1 if it is not indexed, and
// the position in the table where it is or would be put.
func (x *Index) lookup(name string, h uint64) (int32, uint64) {
	return x.table.Find(h, func(slot int32) bool { return string(x.nameBytes(slot)) == name })
}

// storeName copies name into the arena, compacting the arena first when
// a quarter of it is the names of removed objects.
func (x *Index) storeName(name string) (off int, n uint32) {
	if x.garbage > 64<<10 && 4*x.garbage > len(x.names) {
		x.compactNames()
	}
	off = len(x.names)
	x.names = append(x.names, name...)
	return off, uint32(len(name))
}

// compactNames rewrites the arena with the names of the indexed objects
// only: amortised, each byte of a removed name costs four bytes copied. The
// new arena has room for half as many bytes again: the next compaction
// comes when the garbage is a quarter of the arena, a third of the live
// bytes, so that in a steady churn (more objects than the index keeps) the
// arena is never grown, and copied, by append in between.
func (x *Index) compactNames() {
	live := len(x.names) - x.garbage
	names := make([]byte, 0, live+live/2)
	for slot := range x.entries {
		if x.meta[slot].site < 0 {
			continue
		}
		off := len(names)
		names = append(names, x.nameBytes(int32(slot))...)
		x.entries[slot].setNameOff(off)
	}
	x.names, x.garbage = names, 0
}

// touchSlot marks the entry of slot the most recently updated: a new
// sequence number and its record at the back of the recency queue.
// Records made stale by later touches (or removals) are dropped when they
// are half as many as the objects (compactRecency), so the queue holds at
// most about 1.5 records per object and each touch costs O(1) amortised
// (three records checked).
func (x *Index) touchSlot(slot int32) {
	if x.seq == math.MaxUint32 {
		x.compactRecency()
	}
	x.seq++
	x.meta[slot].seq = x.seq
	if len(x.recency) == cap(x.recency) {
		// Grown by hand: the queue never holds more than maxRecency
		// records, so its capacity need not exceed it.
		x.recency = growTo(x.recency, len(x.recency)+min(max(len(x.recency), 1024), x.maxRecency()-len(x.recency)))
	}
	x.recency = append(x.recency, touchRec{slot: slot, seq: x.seq})
	if len(x.recency) >= x.maxRecency() {
		x.compactRecency()
	}
}

// maxRecency is the length of the queue that makes touchSlot compact it:
// half the objects more than the objects, plus a constant.
func (x *Index) maxRecency() int { n := x.table.Len(); return n + n/2 + 1024 }

// live reports whether r is the latest touch of an indexed entry.
func (x *Index) live(r touchRec) bool {
	m := x.meta[r.slot]
	return m.site >= 0 && m.seq == r.seq
}

// compactRecency keeps the live records of the queue, in order, and
// numbers them again from 1 (so that sequence numbers never wrap).
func (x *Index) compactRecency() {
	kept := x.recency[:0]
	var seq uint32
	for _, r := range x.recency[x.head:] {
		if !x.live(r) {
			continue
		}
		seq++
		r.seq = seq
		x.meta[r.slot].seq = seq
		kept = append(kept, r)
	}
	x.recency, x.head, x.seq = kept, 0, seq
	if c := cap(x.recency); c > 2*x.maxRecency() {
		x.recency = append(make([]touchRec, 0, x.maxRecency()), kept...) // the index shrank
	}
}

// growTo returns s with capacity c (at least len(s)+1), exactly: append
// would give it up to a quarter more.
func growTo[T any](s []T, c int) []T {
	out := make([]T, len(s), max(c, len(s)+1))
	copy(out, s)
	return out
}

// internKind returns the index of kind in x.kinds, added if there is room;
// -1 when there is none.
func (x *Index) internKind(kind string) int32 {
	for i, k := range x.kinds {
		if k == kind {
			return int32(i)
		}
	}
	if len(x.kinds) == maxKinds {
		return -1
	}
	x.kinds = append(x.kinds, kind)
	return int32(len(x.kinds) - 1)
}

// maxEstimators bounds the interned estimator names (about ten exist); a
// record with yet another one is indexed without its estimator.
const maxEstimators = 255

// internEstimator returns 1 + the index of name in x.estimators, added if
// there is room; 0 for "" or when there is none.
func (x *Index) internEstimator(name string) uint8 {
	if name == "" {
		return 0
	}
	for i, k := range x.estimators {
		if k == name {
			return uint8(i + 1)
		}
	}
	if len(x.estimators) == maxEstimators {
		return 0
	}
	x.estimators = append(x.estimators, strings.Clone(name))
	return uint8(len(x.estimators))
}

// shiftKind is the kind of the alert that set shift record i.
func (x *Index) shiftKind(i int32) string {
	if k := x.shifts[i].kind; k >= 0 {
		return x.kinds[k]
	}
	return x.kindOverflow[i]
}

// planFacts is what the index reads of a record's plan fields.
type planFacts struct {
	ev, prior [2]float64
	omega     float64
}
