// Package aggregate is where an observation becomes state and where state
// becomes an estimate.
//
// Object is the complete O(1) state of one object: the change-rate and
// access-rate estimators (package estimators), the consistent windows of its
// changes and of its accesses (package windows), and the little bookkeeping
// that turns raw observations into estimator inputs (duplicate detection,
// the previous content digest, the access reporting period). Object.Apply
// takes one records.Observation; Object.ChangeEstimate and
// Object.AccessEstimate build the published records. Object's binary
// encoding is what package state stores, one value per object.
//
// Processor runs Objects for the partitions a stream.Source assigns, batch
// by batch, committing each batch's states and the partition's next offset in
// one atomic state.Store step.
//
// Object is a value type without pointers to shared data: copying it copies
// the state. It is not safe for concurrent use.
package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

// ErrCorrupt is wrapped by DecodeBinary errors: a stored value that is not a
// valid encoding of this or an older version.
var ErrCorrupt = errors.New("aggregate: corrupt state")

// encodingVersion is the first byte of every encoded Object. Version 2
// stores the sub-states' times relative to the latest observation
// (estimators and windows compact layouts); version-1 values, whose
// sub-states carry their own older layouts, are still decoded.
const encodingVersion = 2

// encodingVersionSitemap is the version of an object with sitemap state:
// version 2's layout, then the sitemap state (sitemap_trust.go). Objects
// never seen in a sitemap keep version 2, byte for byte.
const encodingVersionSitemap = 3

// presence flags of the encoding.
const (
	hasChange    = 1 << 0 // Change has seen a visit or a modification snapshot
	hasAccess    = 1 << 1 // Access has seen an access or an access snapshot
	hasChangeWin = 1 << 2
	hasAccessWin = 1 << 3
	hasDedup     = 1 << 4 // dedupHash/dedupOff are set
	hasLastMod   = 1 << 5
	hasDigest    = 1 << 6
	hasPeriod    = 1 << 7
)

// Object is one object's state. The zero value is an object never seen.
type Object struct {
	flags uint8
	// lastTime is the latest applied observation time, Unix milliseconds.
	lastTime int64
	// dedupHash and dedupOff identify the latest applied observation: the
	// hash of its Source and its Offset, or (dedupOff = -1) a fingerprint of
	// the whole observation when it had no Source.
	dedupHash uint32
	dedupOff  int64
	// digest is a 32-bit fingerprint of the last content digest seen.
	digest uint32
	// lastMod is the latest Last-Modified seen, Unix seconds.
	lastMod int64
	// periodIdx is the current access reporting period (Unix seconds /
	// period length) and periodCount the accesses seen in it.
	periodIdx   int64
	periodCount uint32
	// lastEmit is when the object's estimate was last due for publication
	// (Unix milliseconds; 0: never). It depends only on the observation
	// sequence, so it is the same however the input is batched.
	lastEmit int64

	Change    estimators.Change
	Access    estimators.Access
	ChangeWin windows.Segmenter
	AccessWin windows.Segmenter
	// Rhythm is the object's own daily access profile (rhythm.go).
	Rhythm Rhythm

	// sm is the memory of the sitemap checks (sitemap_trust.go); zero
	// for an object never seen in a sitemap.
	sm sitemapState
}

// Outcome says what Apply did with an observation.
type Outcome uint8

const (
	// Applied: the observation changed the state.
	Applied Outcome = iota
	// Duplicate: the observation was already applied (same source at or
	// before the last applied offset, or an identical record at the same
	// time); it was dropped.
	Duplicate
	// Late: the observation is older than the object's latest observation
	// by more than the configured tolerance; it was not applied (the
	// Processor writes it to the late output).
	Late
	// NoInformation: a visit that says nothing about change (a failed fetch,
	// an error page or a redirect, no digest, no Last-Modified and no change
	// flag); it only moved the object's clock.
	NoInformation
)

var outcomeNames = [...]string{"applied", "duplicate", "late", "no_information"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Effects collects what applying observations produced besides state: rate
// shifts and completed access periods. Reset it between objects.
type Effects struct {
	ChangeShifts []windows.Shift
	AccessShifts []windows.Shift
	// Periods are completed access reporting periods: start (Unix seconds)
	// and number of accesses.
	Periods []Period
	// Reordered counts observations that arrived out of order within the
	// tolerance and were applied at the object's latest time.
	Reordered int
	// Visits and Accesses say what the observation applied.
	Visits, Accesses bool
	// Due says that the object's estimate is due for publication: its
	// previous one is at least Model.EmitInterval older (event time).
	Due bool
	// SitemapUse says what became of a sitemap observation's lastmod and
	// SitemapCheck what its check against the visits found
	// (sitemap_trust.go); SiteChanged that the site's state changed
	// otherwise than through a visit or an access (a check counted).
	SitemapUse   SitemapUse
	SitemapCheck sitemapVerdict
	SiteChanged  bool
}

// Period is one completed access reporting period.
type Period struct {
	Start    int64 // Unix seconds
	Length   int64 // seconds
	Accesses int64
}

// Reset empties e, keeping its capacity.
func (e *Effects) Reset() {
	e.ChangeShifts = e.ChangeShifts[:0]
	e.AccessShifts = e.AccessShifts[:0]
	e.Periods = e.Periods[:0]
	e.Reordered = 0
	e.Visits, e.Accesses, e.Due = false, false, false
	e.SitemapUse, e.SitemapCheck, e.SiteChanged = SitemapNone, verdictNone, false
}

// Model holds the configuration Apply and the estimate builders need.
// Start from DefaultModel: a field means what it holds, 0 included where
// it documents a meaning for 0 (see Config).
type Model struct {
	// LateTolerance is the allowed lateness: the Processor's reorder buffer
	// holds observations this long in event time to apply them in order
	// (reorder.go), and Apply applies an observation up to this much older
	// than the object's latest at the latest time; an older one is Late
	// (not applied; the Processor writes it to the late output).
	// 0 allows no lateness. Default 1h.
	LateTolerance time.Duration
	// ReportPeriod is the access reporting period. Default 1h.
	ReportPeriod time.Duration
	// EmitInterval is the least event time between two publications of an
	// object's estimate in EmitUpdate mode: an estimate is published after a
	// batch when one of the object's observations in it came at least this
	// long after the previous publication. 0 publishes after every batch.
	// Default 10m.
	EmitInterval time.Duration
	// PStale is the target probability that a cached copy served within
	// its TTL is stale; the TTL of an estimate is chosen for it. Default 0.1.
	PStale     float64
	Estimators estimators.Config
	Windows    windows.Config
	// Seasonal configures the per-site daily and weekly baselines of
	// access rates (see windows.Profile); Alerts the alert filter and the
	// multiple-testing adjustment (alerts.go).
	Seasonal windows.SeasonalConfig
	Alerts   AlertConfig
	// DisableObjectRhythm keeps every object on its site's daily access
	// profile. By default an object busy enough (RhythmMinWeekly accesses
	// a week) learns its own and, when its site's does not fit it, runs its
	// access window on it (rhythm.go; issue 36); its state grows by 32
	// bytes while it counts (7 between checks when its site's profile
	// fits).
	DisableObjectRhythm bool
}

// hash32 is FNV-1a, 32 bits, never 0 (0 means "none").
func hash32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	if h == 0 {
		h = 1
	}
	return h
}

// fingerprint identifies an observation without a Source: every field that
// distinguishes one record from another at the same time.
func fingerprint(obs *records.Observation) uint32 {
	h := fnv.New32a()
	var b [8]byte
	h.Write([]byte(obs.Kind))
	h.Write([]byte{byte(obs.Changed)})
	h.Write([]byte(obs.Digest))
	binary.LittleEndian.PutUint64(b[:], uint64(obs.LastModified.Unix()))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(obs.Status))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(obs.PeriodS))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(obs.LastEvent.UnixNano()))
	h.Write(b[:])
	h.Write([]byte(obs.Event))
	h.Write([]byte(obs.ChangeFreq))
	v := h.Sum32()
	if v == 0 {
		v = 1
	}
	return v
}

// seconds converts Unix milliseconds to float64 seconds, the unit of the
// estimators and windows packages.
func seconds(ms int64) float64 { return float64(ms) / 1e3 }

// LastTime is the time of the latest applied observation; zero for an
// object never seen.
func (o *Object) LastTime() time.Time {
	if o.flags == 0 && o.lastTime == 0 {
		return time.Time{}
	}
	return time.UnixMilli(o.lastTime).UTC()
}

// HasChange and HasAccess say which estimates the object has.
func (o *Object) HasChange() bool { return o.flags&hasChange != 0 }

// HasAccess reports whether the object has seen accesses or access snapshots.
func (o *Object) HasAccess() bool { return o.flags&hasAccess != 0 }

// Site is the object's site (records.SiteOf, its one definition).
func Site(object string) string { return records.SiteOf(object) }
