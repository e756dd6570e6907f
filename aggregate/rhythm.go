package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/windows"
)

// Rhythm is an object's own daily access profile (issue 36): pages of one
// site read at different hours (accounts, API keys) each have their own
// daily cycle, which the site's profile (windows.Profile) cannot describe.
// An object busy enough to learn one (RhythmMinWeekly accesses a week at
// its access window's rate) counts its accesses by UTC hour of day in 24
// quantised counts (8 bits; all halved at the start of a UTC day when the
// busiest hour has counted rhythmHalveAt, so the memory is about a hundred
// accesses in the busiest hour, and every hour has had the same exposure); after RhythmLearning of
// counting its access window restarts on its own operational time
//
//	Λ(t) = Λ(t_a) + ∫_{t_a}^{t} f_{h(s)}·g_{d(s)} ds,
//
// t_a its previous access, f its hour factors (S2 of windows.Profile with
// equal exposure per hour, shrunk by SeasonalConfig.PriorEvents) and g the
// site's day-of-week factors (the weekly cycle is shared by a site's
// pages; 1 while the site's profile is not active). The factors are
// refitted at each UTC day boundary from the completed days' counts (a
// burst today does not raise today's expectation) and stored quantised.
// While an object learns its rhythm its access alerts are held (its
// baseline is not known); objects below the threshold keep the site's
// profile. The state is bounded: 24 counts, 24 quantised factors and two
// times, about 57 bytes in the object's value (a separate, versioned
// section; see AppendBinary). Model.ObjectRhythm turns it on.
type Rhythm struct {
	counts [24]uint8
	// f are the hour factors fitted at the last UTC day boundary,
	// quantised: ln f = (q − 128)·rhythmLogStep (0: not fitted yet).
	f [24]uint8
	// first is the start of counting, Unix seconds (0: not started).
	first int64
	// lastAccess is the object's latest access, Unix milliseconds: the
	// anchor t_a of the clock (the access window's last point is Λ(t_a)).
	lastAccess int64
	active     bool
}

// Rhythm thresholds.
const (
	// RhythmMinWeekly is the access rate (per week) at which an object
	// starts learning its own rhythm: 600 a week is 25 per hour of day, a
	// factor's relative error 1/√25 = 20 % after one week.
	RhythmMinWeekly = 250
	// RhythmMinPoints is the least window points the rate is judged on.
	RhythmMinPoints = 30
	// RhythmLearning is how long an object counts before its rhythm is
	// used (whole days: equal exposure of every hour).
	RhythmLearning = 7 * 86400
)

// Active reports whether the object's access window runs on its own clock.
func (r *Rhythm) Active() bool { return r.active }

// Started reports whether the object is learning (or uses) its rhythm.
func (r *Rhythm) Started() bool { return r.first != 0 }

// rhythmLogStep is the quantisation step of ln f: factors from e⁻³ to e³
// in 255 steps of 2.4 %.
const rhythmLogStep = 3.0 / 127

// hourFactors returns the fitted hour factors (all 1 before the first fit).
func (r *Rhythm) hourFactors() (f [24]float64) {
	for h, q := range r.f {
		f[h] = 1
		if q != 0 {
			f[h] = math.Exp(float64(int(q)-128) * rhythmLogStep)
		}
	}
	return f
}

// fit sets the hour factors from the counts of completed days (equal
// exposure per hour): f_h ∝ (H_h + a)/(H̄ + a) ((S2) of windows.Profile),
// normalised to mean 1, then quantised.
func (r *Rhythm) fit(a float64) {
	var sum float64
	for _, c := range r.counts {
		sum += float64(c)
	}
	mean := sum / 24
	var f [24]float64
	var s float64
	for h, c := range r.counts {
		f[h] = (float64(c) + a) / (mean + a)
		s += f[h]
	}
	for h := range f {
		q := math.Round(math.Log(f[h]*24/s)/rhythmLogStep) + 128
		r.f[h] = uint8(math.Max(1, math.Min(255, q)))
	}
}

// rhythmHalveAt is the largest count at which a new day's counting starts
// without halving: 85 + a day's 170 accesses in its busiest hour fit 8 bits.
const rhythmHalveAt = 85

// newDay ends a UTC day's counting: the factors are refitted from the
// completed days' counts (so a burst today does not raise today's
// expectation), and when the busiest hour's count reached rhythmHalveAt
// every count is halved (at a day boundary: every hour keeps the same
// exposure).
func (r *Rhythm) newDay(a float64) {
	r.fit(a)
	mx := uint8(0)
	for _, c := range r.counts {
		mx = max(mx, c)
	}
	if mx < rhythmHalveAt {
		return
	}
	for i := range r.counts {
		r.counts[i] /= 2
	}
}

// count adds an access at t (Unix seconds) to the hour counts (saturating
// at 255: more than 170 accesses in one hour of one day, 2,000 to 4,000
// a day, saturate the busiest hours).
func (r *Rhythm) count(t float64) {
	h := int(math.Floor(t/3600)) % 24
	if h < 0 {
		h += 24
	}
	if r.counts[h] < math.MaxUint8 {
		r.counts[h]++
	}
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
	c := &objClock{ta: ta, la: o.AccessWin.Last(), f: o.Rhythm.hourFactors()}
	for d := range c.g {
		c.g[d] = 1
	}
	if site != nil && site.Active() {
		_, c.g = site.Factors()
	}
	return c
}

// rhythmVersion is the first byte of the rhythm section of an encoded
// Object.
const rhythmVersion = 1

// rhythmTag introduces the rhythm section after the sub-states.
const rhythmTag = 'R'

// appendRhythm appends the rhythm section: tag, version, flags (1: active),
// uvarint days of first since the epoch, uvarint lastTime − lastAccess
// (ms), the 24 counts, the 24 quantised factors.
func (r *Rhythm) appendBinary(dst []byte, lastTime int64) []byte {
	dst = append(dst, rhythmTag, rhythmVersion)
	var f byte
	if r.active {
		f = 1
	}
	dst = append(dst, f)
	dst = binary.AppendUvarint(dst, uint64(r.first/86400))
	dst = binary.AppendUvarint(dst, uint64(lastTime-r.lastAccess))
	dst = append(dst, r.counts[:]...)
	return append(dst, r.f[:]...)
}

// decodeRhythm decodes the rhythm section at d's position.
func (r *Rhythm) decodeBinary(d *wire.Reader, lastTime int64) error {
	if d.Byte() != rhythmTag {
		return fmt.Errorf("%w: rhythm section tag", ErrCorrupt)
	}
	if v := d.Byte(); v != rhythmVersion {
		return fmt.Errorf("%w: rhythm version %d", ErrCorrupt, v)
	}
	f := d.Byte()
	days := d.Uvarint()
	back := d.Uvarint()
	rest := d.Rest()
	if err := d.Err(); err != nil || len(rest) < 48 || f > 1 || days == 0 || days > 1<<32 || back > uint64(lastTime) {
		return fmt.Errorf("%w: rhythm section", ErrCorrupt)
	}
	copy(r.counts[:], rest[:24])
	copy(r.f[:], rest[24:48])
	d.Skip(48)
	r.active, r.first, r.lastAccess = f == 1, int64(days)*86400, lastTime-int64(back)
	return nil
}
