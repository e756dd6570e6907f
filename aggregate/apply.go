package aggregate

import (
	"math"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

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
	var pop population
	if site != nil {
		pop = population{&site.Pool, &site.Trend, &site.Flags, &site.Temper}
	}
	return o.applyAt(obs, m, site, pop, eff)
}

// population is the part of a SiteState that an object's visits fold into
// whatever its seasonal state (siteprior.go): the change-rate prior's
// statistics, the population trend of complete histories, the sums of
// the spacing factors and the tempering scores (sitetemper.go; nil: none;
// all four or none).
type population struct {
	pool   *estimators.PoolStats
	trend  *estimators.Trend
	flags  *estimators.FlagPool
	temper *[estimators.TemperPoints]float64
}

// applyAt is ApplyAt with the population's statistics in pop, apart from
// the seasonal state: an object without a seasonal profile (no host, or
// seasonal baselines off) still folds its evidence into its population's
// prior (siteprior.go).
func (o *Object) applyAt(obs *records.Observation, m *Model, site *SiteState, pop population, eff *Effects) Outcome {
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
	if obs.Format == "sitemap" && obs.Kind == records.KindVisit && !obs.LastModified.IsZero() && !o.sitemap(obs, site, eff) {
		// A site's lastmod that is no evidence (sitemap_trust.go): checked
		// against the visits, not applied.
		return NoInformation
	}
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
		var before estimators.Evidence
		var beforeF estimators.FlagTerm
		had, hadF := false, false
		if pop.pool != nil && o.HasChange() {
			before, had = o.Change.Evidence(&m.Estimators)
			beforeF, hadF = o.Change.FlagTerm(&m.Estimators)
		}
		pv := o.Change.Visits()
		pt, px := o.Change.LastVisit(), o.Change.Changes()
		if o.visit(obs, ts, reordered, m, p, eff) {
			if pop.pool != nil {
				if had && o.Change.Visits() == pv+1 {
					// scored before the prior takes the visit in (T3)
					scoreTemper(pop.temper, pop.pool, before, o, pt, px)
				}
				foldPrior(pop.pool, pop.trend, before, had, o, m)
				foldFlags(pop.flags, beforeF, hadF, o, m)
			}
		} else if !obs.Kind.IsAccess() {
			outcome = NoInformation
		}
		if obs.Format != "sitemap" && site != nil && (eff.SitemapCheck == verdictAgree || eff.SitemapCheck == verdictDisagree) {
			site.Sitemap.count(eff.SitemapCheck) // a visit judged a sitemap's standing claim
			eff.SiteChanged = true
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
	if !m.DisableObjectRhythm && m.Seasonal.Enabled() {
		op = o.rhythm(t, op, m, site)
	}
	// rises are also confirmed by the scan (Alerts.ScanAlarms; a copy of
	// the windows' config: m's fields may be set after its defaults)
	wc := m.Windows
	wc.ScanAlarms = m.Alerts.scanAlarms()
	if sh, ok := o.AccessWin.Event(op, &wc); ok {
		eff.AccessShifts = append(eff.AccessShifts, sh)
	}
	eff.Accesses = true
}

// rhythm counts the access at t (Unix ms) in the object's Rhythm, starts
// learning one when the object is busy enough, tests it against the
// site's hour factors when the learning is over (switching the access
// window to the object's own clock when they do not fit), and returns the
// access's time on the window's clock (siteOp: on the site's, used
// otherwise).
func (o *Object) rhythm(t int64, siteOp float64, m *Model, site *windows.Profile) float64 {
	r := &o.Rhythm
	ts := seconds(t)
	if !r.Started() {
		if n, x := o.AccessWin.Span(); n >= RhythmMinPoints && x > 0 && float64(n)/x*7*86400 >= RhythmMinWeekly {
			// counting starts at the next UTC midnight: every hour of the
			// day then has the same exposure
			r.first = (floorDiv(t, 86400000) + 1) * 86400
			r.lastAccess = t
		}
		return siteOp
	}
	prev := r.lastAccess
	r.lastAccess = t
	if ts < float64(r.first) {
		return siteOp // before counting starts (or the next check)
	}
	if prev >= r.first*1000 && floorDiv(t, 3600000) != floorDiv(prev, 3600000) {
		r.fold(prev) // prev's hour is over
	}
	if d := floorDiv(t, 86400000) - max(floorDiv(prev, 86400000), r.first/86400); d > 0 {
		r.newDay(d)
	}
	// the clock's factors are the completed hours' (the held count is
	// this hour's)
	var op float64
	switch {
	case r.active:
		c := o.clock(site, m)
		c.ta, c.la = seconds(prev), o.AccessWin.Last()
		op = math.Round(c.At(ts)*1000) / 1000
	case ts-float64(r.first) < RhythmLearning:
		op = siteOp
	default:
		// the learning is over (whole days counted): do the site's
		// factors fit the object's counts?
		if r.fits(t, siteHours(site)) {
			r.siteFits = true
			r.counts, r.scale, r.cur, r.days = [24]uint8{}, 0, 0, 0
			r.first = floorDiv(t, 86400000)*86400 + RhythmRecheck
			return siteOp
		}
		// the window starts afresh on the object's clock (Λ = t at its
		// origin, like a site profile's activation)
		r.active, r.siteFits = true, false
		o.AccessWin = windows.Segmenter{}
		op = ts
	}
	r.cur = uint16(min(int(r.cur)+1, math.MaxUint16))
	return op
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
	if gone(obs.Status) {
		// 404 Not Found, 410 Gone: the object is not there (deleted, or
		// never existed). Whatever the source says of the response's
		// change, it is of an error page: the object is reported gone
		// (records.Estimate.Gone) until a later visit sees content.
		if reordered {
			return false
		}
		o.Change.MarkGone()
		o.flags |= hasChange
		eff.Visits = true
		return true
	}
	if obs.Changed == records.ChangeUnknown && errorOrRedirect(obs.Status) {
		// A 404 page, a server error or a redirect: its digest is of that
		// response's body, not of the object's content, and must neither
		// count as a change nor replace the content's digest.
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
	// A change event of a complete history (records.KindChange; records
	// written before that kind existed carry changes-tsv's visits) is a
	// change, whatever else the record holds.
	complete := obs.Kind == records.KindChange || (obs.Format == "changes-tsv" && obs.Kind == records.KindVisit && obs.Changed == records.Changed)
	switch {
	case complete, obs.Changed == records.Changed:
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
	if obs.Format != "sitemap" && (fp != 0 || obs.Changed != records.ChangeUnknown) {
		eff.SitemapCheck = o.sm.crawl(int64(ts), changed) // what the sitemap checks compare with
	}
	v := estimators.Visit{Time: ts, Changed: changed, Complete: complete}
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

// errorOrRedirect reports whether an HTTP status is a redirect or an error
// (3xx except 304 Not Modified, 4xx, 5xx): a response that does not carry
// the object's content.
func errorOrRedirect(status int) bool {
	return status >= 300 && status < 600 && status != 304
}

// gone reports whether an HTTP status says that the object is not there:
// 404 Not Found or 410 Gone.
func gone(status int) bool { return status == 404 || status == 410 }
