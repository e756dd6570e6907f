package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

// errNotFound is returned by lookups of objects the store does not hold.
var errNotFound = errors.New("query: object not found")

// loaded is an object's committed state, its site's seasonal profile (nil
// when the store holds none) and its partition's as-of time (zero: none).
type loaded struct {
	obj  *aggregate.Object
	site *aggregate.SiteState
	asOf time.Time
}

// load reads and decodes the committed state of object, of its site's
// seasonal profile and its partition's as-of time (the latest event time
// the aggregator committed, aggregate.ReorderLatest), in one store read.
func (s *Server) load(ctx context.Context, object string) (loaded, error) {
	p, err := s.locate.Locate(ctx, object)
	if err != nil {
		return loaded{}, &unavailableError{"Kafka", fmt.Errorf("query: locate %s: %w", object, err)}
	}
	// the site's state; for an object without a host, its population's
	// prior (the site "", aggregate.PriorOnly)
	keys := []string{object, aggregate.ReorderObject, aggregate.SiteKeyPrefix + aggregate.Site(object)}
	vals, err := s.store.Get(ctx, p, keys, nil)
	if err != nil {
		return loaded{}, &unavailableError{"state store", fmt.Errorf("query: read %s: %w", object, err)}
	}
	if len(vals) < 1 || vals[0] == nil {
		return loaded{}, errNotFound
	}
	var o aggregate.Object
	if err := o.DecodeBinary(vals[0]); err != nil {
		return loaded{}, fmt.Errorf("query: decode %s: %w", object, err)
	}
	l := loaded{obj: &o}
	if len(vals) > 1 {
		l.asOf, _ = aggregate.ReorderLatest(vals[1])
	}
	if len(vals) > 2 && vals[2] != nil {
		l.site = new(aggregate.SiteState)
		if err := l.site.DecodeBinary(vals[2]); err != nil {
			return loaded{}, fmt.Errorf("query: decode the site profile of %s: %w", object, err)
		}
	}
	return l, nil
}

// estimates builds the object's change and access estimate records exactly
// as the aggregator publishes them, with its site's seasonal profile (nil
// when the object has none), as of its partition's committed as-of (a
// complete history's exposure ends there, aggregate.ChangeEstimateAsOf).
func (s *Server) estimates(l loaded, object string) (change, access *records.Estimate) {
	o := l.obj
	var view aggregate.SiteState
	site := aggregate.PriorView(aggregate.Site(object), &s.model, l.site, &view)
	var es estimators.Estimates
	if rec, ok := o.ChangeEstimateAsOf(object, &s.model, site, l.asOf, &es); ok {
		change = &rec
	}
	if rec, ok := o.AccessEstimateAt(object, &s.model, site, &es); ok {
		access = &rec
	}
	return change, access
}

// ObjectView is /v1/objects/view: everything the object page shows.
type ObjectView struct {
	Object string            `json:"object"`
	Site   string            `json:"site,omitempty"`
	Change *records.Estimate `json:"change,omitempty"`
	Access *records.Estimate `json:"access,omitempty"`
	// ChangePlot and AccessPlot are the Duane plots of the current change
	// and access windows.
	ChangePlot *DuaneView `json:"change_plot,omitempty"`
	AccessPlot *DuaneView `json:"access_plot,omitempty"`
	// Timeline lists what the state knows of the object's history, in
	// time order.
	Timeline []TimelineEvent `json:"timeline"`
	// SiteSitemap is the object's site's record of sitemap checks (in the
	// object's partition), when the site has any: whether its lastmods
	// count as evidence.
	SiteSitemap *SiteSitemap `json:"site_sitemap,omitempty"`
}

// SiteSitemap is a site's sitemap trust (aggregate.SitemapTrust): the
// checks of its lastmods against the visits that agreed and disagreed,
// the trust (agree+1)/(agree+disagree+2), and whether its lastmods count
// as evidence.
type SiteSitemap struct {
	Agree    uint32  `json:"agree"`
	Disagree uint32  `json:"disagree"`
	Trust    float64 `json:"trust"`
	Trusted  bool    `json:"trusted"`
}

// DuaneView is a window's Duane plot (001 §3.3–3.4): y = ln MTBU_c(t) =
// ln(t/N(t)) against x = ln t, t in seconds since the window origin. The
// O(1) state keeps the fit, the points' mean and spread and the last point,
// not every point.
type DuaneView struct {
	Origin time.Time `json:"origin"`
	Points int64     `json:"points"`
	// Slope γ and intercept ln α of the least-squares line (n ≥ 3).
	Slope    *float64 `json:"slope,omitempty"`
	LogAlpha *float64 `json:"log_alpha,omitempty"`
	// Line is the fitted line's two ends [[x0, y0], [x1, y1]], from
	// X̄ − 2·sd(X) (not before the first possible point) to ln t_n.
	Line [][2]float64 `json:"line,omitempty"`
	// Centroid (X̄, X̄ − ln n!/n) is the mean of the plotted points; it lies
	// on the fitted line.
	Centroid *[2]float64 `json:"centroid,omitempty"`
	// Last is the window's last point (ln t_n, ln(t_n/n)).
	Last *[2]float64 `json:"last,omitempty"`
}

// TimelineEvent is one dated fact of an object's history.
type TimelineEvent struct {
	Time  time.Time `json:"time"`
	Event string    `json:"event"`
	Kind  string    `json:"kind"` // change or access
}

func duaneView(p windows.DuanePlot) *DuaneView {
	if !p.HasPoints {
		return nil
	}
	v := &DuaneView{Origin: unixTime(p.Origin), Points: p.Points}
	lx := math.Log(p.Last)
	last := [2]float64{lx, lx - math.Log(float64(p.Points))}
	if finite(last[0]) && finite(last[1]) {
		v.Last = &last
	}
	if p.HasFit && finite(p.Slope) && finite(p.LogAlpha) {
		v.Slope, v.LogAlpha = &p.Slope, &p.LogAlpha
		c := [2]float64{p.MeanLogT, p.MeanLogT - p.MeanLogI}
		v.Centroid = &c
		x0 := p.MeanLogT - 2*p.SDLogT
		if x0 >= lx {
			x0 = lx - 1
		}
		v.Line = [][2]float64{{x0, p.LogAlpha + p.Slope*x0}, {lx, p.LogAlpha + p.Slope*lx}}
	}
	return v
}

// view builds the ObjectView of object.
func (s *Server) view(ctx context.Context, object string) (*ObjectView, error) {
	l, err := s.load(ctx, object)
	if err != nil {
		return nil, err
	}
	o, site := l.obj, l.site
	v := &ObjectView{Object: object, Site: aggregate.Site(object), Timeline: []TimelineEvent{}}
	v.Change, v.Access = s.estimates(l, object)
	if site != nil && site.Sitemap.Checks() > 0 {
		t := site.Sitemap
		v.SiteSitemap = &SiteSitemap{Agree: t.Agree, Disagree: t.Disagree, Trust: t.Trust(), Trusted: t.Trusted()}
	}
	add := func(t time.Time, kind, ev string) {
		if !t.IsZero() {
			v.Timeline = append(v.Timeline, TimelineEvent{Time: t, Event: ev, Kind: kind})
		}
	}
	if v.Change != nil {
		v.ChangePlot = duaneView(o.ChangeWin.Duane())
		asOf := v.Change.AsOf
		if span := o.Change.Span(); span > 0 && v.Change.Observations > 1 {
			// Span runs from the first to the latest visit; the latest
			// visit is at or before as_of (accesses may follow it).
			if iv, ok := o.Change.NextInterval(&s.model.Estimators); ok && v.Change.NextVisit != nil && v.Change.NextVisit.After(asOf) {
				latest := v.Change.NextVisit.Add(-time.Duration(iv * float64(time.Second)))
				add(latest.Add(-time.Duration(span*float64(time.Second))), records.EstimateChange, "first visit")
				add(latest, records.EstimateChange, "latest visit")
			} else {
				add(asOf.Add(-time.Duration(span*float64(time.Second))), records.EstimateChange, "first visit (at most)")
			}
		}
		if w := v.Change.Window; w != nil {
			add(w.Start, records.EstimateChange, fmt.Sprintf("current window starts (%s, %d changes)", w.State, w.Points))
			if w.NextUpdate != nil {
				add(*w.NextUpdate, records.EstimateChange, "predicted next change (window model)")
			}
		}
		if v.Change.NextVisit != nil {
			add(*v.Change.NextVisit, records.EstimateChange, "recommended next visit")
		}
		if v.Change.TTLS != nil {
			add(asOf.Add(time.Duration(*v.Change.TTLS*float64(time.Second))), records.EstimateChange, "cache TTL expires (copy fetched at as_of)")
		}
		if last := o.LastTime(); asOf.After(last) {
			// A complete history is estimated as of its partition's
			// latest event time (aggregate.ChangeEstimateAsOf).
			add(last, records.EstimateChange, "latest observation")
			add(asOf, records.EstimateChange, "as_of: partition's latest event (complete history observed to here)")
		} else {
			add(asOf, records.EstimateChange, "as_of: latest observation")
		}
	}
	if v.Access != nil {
		v.AccessPlot = duaneView(o.AccessWin.Duane())
		if w := v.Access.Window; w != nil {
			add(w.Start, records.EstimateAccess, fmt.Sprintf("current access window starts (%s, %d accesses)", w.State, w.Points))
			if w.NextUpdate != nil {
				add(*w.NextUpdate, records.EstimateAccess, "predicted next access (window model)")
			}
		}
		if v.Change == nil {
			add(v.Access.AsOf, records.EstimateAccess, "as_of: latest observation")
		}
	}
	sortTimeline(v.Timeline)
	return v, nil
}

func sortTimeline(t []TimelineEvent) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && t[j].Time.Before(t[j-1].Time); j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

func unixTime(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
