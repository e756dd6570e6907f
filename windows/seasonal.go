package windows

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Seasonal baselines.
//
// Matloff §5.5 models accesses whose rate has a known period τ as a
// non-homogeneous Poisson process with intensity λ(t) of period τ; the
// number of points in one period is Poisson with mean m(τ) = ∫₀^τ λ(s) ds
// and the long-run rate is ν = m(τ)/τ (§5.5). Here the period is one week
// and the intensity is the log-linear product model
//
//	λ(t) = ν · f_{h(t)} · g_{d(t)},   (S1)
//
// h(t) the UTC hour of day, d(t) the day of the week, with the factors
// normalised to mean one: (1/24) Σ_h f_h = (1/7) Σ_d g_d = 1, so that the
// week's mean intensity is ν. A Profile learns f and g from the update
// points of all objects of one site (one object rarely has enough points):
// with H_h, D_d the (exponentially discounted) counts of points in hour h
// and on day d, and E_h, E_d the (equally discounted) exposure, the time
// observed in hour h and on day d,
//
//	f_h ∝ (H_h + a) / (E_h·r̄ + a),  g_d ∝ (D_d + a) / (E_d·r̄ + a),   (S2)
//
// r̄ = ΣH/ΣE the site's mean rate and a = SeasonalConfig.PriorEvents: the
// ratio of observed to expected counts per hour and per day, shrunk towards
// one by a pseudo-count (a sparse site gets a flat profile). With balanced
// exposure (whole weeks) this is the maximum-likelihood fit of the
// independence log-linear model (fitted cell = row total × column total /
// grand total).
//
// The profile defines the operational time (the compensator of (S1) with
// ν = 1)
//
//	Λ(t) = Λ₀ + ∫_{T₀}^{t} f_{h(s)} g_{d(s)} ds,   (S3)
//
// under which a process with intensity (S1) is a homogeneous Poisson process
// of rate ν (the time-change theorem). An object's Segmenter is fed Λ(t)
// instead of t, so its CUSUM and binomial tests compare observed counts with
// the expected counts c·(Λ(b) − Λ(a)) under the profile: a recurring ramp is
// not a shift, a burst on top of it is. The factors are refitted at each UTC
// day boundary once the learning period is over; (T₀, Λ₀) is moved to the
// boundary with Λ₀ = Λ(boundary) under the old factors, so Λ stays
// continuous and non-decreasing across refits. Before the profile is active
// Λ(t) = t.

const (
	hoursPerDay  = 24
	daysPerWeek  = 7
	hoursPerWeek = hoursPerDay * daysPerWeek
	secPerHour   = 3600
	secPerDay    = 86400
	secPerWeek   = 7 * secPerDay
	// mondayOffset is the Unix time of the first Monday 00:00 UTC
	// (1970-01-05): day-of-week 0 is Monday.
	mondayOffset = 4 * secPerDay
	// exposureWeeks bounds the exposure sum of a refit (older weeks weigh
	// less than Decay^exposureWeeks).
	exposureWeeks = 16
)

// SeasonalConfig holds the tunables of the seasonal baselines. Start from
// DefaultSeasonalConfig: LearningPeriod and MinEvents mean what they hold,
// 0 included; the zero PriorEvents and Decay, which are not valid
// settings, mean their defaults (WithDefaults). The Profile methods read
// a SeasonalConfig as given, so pass them one returned by WithDefaults.
type SeasonalConfig struct {
	// LearningPeriod is how long a site's points are counted before its
	// profile is used (and before its objects' alerts start). Default 7
	// days (one period of the weekly profile); 0 disables seasonal
	// baselines (Λ(t) = t, no learning period).
	LearningPeriod time.Duration
	// MinEvents is the least number of (discounted) points a site needs at
	// the end of the learning period for its profile to be used; with fewer
	// the profile stays flat. Default 200; 0 requires none.
	MinEvents float64
	// PriorEvents is the pseudo-count a of (S2) that shrinks each hour and
	// day factor towards 1. Default 5; > 0.
	PriorEvents float64
	// Decay multiplies the counts and the exposure at each new week: the
	// profile's memory is about 1/(1−Decay) weeks. Default 0.7; in (0, 1].
	Decay float64
}

// Defaults of SeasonalConfig.
const (
	defaultLearningPeriod = 7 * 24 * time.Hour
	defaultMinEvents      = 200
)

// WithDefaults returns c with the default of every zero field where 0 is
// not a valid setting (PriorEvents, Decay) filled in.
func (c SeasonalConfig) WithDefaults() SeasonalConfig {
	if c.PriorEvents == 0 {
		c.PriorEvents = 5
	}
	if c.Decay == 0 {
		c.Decay = 0.7
	}
	return c
}

// DefaultSeasonalConfig returns the documented defaults, the one source of
// the defaults.
func DefaultSeasonalConfig() SeasonalConfig {
	return SeasonalConfig{LearningPeriod: defaultLearningPeriod, MinEvents: defaultMinEvents}.WithDefaults()
}

// Enabled reports whether seasonal baselines are on.
func (c *SeasonalConfig) Enabled() bool { return c.LearningPeriod > 0 }

// Validate reports every invalid field of c (with defaults filled in) at
// once, each error wrapping ErrConfig and naming its field.
func (c *SeasonalConfig) Validate() error {
	d := c.WithDefaults()
	var errs []error
	if d.LearningPeriod < 0 {
		errs = append(errs, fmt.Errorf("%w: LearningPeriod %v negative (0 disables seasonal baselines)", ErrConfig, d.LearningPeriod))
	}
	if !(d.MinEvents >= 0) || math.IsInf(d.MinEvents, 0) {
		errs = append(errs, fmt.Errorf("%w: MinEvents %v not finite and >= 0", ErrConfig, d.MinEvents))
	}
	if !(d.PriorEvents > 0) || math.IsInf(d.PriorEvents, 0) {
		errs = append(errs, fmt.Errorf("%w: PriorEvents %v not > 0", ErrConfig, d.PriorEvents))
	}
	if !(d.Decay > 0 && d.Decay <= 1) {
		errs = append(errs, fmt.Errorf("%w: Decay %v not in (0, 1]", ErrConfig, d.Decay))
	}
	return errors.Join(errs...)
}

// Profile is the seasonal profile of one site: the learning counts of (S2)
// and the active factors and anchor of (S3). The zero value is a profile
// that has seen nothing. A Profile is a plain value, not safe for
// concurrent use; its state is bounded (about 300 bytes encoded).
type Profile struct {
	start  float64 // start of the hour of the first point, Unix seconds
	last   float64 // latest point
	week   int64   // week index of last (Monday-based)
	day    int64   // day index of last
	hour   [hoursPerDay]float32
	dow    [daysPerWeek]float32
	active bool
	f      [hoursPerDay]float32
	g      [daysPerWeek]float32
	since  float64 // when the profile was first activated
	t0     float64 // anchor T₀ of (S3)
	l0     float64 // anchor Λ₀
	// cum[i] = ∫ over the hour-of-week cells before i of f·g, seconds;
	// derived from f and g (not encoded).
	cum [hoursPerWeek + 1]float64
	c0  float64 // cumAt(t0), derived
}

// Active reports whether the profile is in use: the learning period is over
// and the site had enough points.
func (p *Profile) Active() bool { return p.active }

// Since returns when the profile was first activated (0 if never). A
// stream's points before it were taken in real time, so a shift whose
// change point precedes it mixes the two clocks.
func (p *Profile) Since() float64 { return p.since }

// Started reports whether the profile has counted a point.
func (p *Profile) Started() bool { return p.start != 0 }

// Learned reports whether the learning period is over at time t (whether
// or not the site had enough points for a profile).
func (p *Profile) Learned(t float64, cfg *SeasonalConfig) bool {
	return p.start != 0 && t-p.start >= cfg.LearningPeriod.Seconds()
}

// Factors returns the active hour-of-day and day-of-week factors of (S1)
// (all 1 while the profile is not active).
func (p *Profile) Factors() (hour [24]float64, day [7]float64) {
	for h := range hour {
		hour[h] = 1
		if p.active {
			hour[h] = float64(p.f[h])
		}
	}
	for d := range day {
		day[d] = 1
		if p.active {
			day[d] = float64(p.g[d])
		}
	}
	return hour, day
}

func weekIndex(t float64) int64 { return int64(math.Floor((t - mondayOffset) / secPerWeek)) }
func dayIndex(t float64) int64  { return int64(math.Floor(t / secPerDay)) }

// cell returns the hour-of-week cell (Monday 00–01 UTC = 0) of t.
func cell(t float64) int {
	x := t - mondayOffset
	s := x - math.Floor(x/secPerWeek)*secPerWeek // x mod one week (math.Mod is slow)
	c := int(s / secPerHour)
	if c < 0 {
		c = 0
	}
	if c >= hoursPerWeek {
		c = hoursPerWeek - 1
	}
	return c
}

// Observe counts an update point at t (Unix seconds) of any object of the
// site. Call Operational for t first: a refit at a day boundary must not
// see the new point. Times must be non-decreasing; earlier ones are
// counted at the latest time's week. NaN and ±Inf are ignored. O(1)
// except at a week boundary (O(31)).
func (p *Profile) Observe(t float64, cfg *SeasonalConfig) {
	if math.IsNaN(t) || math.IsInf(t, 0) || !cfg.Enabled() {
		return
	}
	if p.start == 0 {
		// learning (and exposure) starts at the hour of the first point
		p.start, p.last = math.Floor(t/secPerHour)*secPerHour, t
		p.week, p.day = weekIndex(t), dayIndex(t)
	}
	if t > p.last {
		p.advance(t, cfg)
	}
	c := cell(t)
	p.hour[c%hoursPerDay]++
	p.dow[c/hoursPerDay]++
}

// advance moves the learning clock to t > last: discounts the counts at
// week boundaries and refits at day boundaries.
func (p *Profile) advance(t float64, cfg *SeasonalConfig) {
	if w := weekIndex(t); w > p.week {
		k := math.Pow(cfg.Decay, float64(w-p.week))
		for i := range p.hour {
			p.hour[i] = float32(float64(p.hour[i]) * k)
		}
		for i := range p.dow {
			p.dow[i] = float32(float64(p.dow[i]) * k)
		}
		p.week = w
	}
	if d := dayIndex(t); d > p.day {
		p.day = d
		b := float64(d) * secPerDay
		if b-p.start >= cfg.LearningPeriod.Seconds() {
			p.refit(b, cfg)
		}
	}
	p.last = t
}

// Operational returns Λ(t) of (S3), rounded to the millisecond (so that
// stored times stay exact), and moves the learning clock to t (refitting at
// a day boundary). Before the profile is active it returns t.
func (p *Profile) Operational(t float64, cfg *SeasonalConfig) float64 {
	if math.IsNaN(t) || math.IsInf(t, 0) || !cfg.Enabled() {
		return t
	}
	if p.start != 0 && t > p.last {
		p.advance(t, cfg)
	}
	return p.At(t)
}

// At returns Λ(t) of (S3) with the current factors and anchor, without
// moving the learning clock; rounded to the millisecond.
func (p *Profile) At(t float64) float64 {
	if !p.active {
		return t
	}
	return math.Round((p.l0+p.cumAt(t)-p.c0)*1000) / 1000
}

// integral returns ∫_a^b f_{h(s)} g_{d(s)} ds for the active factors.
func (p *Profile) integral(a, b float64) float64 { return p.cumAt(b) - p.cumAt(a) }

// cumAt is the integral of (S1)'s shape from the Monday of t's week to t,
// plus whole weeks since 1970-01-05 (each integrates to cum[168] ≈ 604800 s).
func (p *Profile) cumAt(t float64) float64 {
	w := math.Floor((t - mondayOffset) / secPerWeek)
	ws := mondayOffset + w*secPerWeek
	c := cell(t)
	cs := ws + float64(c)*secPerHour
	return w*p.cum[hoursPerWeek] + p.cum[c] + float64(p.f[c%hoursPerDay])*float64(p.g[c/hoursPerDay])*(t-cs)
}

// Real inverts (S3): the time t at which Λ(t) = l (the latest such t when
// Λ is flat). Used to publish window times in real time.
func (p *Profile) Real(l float64) float64 {
	if !p.active {
		return l
	}
	target := l - p.l0 + p.c0 // cumAt(t) = target
	wk := p.cum[hoursPerWeek]
	w := math.Floor(target / wk)
	rest := target - w*wk
	// find the cell i with cum[i] ≤ rest < cum[i+1]
	lo, hi := 0, hoursPerWeek
	for lo+1 < hi {
		m := (lo + hi) / 2
		if p.cum[m] <= rest {
			lo = m
		} else {
			hi = m
		}
	}
	ws := mondayOffset + w*secPerWeek + float64(lo)*secPerHour
	r := float64(p.f[lo%hoursPerDay]) * float64(p.g[lo/hoursPerDay])
	if r <= 0 {
		return ws
	}
	return ws + (rest-p.cum[lo])/r
}

// Expected returns the expected number of points in (a, b] (real times)
// under (S1) with long-run rate nu: nu·(Λ(b) − Λ(a)).
func (p *Profile) Expected(nu, a, b float64) float64 {
	if !p.active {
		return nu * (b - a)
	}
	return nu * p.integral(a, b)
}

// refit recomputes the factors (S2) at the day boundary b and re-anchors
// (S3) there.
func (p *Profile) refit(b float64, cfg *SeasonalConfig) {
	var eh [hoursPerDay]float64
	var ed [daysPerWeek]float64
	// exposure: every hour from start to b, discounted like the counts
	from := math.Max(p.start, b-exposureWeeks*secPerWeek)
	wb := weekIndex(b - 1)
	for s := math.Floor(from/secPerHour) * secPerHour; s < b; s += secPerHour {
		lo := math.Max(s, from)
		hi := math.Min(s+secPerHour, b)
		if hi <= lo {
			continue
		}
		wgt := math.Pow(cfg.Decay, float64(wb-weekIndex(lo))) * (hi - lo) / secPerHour
		c := cell(lo)
		eh[c%hoursPerDay] += wgt
		ed[c/hoursPerDay] += wgt
	}
	var n, e float64
	for h := range p.hour {
		n += float64(p.hour[h])
		e += eh[h]
	}
	if n < cfg.MinEvents || e <= 0 {
		// not enough points for a profile: keep the current one (flat when
		// never fitted)
		return
	}
	rbar := n / e // points per exposed hour
	a := cfg.PriorEvents
	var f [hoursPerDay]float64
	var g [daysPerWeek]float64
	var sf, sg float64
	for h := range f {
		f[h] = (float64(p.hour[h]) + a) / (eh[h]*rbar + a)
		sf += f[h]
	}
	for d := range g {
		// a day has 24 exposed hours per exposed day: E_d counts hours
		g[d] = (float64(p.dow[d]) + a) / (ed[d]*rbar + a)
		sg += g[d]
	}
	l0 := p.At(b) // Λ(b) under the old factors (b itself when inactive)
	for h := range f {
		p.f[h] = float32(f[h] * hoursPerDay / sf)
	}
	for d := range g {
		p.g[d] = float32(g[d] * daysPerWeek / sg)
	}
	if !p.active {
		p.since = b
	}
	p.active = true
	p.t0, p.l0 = b, l0
	p.derive()
}

// derive recomputes cum from f and g (a week integrates to 604800 s up to
// float32 rounding of the factors).
func (p *Profile) derive() {
	p.cum[0] = 0
	for c := 0; c < hoursPerWeek; c++ {
		p.cum[c+1] = p.cum[c] + float64(p.f[c%hoursPerDay])*float64(p.g[c/hoursPerDay])*secPerHour
	}
	p.c0 = p.cumAt(p.t0)
}
