package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/windows"
)

// Rhythm is an object's own daily access profile (issue 36): pages of one
// site read at different hours (accounts, API keys) each have their own
// daily cycle, which the site's profile (windows.Profile) cannot describe.
// An object busy enough to learn one (RhythmMinWeekly accesses a week at
// its access window's rate) counts its accesses by UTC hour of day in 24
// quantised counts (8-bit mantissas with a shared exponent; all halved at
// the start of a UTC day when they have counted RhythmMemoryDays, so the
// memory is one to two weeks whatever the traffic, and every hour has
// had the same exposure). An hour's accesses enter its count when the
// hour is over (until then they are held in one more count), so a burst
// does not raise its own hour's expectation while it lasts.
//
// After RhythmLearning of counting, a G-test decides (RhythmFitLevel):
// when the counts reject the site's hour-of-day factors (flat while the
// site's profile is not active), the object's access window restarts on
// its own operational time
//
//	Λ(t) = Λ(t_a) + ∫_{t_a}^{t} f_{h(s)}·g_{d(s)} ds,
//
// t_a its previous access, f its hour factors ((S2) of windows.Profile
// with equal exposure per hour, shrunk by SeasonalConfig.PriorEvents,
// computed from the counts) and g the site's day-of-week factors (the
// weekly cycle is shared by a site's pages; 1 while the site's profile is
// not active), and it keeps counting. When the site's factors fit, the
// object stays on its site's clock and its counts are dropped until a new
// check RhythmRecheck later. While an object learns its rhythm the first
// time its access alerts are held when its counts so far reject the
// site's factors (its baseline is not known; holdsAlerts); a re-check
// keeps alerting on the site's profile, which fitted. The state is
// bounded: 24 mantissas, their exponent, the held count, the exposure and
// two times, about 35 bytes in the object's value while counting, 7
// between checks (a separate, versioned section; see AppendBinary).
// Model.DisableObjectRhythm turns it off.
type Rhythm struct {
	// counts are the accesses of completed hours by UTC hour of day, in
	// block floating point: counts[h]·2^scale (8-bit mantissas with one
	// shared exponent, so a busy object keeps as many days as a quiet
	// one).
	counts [24]uint8
	scale  uint8
	// cur counts the accesses of lastAccess's hour, not yet in counts.
	cur uint16
	// days is the counts' exposure in whole days (every hour of a
	// completed day; halved with the counts), in units of 1/256 day; the
	// hours of the current day completed so far have one day more.
	days uint16
	// first is the start of counting, Unix seconds (0: not started); for
	// an object whose site's profile fitted, the start of the next check.
	first int64
	// lastAccess is the object's latest access, Unix milliseconds: the
	// anchor t_a of the clock (the access window's last point is Λ(t_a)).
	lastAccess int64
	// active: the access window runs on the object's clock; siteFits: the
	// last check found the site's hour factors consistent with the counts.
	active, siteFits bool
}

// Rhythm thresholds.
const (
	// RhythmMinWeekly is the access rate (per week) at which an object
	// starts learning its own rhythm: 250 a week is about 10 per hour of
	// day after one week, enough for the G-test to see a daily cycle of
	// its own: a log-sinusoidal cycle of peak/trough 7 against a flat
	// site (f ∝ e^{a·cos}, a = ln 7/2) gives G ≈ 2n·KL = 2·250·0.20
	// ≈ 100 against the critical value 49.7 of χ²₂₃ at RhythmFitLevel.
	RhythmMinWeekly = 250
	// RhythmMinPoints is the least window points the rate is judged on.
	RhythmMinPoints = 30
	// RhythmLearning is how long an object counts before its rhythm is
	// tested (whole days: equal exposure of every hour).
	RhythmLearning = 7 * 86400
	// RhythmRecheck is how long an object whose site's profile fitted
	// waits before counting again for the next check: about the site
	// profile's memory (1/(1−Decay) ≈ 3.3 weeks with the defaults), so a
	// rhythm that drifts away from the site's is seen about as soon as
	// the site's profile would follow it. An object counts one week in
	// five and carries its counts only then.
	RhythmRecheck = 28 * 86400
	// RhythmFitLevel is the G-test's level: the site's factors are
	// rejected when P(χ²₂₃ ≥ G) < RhythmFitLevel. A wrong rejection
	// restarts the object's window on a clock barely different from the
	// site's (harmless but it costs the window's history), a wrong
	// acceptance leaves a rhythm of its own untested, so strong evidence
	// is asked: 10⁻³.
	RhythmFitLevel = 1e-3
)

// Active reports whether the object's access window runs on its own clock.
func (r *Rhythm) Active() bool { return r.active }

// Started reports whether the object is learning (or uses, or has tested)
// its rhythm.
func (r *Rhythm) Started() bool { return r.first != 0 }

// Learning reports whether the object is learning its rhythm for the
// first time: its access baseline is not known yet.
func (r *Rhythm) Learning() bool { return r.first != 0 && !r.active && !r.siteFits }

// count returns hour h's count.
func (r *Rhythm) count(h int) float64 { return math.Ldexp(float64(r.counts[h]), int(r.scale)) }

// exposure returns each hour's exposure in days at t (Unix ms): the
// counted days, plus one for the hours of t's day already completed.
func (r *Rhythm) exposure(t int64) (x [24]float64) {
	e := float64(r.days) / 256
	now := hourOf(t)
	for h := range x {
		x[h] = e
		if h < now {
			x[h]++
		}
	}
	return x
}

// hourFactors returns the hour factors fitted at t (Unix ms) to the counts
// with their exposures x_h: f_h ∝ (H_h + a)/(x_h·H̄ + a), H̄ = ΣH/Σx the
// mean count per hour and day ((S2) of windows.Profile, which has equal
// exposures), normalised to mean 1.
func (r *Rhythm) hourFactors(t int64, a float64) (f [24]float64) {
	x := r.exposure(t)
	var n, xs float64
	for h := range r.counts {
		n += r.count(h)
		xs += x[h]
	}
	mean := 0.0
	if xs > 0 {
		mean = n / xs
	}
	var s float64
	for h := range r.counts {
		f[h] = (r.count(h) + a) / (x[h]*mean + a)
		s += f[h]
	}
	for h := range f {
		f[h] *= 24 / s
	}
	return f
}

// fits reports whether the counts at t (Unix ms) are consistent with the
// hour factors p (a site's): the G-test of the 24 counts against their
// expectation e_h = n·p_h·x_h/Σ p·x (x_h the hours' exposures),
// G = 2 Σ H_h ln(H_h/e_h), χ² with 23 degrees of freedom, accepted at
// RhythmFitLevel. Halved counts make it conservative (a halved Poisson
// count's variance is half its mean).
func (r *Rhythm) fits(t int64, p [24]float64) bool {
	x := r.exposure(t)
	var n, ps float64
	for h := range r.counts {
		n += r.count(h)
		ps += p[h] * x[h]
	}
	if n == 0 || !(ps > 0) {
		return true
	}
	var g float64
	for h := range r.counts {
		if c := r.count(h); c > 0 {
			g += 2 * c * math.Log(c*ps/(n*p[h]*x[h]))
		}
	}
	return mathext.GammaIncRegComp(23.0/2, g/2) >= RhythmFitLevel
}

// RhythmMemoryDays is the exposure at which the counts are halved at a
// day boundary: they then hold 7–14 days.
const RhythmMemoryDays = 14

// rhythmMemory is RhythmMemoryDays in the exposure's units (1/256 day).
const rhythmMemory = RhythmMemoryDays * 256

// newDay starts a UTC day's counting after d completed days: their
// exposure is added, and when it reached rhythmMemory every count and the
// exposure are halved (at a day boundary: every hour keeps the same
// exposure).
func (r *Rhythm) newDay(d int64) {
	r.days = uint16(min(int64(r.days)+256*d, math.MaxUint16))
	for r.days >= rhythmMemory {
		if r.scale > 0 {
			r.scale--
		} else {
			r.halveMantissas()
		}
		r.days /= 2
	}
}

// halveMantissas halves every mantissa, rounding half to even.
func (r *Rhythm) halveMantissas() {
	for i, c := range r.counts {
		r.counts[i] = c/2 + c&c>>1&1
	}
}

// hourOf returns the UTC hour of day of t (Unix ms).
func hourOf(t int64) int { return int(floorDiv(t, 3600000) % 24) }

// fold moves the held accesses of prev's hour (Unix ms) into the counts,
// rounded to the counts' scale (an error of at most half a unit of the
// scale per hour); when a mantissa would overflow, the exponent grows.
func (r *Rhythm) fold(prev int64) {
	h := hourOf(prev)
	for {
		add := (int(r.cur) + (1<<r.scale)/2) >> r.scale
		if int(r.counts[h])+add <= math.MaxUint8 {
			r.counts[h] += uint8(add)
			break
		}
		r.halveMantissas()
		r.scale++
	}
	r.cur = 0
}

// objClock is the operational time of an object with an active rhythm,
// anchored at its latest access (t_a, Λ(t_a)).
type objClock struct {
	ta, la float64
	f      [24]float64
	g      [7]float64
}

// opClock converts between real and operational time: a site's profile
// or an object's own clock.
type opClock interface {
	Active() bool
	At(t float64) float64
	Real(l float64) float64
}

func (c *objClock) Active() bool { return true }

// rate returns f·g at t.
func (c *objClock) rate(t float64) float64 {
	x := t - 4*86400 // Monday 1970-01-05 is day 0
	w := x - math.Floor(x/(7*86400))*7*86400
	cell := int(w / 3600)
	if cell < 0 {
		cell = 0
	}
	if cell > 167 {
		cell = 167
	}
	return c.f[cell%24] * c.g[cell/24]
}

// integral returns ∫_a^b f·g ds for a ≤ b (whole weeks integrate to one
// week: f and g have mean 1).
func (c *objClock) integral(a, b float64) float64 {
	const week = 7 * 86400
	if !(b > a) {
		return 0
	}
	weeks := math.Floor((b - a) / week)
	sum := weeks * week
	a += weeks * week
	for a < b {
		next := math.Min(b, math.Floor(a/3600)*3600+3600)
		sum += c.rate(a) * (next - a)
		a = next
	}
	return sum
}

// At returns Λ(t).
func (c *objClock) At(t float64) float64 {
	if t >= c.ta {
		return c.la + c.integral(c.ta, t)
	}
	return c.la - c.integral(t, c.ta)
}

// Real inverts Λ: the time t with Λ(t) = l, hour by hour from the anchor.
func (c *objClock) Real(l float64) float64 {
	const week = 7 * 86400
	t, cur := c.ta, c.la
	if l >= cur {
		w := math.Floor((l - cur) / week)
		t, cur = t+w*week, cur+w*week
		for {
			next := math.Floor(t/3600)*3600 + 3600
			r := c.rate(t)
			if d := r * (next - t); cur+d >= l {
				if r <= 0 {
					return t
				}
				return t + (l-cur)/r
			} else {
				t, cur = next, cur+d
			}
		}
	}
	w := math.Floor((cur - l) / week)
	t, cur = t-w*week, cur-w*week
	for {
		prev := math.Ceil(t/3600)*3600 - 3600
		r := c.rate(prev)
		if d := r * (t - prev); cur-d <= l {
			if r <= 0 {
				return t
			}
			return t - (cur-l)/r
		} else {
			t, cur = prev, cur-d
		}
	}
}

// clock returns the object's clock anchored at its latest access, with the
// site's day factors (nil profile or inactive: 1).
func (o *Object) clock(site *windows.Profile, m *Model) *objClock {
	ta := seconds(o.Rhythm.lastAccess)
	c := &objClock{ta: ta, la: o.AccessWin.Last(), f: o.Rhythm.hourFactors(o.Rhythm.lastAccess, m.Seasonal.PriorEvents)}
	for d := range c.g {
		c.g[d] = 1
	}
	if site != nil && site.Active() {
		_, c.g = site.Factors()
	}
	return c
}

// rhythmVersion is the first byte of the rhythm section of an encoded
// Object. Version 1 (issue 36's first, opt-in layout) also stored 24
// quantised factors after the counts; it decodes with the factors
// dropped (they are computed from the counts now).
const rhythmVersion = 2

// rhythmTag introduces the rhythm section after the sub-states.
const rhythmTag = 'R'

// Rhythm section flags.
const (
	rhythmActive   = 1
	rhythmSiteFits = 2
	rhythmNoCounts = 4 // every count is 0: none stored
)

// appendBinary appends the rhythm section: tag, version, flags, uvarint
// days of first since the epoch, uvarint lastTime − lastAccess (ms), then
// unless rhythmNoCounts the scale, the 24 mantissas, uvarint held count
// and uvarint days.
func (r *Rhythm) appendBinary(dst []byte, lastTime int64) []byte {
	dst = append(dst, rhythmTag, rhythmVersion)
	var f byte
	if r.active {
		f |= rhythmActive
	}
	if r.siteFits {
		f |= rhythmSiteFits
	}
	if r.counts == [24]uint8{} && r.scale == 0 && r.cur == 0 && r.days == 0 {
		f |= rhythmNoCounts
	}
	dst = append(dst, f)
	dst = binary.AppendUvarint(dst, uint64(r.first/86400))
	dst = binary.AppendUvarint(dst, uint64(lastTime-r.lastAccess))
	if f&rhythmNoCounts == 0 {
		dst = append(dst, r.scale)
		dst = append(dst, r.counts[:]...)
		dst = binary.AppendUvarint(dst, uint64(r.cur))
		dst = binary.AppendUvarint(dst, uint64(r.days))
	}
	return dst
}

// decodeBinary decodes the rhythm section at d's position.
func (r *Rhythm) decodeBinary(d *wire.Reader, lastTime int64) error {
	if d.Byte() != rhythmTag {
		return fmt.Errorf("%w: rhythm section tag", ErrCorrupt)
	}
	v := d.Byte()
	if v != 1 && v != rhythmVersion {
		return fmt.Errorf("%w: rhythm version %d", ErrCorrupt, v)
	}
	f := d.Byte()
	days := d.Uvarint()
	back := d.Uvarint()
	if err := d.Err(); err != nil || days == 0 || days > 1<<32 || back > uint64(lastTime) {
		return fmt.Errorf("%w: rhythm section", ErrCorrupt)
	}
	r.active, r.siteFits = f&rhythmActive != 0, f&rhythmSiteFits != 0
	r.first, r.lastAccess = int64(days)*86400, lastTime-int64(back)
	switch {
	case v == 1:
		// flags 0 or 1, 24 counts, 24 factors (dropped)
		rest := d.Rest()
		if f > 1 || len(rest) < 48 {
			return fmt.Errorf("%w: rhythm section", ErrCorrupt)
		}
		copy(r.counts[:], rest[:24])
		d.Skip(48)
		// its counts' exposure was not stored: the days counted, at most
		// the memory
		r.days = uint16(min(256*max(lastTime/1000-r.first, 0)/86400, rhythmMemory))
	case f&^(rhythmActive|rhythmSiteFits|rhythmNoCounts) != 0 || f&(rhythmActive|rhythmSiteFits) == rhythmActive|rhythmSiteFits:
		return fmt.Errorf("%w: rhythm flags %#x", ErrCorrupt, f)
	case f&rhythmNoCounts == 0:
		rest := d.Rest()
		if len(rest) < 25 || rest[0] > 32 {
			return fmt.Errorf("%w: rhythm section", ErrCorrupt)
		}
		r.scale = rest[0]
		copy(r.counts[:], rest[1:25])
		d.Skip(25)
		cur, days := d.Uvarint(), d.Uvarint()
		if d.Err() != nil || cur > math.MaxUint16 || days > math.MaxUint16 {
			return fmt.Errorf("%w: rhythm held count or exposure", ErrCorrupt)
		}
		r.cur, r.days = uint16(cur), uint16(days)
		if r.counts == [24]uint8{} && r.scale == 0 && r.cur == 0 && r.days == 0 {
			// not the encoder's form: it omits all-zero counts
			return fmt.Errorf("%w: rhythm counts all zero", ErrCorrupt)
		}
	}
	return nil
}

// siteHours returns a site's hour-of-day factors (flat while its profile
// is not active, or without one).
func siteHours(site *windows.Profile) [24]float64 {
	if site != nil && site.Active() {
		hour, _ := site.Factors()
		return hour
	}
	return flatHours()
}

// flatHours returns 24 hour factors of 1.
func flatHours() (f [24]float64) {
	for h := range f {
		f[h] = 1
	}
	return f
}

// holdsAlerts reports whether the object's access alerts are held: it is
// learning its rhythm for the first time and its counts so far already
// reject its site's hour factors (the site's baseline is wrong for it;
// while they fit, it is tested on the site's profile).
func (r *Rhythm) holdsAlerts(site *windows.Profile) bool {
	return r.Learning() && !r.fits(r.lastAccess, siteHours(site))
}
