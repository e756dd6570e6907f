package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// The alert evaluation's worlds: shared by the aggregate package's
// acceptance tests and research/cmd/alertseval's report, so both measure
// the same seeded worlds.

// AlertWorld is the alert evaluation's simulated proxy log (issues 14 and
// 36): objects of a few sites with daily and weekly cycles (each site its
// own peak hour, or each object with ObjectPhase), half of them with one
// burst of 1–3 hours after the learning period.
type AlertWorld struct {
	Seed    uint64
	Objects int
	Sites   int
	Days    float64
	// Rate range of the objects' long-run access rates (per hour,
	// log-uniform).
	RateLo, RateHi float64
	BurstFactor    float64
	LearnDays      float64
	// BurstAfter is the earliest burst start in days (0: LearnDays + 0.5).
	BurstAfter float64
	// ObjectPhase gives each object a daily peak hour of its own (uniform
	// over the day) instead of its site's.
	ObjectPhase bool
}

// Burst is an object's burst: From/To absolute seconds (Obj < 0: none);
// Base is the count expected in (From, To] without the burst and Count
// the requests in it (with the burst's).
type Burst struct {
	Obj, From, To float64
	Base          float64
	Count         int
}

// Event is one request of the world.
type Event struct {
	T   float64 // Unix seconds
	Obj int32   // the object's index
}

// Generate returns the merged events in time order, the bursts (by object
// index), and the objects' names and sites.
func (sc AlertWorld) Generate(start time.Time) ([]Event, []Burst, []string, []string) {
	rng := NewRand(sc.Seed, 99)
	t0 := float64(start.Unix())
	day := [7]float64{1.15, 1.2, 1.2, 1.15, 1.05, 0.6, 0.5}
	var evs []Event
	bursts := make([]Burst, sc.Objects)
	names := make([]string, sc.Objects)
	sites := make([]string, sc.Objects)
	var buf []float64
	for i := 0; i < sc.Objects; i++ {
		s := i % sc.Sites
		sites[i] = fmt.Sprintf("site%d.example.org", s)
		names[i] = fmt.Sprintf("http://%s/page-%03d", sites[i], i)
		peak := 9 + 13*float64(s)/float64(sc.Sites) // hours UTC
		if sc.ObjectPhase {
			peak = 24 * rng.Float64()
		}
		hour := OfficeHours(peak, 0.75)
		rate := sc.RateLo * math.Exp(rng.Float64()*math.Log(sc.RateHi/sc.RateLo)) / 3600
		levels := WeeklyLevels(start, rate, hour, day)
		buf = Periodic{Period: 7 * 86400, Levels: levels}.Events(rng, sc.Days*86400, buf[:0])
		first := len(evs)
		for _, t := range buf {
			evs = append(evs, Event{T: t0 + t, Obj: int32(i)})
		}
		bursts[i] = Burst{Obj: -1}
		if i%2 == 1 {
			after := sc.BurstAfter
			if after == 0 {
				after = sc.LearnDays + 0.5
			}
			from := (after + rng.Float64()*(sc.Days-after-1)) * 86400
			dur := (1 + 2*rng.Float64()) * 3600
			extra := make([]float64, len(levels))
			for k := range levels {
				extra[k] = levels[k] * (sc.BurstFactor - 1)
			}
			buf = Periodic{Period: 7 * 86400, Levels: extra}.Events(rng, from+dur, buf[:0])
			for _, t := range buf {
				if t > from {
					evs = append(evs, Event{T: t0 + t, Obj: int32(i)})
				}
			}
			b := Burst{Obj: float64(i), From: t0 + from, To: t0 + from + dur}
			// the oracle's expectation: the intensity without the burst
			// integrated over the burst's window (levels are hourly slices
			// of the week from start)
			for h := math.Floor(from / 3600); h*3600 < from+dur; h++ {
				lo, hi := math.Max(h*3600, from), math.Min((h+1)*3600, from+dur)
				b.Base += levels[int(h)%len(levels)] * (hi - lo)
			}
			for _, e := range evs[first:] {
				if e.T > b.From && e.T <= b.To {
					b.Count++
				}
			}
			bursts[i] = b
		}
	}
	sort.Slice(evs, func(a, b int) bool { return evs[a].T < evs[b].T })
	return evs, bursts, names, sites
}

// OracleLevel is the oracle's significance level (issue 36): a burst is
// detectable when its window's count is improbable at p < 10⁻⁶ under the
// count expected there without the burst (a strict level for about 10⁵
// windows tested).
const OracleLevel = 1e-6

// PoissonUpper returns P(X ≥ k) for X ~ Poisson(mu).
func PoissonUpper(k int, mu float64) float64 {
	if k <= 0 {
		return 1
	}
	return distuv.Poisson{Lambda: mu}.Survival(float64(k) - 0.5)
}

// OracleDetectable reports whether the oracle, which knows the burst's
// window, detects it: P(Poisson(base) ≥ count) < OracleLevel.
func (b Burst) OracleDetectable() bool {
	return b.Obj >= 0 && PoissonUpper(b.Count, b.Base) < OracleLevel
}

// IssueWorld is issue 36's world: 120 objects of 7 sites, 21 days, daily
// and weekly cycles (by site, or by object with ObjectPhase), rates
// log-uniform in lo–hi requests a day, every second object with one 4×
// burst of 1–3 h after day 10, a 7-day learning period.
func IssueWorld(seed uint64, lo, hi float64, objectPhase bool) AlertWorld {
	return AlertWorld{Seed: seed, Objects: 120, Sites: 7, Days: 21, RateLo: lo / 24, RateHi: hi / 24,
		BurstFactor: 4, LearnDays: 7, BurstAfter: 10, ObjectPhase: objectPhase}
}
