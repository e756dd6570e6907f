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
	"strings"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/wire"
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
	// no digest, no Last-Modified and no change flag); it only moved the
	// object's clock.
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
}

// Model holds the configuration Apply and the estimate builders need. The
// zero value of every field means its documented default (see
// WithDefaults).
type Model struct {
	// LateTolerance is the allowed lateness: the Processor's reorder buffer
	// holds observations this long in event time to apply them in order
	// (reorder.go), and Apply applies an observation up to this much older
	// than the object's latest at the latest time; an older one is Late
	// (not applied; the Processor writes it to the late output).
	// ZeroDuration allows no lateness. Default 1h.
	LateTolerance time.Duration
	// ReportPeriod is the access reporting period. Default 1h.
	ReportPeriod time.Duration
	// EmitInterval is the least event time between two publications of an
	// object's estimate in EmitUpdate mode: an estimate is published after a
	// batch when one of the object's observations in it came at least this
	// long after the previous publication. ZeroDuration publishes after
	// every batch. Default 10m.
	EmitInterval time.Duration
	// PStale is the target probability that a cached copy served within
	// its TTL is stale; the TTL of an estimate is chosen for it. Default 0.1.
	PStale float64
	// PoolSites is the most sites per partition whose pooled
	// (empirical-Bayes) prior is kept (see pooled.go); 0 disables pooled
	// estimates. Default 0 (off; SuggestedPoolSites explains why).
	PoolSites int
	// PublishPooled makes the pooled estimate the published one (rate_per_s,
	// estimator, ci95, ttl_s) for objects with fewer than
	// estimators.PooledMaxChanges changes. Off by default: it meets its
	// accuracy and coverage target on simulated sites but not on the real
	// php/doc-en history (docs/eval/REPORT.md).
	PublishPooled bool
	Estimators    estimators.Config
	Windows       windows.Config
	// Seasonal configures the per-site daily and weekly baselines of
	// access rates (see windows.Profile); Alerts the alert filter and the
	// multiple-testing adjustment (alerts.go).
	Seasonal windows.SeasonalConfig
	Alerts   AlertConfig
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
	v := h.Sum32()
	if v == 0 {
		v = 1
	}
	return v
}

// seconds converts Unix milliseconds to float64 seconds, the unit of the
// estimators and windows packages.
func seconds(ms int64) float64 { return float64(ms) / 1e3 }

// Apply applies one valid observation (see records.Observation.Validate) to
// the object and records shifts and completed periods in eff. It is O(1).
// It is ApplyAt without a site profile: accesses are tested against a flat
// baseline.
func (o *Object) Apply(obs *records.Observation, m *Model, eff *Effects) Outcome {
	return o.ApplyAt(obs, m, nil, eff)
}

// ApplyAt is Apply with the seasonal state of the object's site (nil:
// none): an access is counted in the site's access profile and enters the
// object's access window at the profile's operational time
// (windows.Profile), so its shift tests compare observed counts with the
// counts expected under the site's daily and weekly cycle; a new
// Last-Modified date is counted in the change profile, and the change
// window runs on its operational time in the same way.
func (o *Object) ApplyAt(obs *records.Observation, m *Model, site *SiteState, eff *Effects) Outcome {
	t := obs.Time.UnixMilli()
	seen := o.lastTime != 0 || o.flags != 0
	// Duplicate detection.
	var dh uint32
	var doff int64
	if obs.Source != "" {
		dh, doff = hash32(obs.Source), obs.Offset
		// A delivery again of an applied line: same source, not after the
		// latest applied position, and not later in event time (input in
		// event-time order visits a source's lines out of offset order;
		// those come at or after the latest time and are new).
		if o.flags&hasDedup != 0 && o.dedupOff >= 0 && o.dedupHash == dh && doff <= o.dedupOff && t <= o.lastTime {
			return Duplicate
		}
	} else {
		dh, doff = fingerprint(obs), -1
		if o.flags&hasDedup != 0 && o.dedupOff < 0 && o.dedupHash == dh && t == o.lastTime {
			return Duplicate
		}
	}
	// Order: late observations beyond the tolerance are dropped; slightly
	// late ones are applied at the latest time so every stream stays
	// non-decreasing.
	reordered := false
	if seen && t < o.lastTime {
		if o.lastTime-t > m.LateTolerance.Milliseconds() {
			return Late
		}
		t = o.lastTime
		eff.Reordered++
		reordered = true
	}
	o.lastTime = t
	o.dedupHash, o.dedupOff = dh, doff
	o.flags |= hasDedup
	ts := seconds(t)
	// The publication slot is taken only by an observation that carried
	// information (a failed fetch must not delay the estimate of the
	// change its retry sees).
	defer func() {
		if eff.Visits || eff.Accesses {
			if o.lastEmit == 0 || t-o.lastEmit >= m.EmitInterval.Milliseconds() {
				o.lastEmit = t
				eff.Due = true
			}
		}
	}()

	outcome := Applied
	switch obs.Kind {
	case records.KindSnapshot:
		s := estimators.Snapshot{Time: ts, Period: obs.PeriodS}
		if !obs.LastEvent.IsZero() {
			s.LastEvent, s.HasEvent = seconds(obs.LastEvent.UnixMilli()), true
		}
		if obs.Event == records.EventAccess {
			o.Access.Snapshot(s)
			o.flags |= hasAccess
			eff.Accesses = true
		} else {
			o.Change.Snapshot(s)
			o.flags |= hasChange
			eff.Visits = true
		}
		return Applied
	}
	if obs.Kind.IsAccess() {
		var p *windows.Profile
		if site != nil {
			p = &site.Access
		}
		o.access(t, m, p, eff)
	}
	if obs.Kind.IsVisit() {
		var p *windows.Profile
		if site != nil {
			p = &site.Change
		}
		if !o.visit(obs, ts, reordered, m, p, eff) && !obs.Kind.IsAccess() {
			outcome = NoInformation
		}
	}
	return outcome
}

func (o *Object) access(t int64, m *Model, site *windows.Profile, eff *Effects) {
	period := int64(m.ReportPeriod / time.Second)
	idx := floorDiv(floorDiv(t, 1000), period)
	if o.flags&hasPeriod != 0 && idx != o.periodIdx && o.periodCount > 0 {
		eff.Periods = append(eff.Periods, Period{Start: o.periodIdx * period, Length: period, Accesses: int64(o.periodCount)})
		o.periodCount = 0
	}
	if o.flags&hasPeriod == 0 || idx != o.periodIdx {
		o.periodIdx = idx
		o.periodCount = 0
	}
	if o.periodCount < math.MaxUint32 {
		o.periodCount++
	}
	o.flags |= hasPeriod | hasAccess | hasAccessWin
	ts := seconds(t)
	o.Access.Access(ts)
	op := ts
	if site != nil && m.Seasonal.Enabled() {
		op = site.Operational(ts, &m.Seasonal)
		site.Observe(ts, &m.Seasonal)
		restartBefore(&o.AccessWin, site)
	}
	if sh, ok := o.AccessWin.Event(op, &m.Windows); ok {
		eff.AccessShifts = append(eff.AccessShifts, sh)
	}
	eff.Accesses = true
}

// maxProfileLag is the oldest Last-Modified date, relative to the visit
// that saw it, counted in a site's change profile (seconds).
const maxProfileLag = 7 * 86400

// restartBefore restarts a window that began in real time, during the
// learning period of an active profile, where the daily cycle itself cuts
// windows: the window starts afresh on the seasonal clock (Λ(Since) =
// Since, see windows.Profile).
func restartBefore(w *windows.Segmenter, p *windows.Profile) {
	if org, ok := w.Origin(); ok && p.Active() && org < p.Since() {
		*w = windows.Segmenter{}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// visit turns a visit into a change observation: the change flag when the
// source gives one, else a digest different from the previous digest, else
// a Last-Modified later than the previous one. The first informative visit
// is the baseline. It reports whether the visit carried information.
//
// A reordered visit (earlier than the object's latest observation, applied
// at the latest time) says nothing reliable about change: its content is
// older than the digest or Last-Modified already held, which it must not
// replace, and comparing them would count a change that the visits in
// order already counted. It carries no information.
func (o *Object) visit(obs *records.Observation, ts float64, reordered bool, m *Model, site *windows.Profile, eff *Effects) bool {
	if obs.Status < 0 {
		return false // a failed fetch saw no content
	}
	if reordered && obs.Changed == records.ChangeUnknown {
		return false
	}
	changed, known := false, true
	var fp uint32
	if obs.Digest != "" {
		fp = hash32(obs.Digest)
	}
	var lm int64
	hasLM := !obs.LastModified.IsZero()
	if hasLM {
		lm = obs.LastModified.Unix()
	}
	switch {
	case obs.Changed == records.Changed:
		changed = true
	case obs.Changed == records.Unchanged:
		changed = false
	case fp != 0:
		changed = o.flags&hasDigest != 0 && fp != o.digest
	case hasLM:
		changed = o.flags&hasLastMod != 0 && lm > o.lastMod
	default:
		known = false
	}
	newLM := hasLM && (o.flags&hasLastMod == 0 || lm > o.lastMod)
	if fp != 0 {
		o.digest = fp
		o.flags |= hasDigest
	}
	if !known {
		return false
	}
	v := estimators.Visit{Time: ts, Changed: changed}
	if hasLM {
		v.LastModified, v.HasLastModified = float64(lm), true
	}
	o.Change.Visit(v)
	o.flags |= hasChange | hasChangeWin
	eff.Visits = true
	var sh windows.Shift
	var ok bool
	seasonal := site != nil && m.Seasonal.Enabled()
	if hasLM {
		// Last-date-of-change (001 §1.2): a new Last-Modified is an update
		// point at that date.
		if newLM && lm <= int64(ts)+1 {
			x := float64(lm)
			if seasonal {
				// Dates from before the site was watched (a page's first
				// Last-Modified may be years old) are not counted: they
				// would start the profile's learning clock in the past.
				recent := ts-float64(lm) <= maxProfileLag
				if recent {
					x = site.Operational(float64(lm), &m.Seasonal)
					site.Observe(float64(lm), &m.Seasonal)
				} else {
					x = site.At(float64(lm))
				}
				restartBefore(&o.ChangeWin, site)
			}
			sh, ok = o.ChangeWin.Event(x, &m.Windows)
		}
	} else {
		// Existence-of-change (001 §1.2): the visit times run on the
		// change profile's clock (learned from other pages' dates) but are
		// not counted in it.
		x := ts
		if seasonal {
			x = site.At(ts)
			restartBefore(&o.ChangeWin, site)
		}
		sh, ok = o.ChangeWin.Visit(x, changed, &m.Windows)
	}
	if newLM {
		o.lastMod = lm
		o.flags |= hasLastMod
	}
	if ok {
		eff.ChangeShifts = append(eff.ChangeShifts, sh)
	}
	return true
}

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

// Site returns the host part of an object URL ("" when it has none).
func Site(object string) string {
	i := strings.Index(object, "://")
	if i < 0 {
		return ""
	}
	rest := object[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if k := strings.LastIndexByte(rest, '@'); k >= 0 {
		rest = rest[k+1:]
	}
	return rest
}

// AppendBinary appends the object's compact encoding to dst. The encoding is
// lossless: DecodeBinary of it gives an Object equal to o. Layout: version,
// flags, varint lastTime (ms), varint lastTime−lastEmit, then the present
// parts in flag order: dedup (uint32 source hash, varint offset), uint32
// digest fingerprint, varint Last-Modified, access period (varint index,
// uvarint count), and the Change, ChangeWin, Access and AccessWin
// encodings, each with lastTime as its reference time (AppendBinaryAt).
func (o *Object) AppendBinary(dst []byte) []byte {
	dst = append(dst, encodingVersion, o.flags)
	dst = binary.AppendVarint(dst, o.lastTime)
	dst = binary.AppendVarint(dst, o.lastTime-o.lastEmit)
	if o.flags&hasDedup != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, o.dedupHash)
		dst = binary.AppendVarint(dst, o.dedupOff)
	}
	if o.flags&hasDigest != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, o.digest)
	}
	if o.flags&hasLastMod != 0 {
		dst = binary.AppendVarint(dst, o.lastMod)
	}
	if o.flags&hasPeriod != 0 {
		dst = binary.AppendVarint(dst, o.periodIdx)
		dst = binary.AppendUvarint(dst, uint64(o.periodCount))
	}
	ref := seconds(o.lastTime)
	if o.flags&hasChange != 0 {
		dst = o.Change.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasChangeWin != 0 {
		dst = o.ChangeWin.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasAccess != 0 {
		dst = o.Access.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasAccessWin != 0 {
		dst = o.AccessWin.AppendBinaryAt(dst, ref)
	}
	return dst
}

// DecodeBinary replaces o with the object encoded in src. Errors wrap
// ErrCorrupt; on error o is unspecified.
func (o *Object) DecodeBinary(src []byte) error {
	*o = Object{}
	if len(src) < 2 {
		return fmt.Errorf("%w: %d bytes", ErrCorrupt, len(src))
	}
	if src[0] != encodingVersion && src[0] != 1 {
		return fmt.Errorf("%w: unknown version %d", ErrCorrupt, src[0])
	}
	o.flags = src[1]
	d := wire.NewReader(src[2:])
	o.lastTime = d.Varint()
	o.lastEmit = o.lastTime - d.Varint()
	if o.flags&hasDedup != 0 {
		o.dedupHash = d.Uint32()
		o.dedupOff = d.Varint()
	}
	if o.flags&hasDigest != 0 {
		o.digest = d.Uint32()
	}
	if o.flags&hasLastMod != 0 {
		o.lastMod = d.Varint()
	}
	if o.flags&hasPeriod != 0 {
		o.periodIdx = d.Varint()
		c := d.Uvarint()
		if c > math.MaxUint32 {
			d.Fail("period count overflows uint32")
		}
		o.periodCount = uint32(c)
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// Version-1 sub-states are in their own first layouts, which ignore ref.
	ref := seconds(o.lastTime)
	sub := []struct {
		flag uint8
		name string
		dec  func([]byte, float64) (int, error)
	}{
		{hasChange, "change", o.Change.DecodeBinaryAt},
		{hasChangeWin, "change window", o.ChangeWin.DecodeBinaryAt},
		{hasAccess, "access", o.Access.DecodeBinaryAt},
		{hasAccessWin, "access window", o.AccessWin.DecodeBinaryAt},
	}
	for _, s := range sub {
		if o.flags&s.flag == 0 {
			continue
		}
		n, err := s.dec(d.Rest(), ref)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, s.name, err)
		}
		d.Skip(n)
	}
	if rest := len(d.Rest()); rest != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, rest)
	}
	return nil
}
