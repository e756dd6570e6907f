package query

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/changerate/changerate/records"
)

// The Index's reads: rankings, download-plan candidates, alerts and
// sites. Its writes (estimates, alerts, eviction) are in index.go.

// Ranked is one object of a ranking.
type Ranked struct {
	Object string  `json:"object"`
	Site   string  `json:"site,omitempty"`
	Kind   string  `json:"kind"`
	Lower  float64 `json:"lower"`
	Upper  float64 `json:"upper"`
	Value  float64 `json:"value"`
}

// Top returns at most limit objects of ranking by (ByChangeRate, ...) on
// site ("" for every site), in descending order of the lower 95 % bound.
func (x *Index) Top(by string, site string, limit int) []Ranked {
	b, ok := byIndex(by)
	if !ok || limit <= 0 {
		return nil
	}
	out := make([]Ranked, 0, min(limit, 64))
	add := func(e *entry) bool {
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
		x.global[b].Ascend(func(r ranked) bool { return add(r.e) })
		return out
	}
	sc := x.sites[site]
	if sc == nil {
		return out
	}
	if t := sc.tree[b]; t != nil {
		t.Ascend(func(r ranked) bool { return add(r.e) })
	}
	return out
}

// Candidate is one object a plan may visit: its change rate and interval,
// the time of its latest visit and its recommended next visit.
type Candidate struct {
	Object    string
	Site      string
	Rate      float64
	Lo, Hi    float64
	AsOf      time.Time
	NextVisit time.Time // zero: none
}

// Candidates returns the objects with a change estimate on site ("": all),
// in descending order of the lower bound, at most limit of them (0: all).
func (x *Index) Candidates(site string, limit int) []Candidate {
	var out []Candidate
	add := func(e *entry) bool {
		s := e.s[byChange]
		c := Candidate{Object: e.name, Site: e.site, Rate: s.v, Lo: s.lo, Hi: s.hi, AsOf: time.UnixMilli(e.asOf).UTC()}
		if e.nextVisit != 0 {
			c.NextVisit = time.UnixMicro(e.nextVisit).UTC()
		}
		out = append(out, c)
		return limit <= 0 || len(out) < limit
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if site == "" {
		x.global[byChange].Ascend(func(r ranked) bool { return add(r.e) })
		return out
	}
	sc := x.sites[site]
	if sc == nil {
		return out
	}
	if t := sc.tree[byChange]; t != nil {
		t.Ascend(func(r ranked) bool { return add(r.e) })
	}
	return out
}

// Alerts returns the most recent alerts, newest first, with as_of at or
// after since (zero: any) on site ("": any), at most limit.
func (x *Index) Alerts(since time.Time, site string, limit int) []json.RawMessage {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []json.RawMessage
	n := len(x.alerts)
	for i := 0; i < n && len(out) < limit; i++ {
		a := &x.alerts[((x.alertNext-1-i)%n+n)%n]
		if (!since.IsZero() && a.asOf.Before(since)) || (site != "" && a.site != site) {
			continue
		}
		out = append(out, a.raw)
	}
	return out
}

// shiftScore ranks an alert by the magnitude of its shift: the ratio ρ of
// the rate after to the rate before (or before to after, for a fall), with
// its exact conditional 95 % interval. Given n_b points in the closed window
// of length T_b and n_a in the new one of length T_a, n_a given n_a+n_b is
// binomial with p = ρT_a/(ρT_a+T_b) under Poisson counts; the Clopper-Pearson
// interval of p maps to ρ = p/(1−p)·T_b/T_a (T_a ends at the update point
// that confirmed the shift). The score is ln ρ with ln of
// the interval's bounds (0 when the alert lacks the window lengths).
func shiftScore(a *records.Alert) score {
	nb, na := float64(a.Before.Points), float64(a.After.Points)
	tb := a.After.Start.Sub(a.Before.Start).Seconds()
	// The new window's points were counted up to the update point that
	// confirmed the shift (WindowEnd); the alert itself may be published
	// later, when its testing period closes (AsOf).
	end := a.AsOf
	if a.WindowEnd != nil {
		end = *a.WindowEnd
	}
	ta := end.Sub(a.After.Start).Seconds()
	up := a.RateAfter >= a.RateBefore
	v := math.Abs(math.Log(a.RateAfter / a.RateBefore))
	if !(nb > 0 && na > 0 && tb > 0 && ta > 0) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		return score{v: v, lo: 0, hi: v, has: true}
	}
	lo, hi := clopperPearson(na, na+nb)
	ratio := func(p float64) float64 { return p / (1 - p) * tb / ta }
	rlo, rhi := ratio(lo), ratio(hi)
	if !up {
		rlo, rhi = 1/rhi, 1/rlo
	}
	sc := score{v: v, lo: math.Log(rlo), hi: math.Log(rhi), has: true}
	if math.IsNaN(sc.lo) || math.IsInf(sc.lo, 0) {
		sc.lo = 0
	}
	if math.IsNaN(sc.hi) || math.IsInf(sc.hi, 1) {
		sc.hi = math.MaxFloat64
	}
	return sc
}

// clopperPearson is the exact 95 % interval of a binomial proportion with
// x successes in n trials.
func clopperPearson(x, n float64) (lo, hi float64) {
	const a = 0.05
	if x > 0 {
		lo = distuv.Beta{Alpha: x, Beta: n - x + 1}.Quantile(a / 2)
	}
	hi = 1
	if x < n {
		hi = distuv.Beta{Alpha: x + 1, Beta: n - x}.Quantile(1 - a/2)
	}
	return lo, hi
}

// SiteCount is one site of the index and its number of objects.
type SiteCount struct {
	Site    string `json:"site"`
	Objects int    `json:"objects"`
}

// Sites returns the indexed sites with the most objects first (then by
// name), at most limit.
func (x *Index) Sites(limit int) []SiteCount {
	x.mu.Lock()
	out := make([]SiteCount, 0, len(x.sites))
	for s, sc := range x.sites {
		n := sc.n
		out = append(out, SiteCount{s, n})
	}
	x.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Objects != out[j].Objects {
			return out[i].Objects > out[j].Objects
		}
		return out[i].Site < out[j].Site
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
