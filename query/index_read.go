package query

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
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
// site ("" for every site), in descending order of the lower 95 % bound
// (then by name). It scans the objects (those with a shift alert for
// ByShift): O(n log limit) for n objects.
func (x *Index) Top(by string, site string, limit int) []Ranked {
	ranked, _ := x.top(by, site, limit, false)
	return ranked
}

// TopRecords is Top with, for each object ranked, the record of its
// estimate of the ranked kind as the index holds it: the latest published
// record's object, site, kind, as_of, rate_per_s, estimator, ci95,
// observations and, for a change estimate, changes, next_visit and ttl_s
// (not its estimates, intervals or window: /v1/objects has the whole
// record). An object ranked by shift whose estimate of the alert's kind
// is not indexed has a nil record. It reads no store: /v1/top and /
// answer from it while Redis is away.
func (x *Index) TopRecords(by string, site string, limit int) ([]Ranked, []*records.Estimate) {
	return x.top(by, site, limit, true)
}

func (x *Index) top(by string, site string, limit int, withRecords bool) ([]Ranked, []*records.Estimate) {
	b, ok := byIndex(by)
	if !ok || limit <= 0 {
		return nil, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	items := x.rank(b, site, limit)
	out := make([]Ranked, 0, len(items))
	var recs []*records.Estimate
	if withRecords {
		recs = make([]*records.Estimate, 0, len(items))
	}
	names := x.namesOf(items)
	for _, it := range items {
		name := names[:x.entries[it.slot].nameLen]
		names = names[len(name):]
		e := &x.entries[it.slot]
		var s point
		kind := records.EstimateChange
		switch b {
		case byChange:
			s = e.s[byChange]
		case byAccess:
			s, kind = e.s[byAccess], records.EstimateAccess
		case byShift:
			sc := x.shifts[e.shift-1].s
			s, kind = point{lo: sc.lo, hi: sc.hi, v: sc.v}, x.shiftKind(e.shift-1)
		}
		siteName := x.sites[x.meta[it.slot].site].name
		out = append(out, Ranked{Object: name, Site: siteName, Kind: kind, Lower: s.lo, Upper: s.hi, Value: s.v})
		if withRecords {
			recs = append(recs, x.record(e, name, siteName, kind))
		}
	}
	return out, recs
}

// record is the estimate record of kind of the entry e (named name, of
// site) as the index holds it (TopRecords); nil when it holds none.
// Called with mu held.
func (x *Index) record(e *entry, name, site, kind string) *records.Estimate {
	b, bit, ci, seen, asOf := byChange, uint8(hasChange), uint8(ciChange), uint8(seenChange), e.asOf
	if kind == records.EstimateAccess {
		b, bit, ci, seen, asOf = byAccess, hasAccess, ciAccess, seenAccess, e.accessAsOf
	} else if kind != records.EstimateChange {
		return nil
	}
	if e.has&seen == 0 {
		return nil
	}
	rec := &records.Estimate{Object: name, Site: site, Kind: kind, AsOf: time.UnixMilli(asOf).UTC(), Observations: e.obs[b]}
	if e.has&bit != 0 {
		v := e.s[b].v
		rec.RatePerS = &v
	}
	if e.has&ci != 0 {
		lo := e.s[b].lo
		if b == byChange {
			lo = e.ciLo // s.lo is rankedLower's
		}
		rec.CI95 = &[2]float64{lo, e.s[b].hi}
	}
	if i := e.est[b]; i > 0 {
		rec.Estimator = x.estimators[i-1]
	}
	if b == byChange {
		rec.Changes = e.changes
		if e.nextVisit != 0 {
			t := time.UnixMicro(e.nextVisit).UTC()
			rec.NextVisit = &t
		}
		if e.has&hasTTL != 0 {
			ttl := e.ttl
			rec.TTLS = &ttl
		}
	}
	return rec
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
	// AccessRate is the object's access-rate estimate (per second), 0
	// when it has none.
	AccessRate float64
	// Evidence is the object's evidence [X, E] (records.Estimate.
	// PlanEvidence) and Prior its site's prior and ω as of Prior.AsOf,
	// when HasPlan: the freshness policy plans the object on Gamma(α₀ +
	// ωX, β₀ + ωE) with the latest Prior of its site among the candidates
	// (PlanPages; the index lists every candidate of a site with the
	// site's latest).
	Evidence [2]float64
	Prior    PlanPrior
	HasPlan  bool
}

// PlanPrior is a site's prior Gamma(Shape, Rate) (Rate per second) and
// the ω its visits chose, as of AsOf.
type PlanPrior struct {
	Shape, Rate, Omega float64
	AsOf               time.Time
}

// CandidateOf is the candidate the index lists for a change estimate
// record: its rate and interval as the index ranks them (recordFacts; a
// change estimate with no change seen ranks at a lower bound of 0), its
// site and as-of time; ok is false for a record the index lists no
// candidate for (no rate, or not a change estimate). It is what
// Candidates answers for an object whose latest record is rec, without
// its next visit and access rate.
func CandidateOf(rec *records.Estimate) (Candidate, bool) {
	if rec.Kind != records.EstimateChange {
		return Candidate{}, false
	}
	f := recordFacts(rec)
	if !f.sc.has {
		return Candidate{}, false
	}
	site := rec.Site
	c := Candidate{Object: rec.Object, Site: site, Rate: f.sc.v, Lo: f.sc.lo, Hi: f.sc.hi, AsOf: rec.AsOf.Truncate(time.Millisecond)}
	if f.hasPlan {
		c.Evidence, c.HasPlan = f.plan.ev, true
		c.Prior = PlanPrior{Shape: f.plan.prior[0], Rate: f.plan.prior[1], Omega: f.plan.omega, AsOf: c.AsOf}
	}
	return c, true
}

// Candidates returns the objects with a change estimate on site ("": all),
// in descending order of the lower bound (then by name), at most limit of
// them (0: all). It scans the objects and sorts the answer: O(n + m log m)
// for n objects and m answered.
func (x *Index) Candidates(site string, limit int) []Candidate {
	x.mu.Lock()
	defer x.mu.Unlock()
	items := x.rank(byChange, site, max(limit, 0))
	if len(items) == 0 {
		return nil
	}
	out := make([]Candidate, 0, len(items))
	names := x.namesOf(items)
	for _, it := range items {
		e := &x.entries[it.slot]
		name := names[:e.nameLen]
		names = names[len(name):]
		s := e.s[byChange]
		c := Candidate{Object: name, Site: x.sites[x.meta[it.slot].site].name, Rate: s.v, Lo: s.lo, Hi: s.hi, AsOf: time.UnixMilli(e.asOf).UTC()}
		if e.nextVisit != 0 {
			c.NextVisit = time.UnixMicro(e.nextVisit).UTC()
		}
		if e.has&hasAccess != 0 {
			c.AccessRate = e.s[byAccess].v
		}
		if si := &x.sites[x.meta[it.slot].site]; e.plan == 1 && si.hasPrior {
			c.Evidence, c.HasPlan = e.planEv, true
			c.Prior = PlanPrior{Shape: si.prior[0], Rate: si.prior[1], Omega: si.omega, AsOf: time.UnixMilli(si.priorAsOf).UTC()}
		}
		out = append(out, c)
	}
	return out
}

// rankItem is one object of a ranking being answered: the key of its
// lower bound (rankKey) and its slot.
type rankItem struct {
	key  uint64
	slot int32
}

// rankKey maps a lower bound to a key that orders as the ranking does:
// ascending keys are descending bounds (−0 as 0, NaN last).
func rankKey(lo float64) uint64 {
	var b uint64 // NaN: the lowest bound
	switch {
	case lo == 0:
		b = 1 << 63
	case lo == lo:
		b = math.Float64bits(lo)
		if b>>63 != 0 {
			b = ^b // negative: larger magnitudes first
		} else {
			b |= 1 << 63
		}
	}
	return ^b
}

// before reports whether a ranks before b: by descending lower bound,
// then by name.
func (x *Index) before(a, b rankItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return bytes.Compare(x.nameBytes(a.slot), x.nameBytes(b.slot)) < 0
}

// rank returns the objects of ranking b on site ("": every site) in
// ranking order, at most limit of them (0: all): a scan of the entries
// (of the site's slots, or of the shift scores for byShift) that keeps
// the limit best in a heap. Called with mu held.
func (x *Index) rank(b int, site string, limit int) []rankItem {
	id := int32(-1)
	if site != "" {
		var ok bool
		if id, ok = x.siteIDs[site]; !ok {
			return nil
		}
	}
	k := topK{x: x, limit: limit}
	switch {
	case b == byShift:
		for i := range x.shifts {
			r := &x.shifts[i]
			if r.s.has && (id < 0 || x.meta[r.owner].site == id) {
				k.push(rankKey(r.s.lo), r.owner)
			}
		}
	case id < 0:
		bit := uint8(1) << b
		for slot := range x.entries {
			if e := &x.entries[slot]; e.has&bit != 0 {
				k.push(rankKey(e.s[b].lo), int32(slot))
			}
		}
	default:
		bit := uint8(1) << b
		for slot, m := range x.meta {
			if m.site == id {
				if e := &x.entries[slot]; e.has&bit != 0 {
					k.push(rankKey(e.s[b].lo), int32(slot))
				}
			}
		}
	}
	slices.SortFunc(k.items, func(a, b rankItem) int {
		if x.before(a, b) {
			return -1
		}
		return 1 // distinct objects never tie: their names differ
	})
	return k.items
}

// topK keeps the limit best items pushed (all when limit is 0); once
// full, items is a heap whose root is the worst kept, of key worst.
type topK struct {
	x     *Index
	limit int
	items []rankItem
	full  bool
	worst uint64
}

func (k *topK) push(key uint64, slot int32) {
	if k.full {
		if key > k.worst {
			return // ranks after every item kept
		}
		it := rankItem{key: key, slot: slot}
		if !k.x.before(it, k.items[0]) {
			return
		}
		k.items[0] = it
		k.down(0)
		k.worst = k.items[0].key
		return
	}
	k.items = append(k.items, rankItem{key: key, slot: slot})
	if len(k.items) == k.limit {
		for i := len(k.items)/2 - 1; i >= 0; i-- {
			k.down(i)
		}
		k.full, k.worst = true, k.items[0].key
	}
}

// down restores the heap below i: every item ranks after its children.
func (k *topK) down(i int) {
	h := k.items
	for {
		w := i
		if l := 2*i + 1; l < len(h) && k.x.before(h[w], h[l]) {
			w = l
		}
		if r := 2*i + 2; r < len(h) && k.x.before(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// namesOf returns the names of items' objects, one after the other, in
// one string: the answer's names share one allocation.
func (x *Index) namesOf(items []rankItem) string {
	n := 0
	for _, it := range items {
		n += int(x.entries[it.slot].nameLen)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, it := range items {
		sb.Write(x.nameBytes(it.slot))
	}
	return sb.String()
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
	out := make([]SiteCount, 0, len(x.siteIDs))
	for _, sc := range x.sites {
		if sc.n > 0 {
			out = append(out, SiteCount{sc.name, sc.n})
		}
	}
	x.mu.Unlock()
	return topSites(out, limit)
}

// topSites sorts sites with the most objects first (then by name) and
// keeps at most limit.
func topSites(out []SiteCount, limit int) []SiteCount {
	slices.SortFunc(out, func(a, b SiteCount) int {
		if c := cmp.Compare(b.Objects, a.Objects); c != 0 {
			return c
		}
		return strings.Compare(a.Site, b.Site)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// ranked counts, per site, the objects that by ranks (those with a rate:
// a change estimate without a best rate is indexed but not ranked), in
// one scan of the entries. The overview page says how many of a site's
// objects it could rank.
func (x *Index) ranked(by string) map[string]int {
	b, ok := byIndex(by)
	if !ok || b == byShift {
		return nil
	}
	bit := uint8(1) << b
	x.mu.Lock()
	defer x.mu.Unlock()
	n := make(map[int32]int, len(x.siteIDs))
	for slot := range x.entries {
		if x.entries[slot].has&bit != 0 {
			n[x.meta[slot].site]++
		}
	}
	out := make(map[string]int, len(n))
	for id, c := range n {
		out[x.sites[id].name] = c
	}
	return out
}
