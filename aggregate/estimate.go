package aggregate

import (
	"math"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
	"gonum.org/v1/gonum/stat/distuv"
)

// AccessKeySuffix is appended to an object's name to key its access estimate
// in the compacted estimates topic, beside the change estimate keyed by the
// name alone. Canonical URLs never contain '#' (fragments are dropped), so
// the two keys cannot collide.
const AccessKeySuffix = "#access"

// timeOf converts float64 Unix seconds to a UTC time, rounded to the
// microsecond so that printed times are stable.
func timeOf(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

func ptr[T any](v T) *T { return &v }

// finite reports whether v can be published (not NaN, not ±Inf).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fill copies every defined estimator of es into the record; st (nil:
// allocate) provides the storage.
func fill(rec *records.Estimate, best estimators.Estimate, ok bool, es *estimators.Estimates, st *recordStore) {
	for i := 0; i < es.Len(); i++ {
		e := es.At(i)
		if !finite(e.Rate) {
			continue
		}
		st.setRate(rec, e.Key, e.Rate)
		if e.HasCI && finite(e.Lo) && finite(e.Hi) {
			st.setInterval(rec, e.Key, e.Lo, e.Hi)
		}
	}
	if ok && finite(best.Rate) {
		rec.RatePerS = st.float(best.Rate)
		rec.Estimator = best.Key
		if best.HasCI && finite(best.Lo) && finite(best.Hi) {
			rec.CI95 = st.pair(best.Lo, best.Hi)
		}
	}
}

// WindowRecord converts a window summary to its published form.
func WindowRecord(s windows.Summary) *records.Window { return windowRecord(s, nil) }

// windowRecord is WindowRecord with the storage of st (nil: allocate).
func windowRecord(s windows.Summary, st *recordStore) *records.Window {
	w := st.window()
	*w = records.Window{State: s.State.String(), Start: timeOf(s.Start), Points: s.Points, Model: s.Model}
	if s.HasWeibull && finite(s.Beta) && finite(s.Eta) {
		w.WeibullBeta, w.WeibullEta = st.float(s.Beta), st.float(s.Eta)
	}
	if s.HasDuane && finite(s.DuaneSlope) {
		w.DuaneSlope = st.float(s.DuaneSlope)
	}
	if s.HasRate && finite(s.Rate) {
		w.RatePerS = st.float(s.Rate)
	} else {
		w.Model = ""
	}
	if s.HasNext && finite(s.NextUpdate) {
		w.NextUpdate = st.time(timeOf(s.NextUpdate))
	}
	return w
}

// ChangeEstimate builds the object's change estimate, valid at the time of
// its latest observation. ok is false when the object has seen no visit.
// scratch is reused to avoid allocation in the estimators.
func (o *Object) ChangeEstimate(object string, m *Model, scratch *estimators.Estimates) (rec records.Estimate, ok bool) {
	return o.changeEstimate(object, Site(object), m, nil, 0, scratch, nil)
}

// ChangeEstimateAt is ChangeEstimate for an object whose change window ran
// on the operational time of its site's change profile (see ApplyAt): the
// window's times are published in real time and its rates are
// deseasonalised.
func (o *Object) ChangeEstimateAt(object string, m *Model, site *SiteState, scratch *estimators.Estimates) (rec records.Estimate, ok bool) {
	return o.changeEstimate(object, Site(object), m, site, 0, scratch, nil)
}

// ChangeEstimateAsOf is ChangeEstimateAt as of the partition's as-of time
// asOf (the latest event time its aggregator has seen; zero: none). A
// complete history (estimators.Change.Complete) is observed up to it: its
// estimate and the record's as_of are at asOf when it is after the
// object's latest observation (estimators/events.go E1). Other objects
// keep the time of their latest observation.
func (o *Object) ChangeEstimateAsOf(object string, m *Model, site *SiteState, asOf time.Time, scratch *estimators.Estimates) (rec records.Estimate, ok bool) {
	var ms int64
	if !asOf.IsZero() {
		ms = asOf.UnixMilli()
	}
	return o.changeEstimate(object, Site(object), m, site, ms, scratch, nil)
}

// estimateTime is the time (Unix ms) a change estimate is computed at:
// the object's latest observation, or, for a complete history, the
// partition's as-of partAsOf (Unix ms; 0: none) when later.
func (o *Object) estimateTime(partAsOf int64) int64 {
	if partAsOf > o.lastTime && o.Change.Complete() {
		return partAsOf
	}
	return o.lastTime
}

// changeEstimate is ChangeEstimateAsOf, for an object whose host is
// Site(object), with the partition's as-of partAsOf (Unix ms; 0: none)
// and the record's storage in st (nil: allocated).
func (o *Object) changeEstimate(object, host string, m *Model, site *SiteState, partAsOf int64, scratch *estimators.Estimates, st *recordStore) (rec records.Estimate, ok bool) {
	st.reset()
	if !o.HasChange() {
		return records.Estimate{}, false
	}
	asOf := seconds(o.estimateTime(partAsOf))
	rec = records.Estimate{
		Object: object, Site: host, Kind: records.EstimateChange, AsOf: timeOf(asOf),
		Observations: o.Change.Visits(), Changes: o.Change.Changes(),
	}
	scratch.Reset()
	// The site prior's estimate, where the population publishes one,
	// replaces the best-estimate rule's choice (siteprior.go): the rule is
	// then not applied, only the estimators it would choose from listed.
	best, bok := o.sitePrior(m, site, partAsOf, scratch)
	if bok {
		o.Change.EstimatesIn(asOf, &m.Estimators, scratch)
		fill(&rec, estimators.Estimate{}, false, scratch, st)
		publishPrior(&rec, st, best)
	} else {
		var flags *estimators.FlagPool
		if site != nil {
			fl := siteFlags(site, partAsOf)
			flags = &fl
		}
		best, bok = o.Change.EstimateIn(asOf, &m.Estimators, flags, scratch)
		fill(&rec, best, bok, scratch, st)
	}
	if o.flags&hasChangeWin != 0 {
		var p *windows.Profile
		if site != nil {
			p = &site.Change
		}
		sum := currentReal(&o.ChangeWin, p, asOf, m)
		rec.Window = windowRecord(sum, st)
		if followWindow(&rec, st, &o.ChangeWin, sum, m) {
			best, bok = estimators.Estimate{Key: rec.Estimator, Rate: *rec.RatePerS}, true
		}
	}
	if o.Change.Gone() {
		rec.Gone = true
		rec.RatePerS, rec.Estimator, rec.CI95 = nil, "", nil
		return rec, true
	}
	if t, ok := o.Change.NextVisitFrom(asOf, &m.Estimators, best, bok); ok && finite(t) {
		rec.NextVisit = st.time(timeOf(t))
	}
	if bok {
		if ttl, ok := estimators.TTL(best.Rate, m.PStale); ok && finite(ttl) {
			rec.TTLS = st.float(ttl)
		}
	}
	o.publishPlan(&rec, st, m, site, partAsOf)
	return rec, true
}

// AccessEstimate builds the object's access estimate, valid at the time of
// its latest observation. ok is false when the object has seen no access.
// It is AccessEstimateAt without a site profile.
func (o *Object) AccessEstimate(object string, m *Model, scratch *estimators.Estimates) (rec records.Estimate, ok bool) {
	return o.accessEstimate(object, Site(object), m, nil, scratch, nil)
}

// AccessEstimateAt is AccessEstimate for an object whose access window ran
// on the operational time of site's profile (see ApplyAt): the window's
// times are published in real time, its rates are deseasonalised (the
// long-run rate ν of the periodic intensity, windows.Profile eq. S1).
func (o *Object) AccessEstimateAt(object string, m *Model, site *SiteState, scratch *estimators.Estimates) (rec records.Estimate, ok bool) {
	return o.accessEstimate(object, Site(object), m, site, scratch, nil)
}

// accessEstimate is AccessEstimateAt, for an object whose host is
// Site(object), with the record's storage in st (nil: allocated).
func (o *Object) accessEstimate(object, host string, m *Model, site *SiteState, scratch *estimators.Estimates, st *recordStore) (rec records.Estimate, ok bool) {
	st.reset()
	if !o.HasAccess() {
		return records.Estimate{}, false
	}
	asOf := seconds(o.lastTime)
	rec = records.Estimate{
		Object: object, Site: host, Kind: records.EstimateAccess, AsOf: timeOf(asOf),
		Observations: o.Access.Accesses(),
	}
	scratch.Reset()
	best, bok := o.Access.Estimate(asOf, &m.Estimators, scratch)
	fill(&rec, best, bok, scratch, st)
	if o.flags&hasAccessWin != 0 {
		var p *windows.Profile
		if site != nil {
			p = &site.Access
		}
		var sum windows.Summary
		if o.Rhythm.Active() {
			sum = currentOn(&o.AccessWin, o.clock(p, m), asOf, m)
		} else {
			sum = currentReal(&o.AccessWin, p, asOf, m)
		}
		rec.Window = windowRecord(sum, st)
		followWindow(&rec, st, &o.AccessWin, sum, m)
	}
	return rec, true
}

// AccessReport builds the report of one completed access period, with the
// object's long-run access estimators at the period's end.
func (o *Object) AccessReport(object string, p Period, m *Model, scratch *estimators.Estimates) records.AccessReport {
	length := float64(p.Length)
	lo, hi := garwood(p.Accesses)
	rep := records.AccessReport{
		Object: object, Site: Site(object),
		PeriodStart: time.Unix(p.Start, 0).UTC(), AsOf: time.Unix(p.Start+p.Length, 0).UTC(),
		Accesses: p.Accesses, RatePerS: float64(p.Accesses) / length,
		CI95: [2]float64{lo / length, hi / length},
	}
	var rec records.Estimate
	scratch.Reset()
	best, ok := o.Access.Estimate(seconds(o.lastTime), &m.Estimators, scratch)
	fill(&rec, best, ok, scratch, nil)
	rep.Estimates, rep.Intervals = rec.Estimates, rec.Intervals
	return rep
}

// garwood is the exact 95% confidence interval of a Poisson mean after
// observing k events (Garwood 1936): [χ²(0.025; 2k)/2, χ²(0.975; 2k+2)/2].
func garwood(k int64) (lo, hi float64) {
	if k > 0 {
		lo = distuv.ChiSquared{K: float64(2 * k)}.Quantile(0.025) / 2
	}
	hi = distuv.ChiSquared{K: float64(2*k + 2)}.Quantile(0.975) / 2
	return lo, hi
}

// Alert builds the alert record of a rate shift.
func Alert(object, kind string, sh windows.Shift) records.Alert {
	a := records.Alert{
		Object: object, Site: Site(object), Kind: kind, AsOf: timeOf(sh.At),
		RateBefore: sh.RateBefore, RateAfter: sh.RateAfter,
		Before: *WindowRecord(sh.Before), After: *WindowRecord(sh.After),
		PValue: sh.PValue, Test: sh.Test,
	}
	return a
}

// currentOn is currentReal on an object's own clock.
func currentOn(st *windows.Segmenter, c *objClock, asOf float64, m *Model) windows.Summary {
	sum := st.Current(c.At(asOf), &m.Windows)
	sum.Start = c.Real(sum.Start)
	if sum.HasNext {
		sum.NextUpdate = c.Real(sum.NextUpdate)
	}
	return sum
}

// currentReal is the stream's current window at asOf (real time) when the
// stream runs on p's operational time (nil: real time), with the window's
// times converted back to real time.
func currentReal(st *windows.Segmenter, p *windows.Profile, asOf float64, m *Model) windows.Summary {
	if p == nil || !p.Active() {
		return st.Current(asOf, &m.Windows)
	}
	sum := st.Current(p.At(asOf), &m.Windows)
	sum.Start = p.Real(sum.Start)
	if sum.HasNext {
		sum.NextUpdate = p.Real(sum.NextUpdate)
	}
	return sum
}
