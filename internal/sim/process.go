// Package sim provides seeded, reproducible simulators of change and access
// processes and of what an observer (crawler, cache, poller) sees of them.
//
// Processes generate event times (seconds, float64) on (0, horizon]:
// homogeneous Poisson, gamma renewal (Cho & Garcia-Molina §6.1), periodic
// non-homogeneous Poisson (Matloff §5.5) and piecewise Weibull (power-law)
// processes (the NHPP model of "Estimating the rate of Web Page Updates").
// Observers turn an event list into visits (regular or Poisson visit times,
// with or without Last-Modified) or into Matloff's last-A/M-time snapshots.
//
// Everything is a pure function of its inputs and of the *rand.Rand passed
// in; use NewRand(seed, stream) for reproducible streams. Nothing here is safe
// for concurrent use with a shared *rand.Rand; values of the process types are
// immutable and may be shared.
package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrInvalid is wrapped by every Validate error of this package.
var ErrInvalid = errors.New("sim: invalid parameter")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// NewRand returns a PCG-backed generator; the same (seed, stream) pair always
// yields the same sequence.
func NewRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// Process is a point process on (0, ∞).
type Process interface {
	// Validate reports whether the parameters are usable.
	Validate() error
	// Events appends the event times in (0, horizon] to dst in ascending
	// order and returns the extended slice. The process starts at time 0.
	Events(rng *rand.Rand, horizon float64, dst []float64) []float64
	// Mean returns E[N(t)], the expected number of events in (0, t]
	// (for a renewal process, the long-run approximation t·rate).
	Mean(t float64) float64
}

// Poisson is a homogeneous Poisson process.
type Poisson struct {
	// Rate is the event rate per second; must be > 0. No default.
	Rate float64
}

// Validate implements Process.
func (p Poisson) Validate() error {
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		return invalid("poisson rate %v must be finite and > 0", p.Rate)
	}
	return nil
}

// Events implements Process.
func (p Poisson) Events(rng *rand.Rand, horizon float64, dst []float64) []float64 {
	t := 0.0
	for {
		t += rng.ExpFloat64() / p.Rate
		if t > horizon {
			return dst
		}
		dst = append(dst, t)
	}
}

// Mean implements Process.
func (p Poisson) Mean(t float64) float64 { return p.Rate * t }

// GammaRenewal is a renewal process whose intervals are Gamma(Shape, scale
// 1/(Shape·Rate)) distributed, so the mean interval is 1/Rate for any Shape
// (CGM §6.1: α = Shape; Shape = 1 is Poisson). The process is started in
// equilibrium: the first event time is drawn from the stationary
// forward-recurrence distribution (approximated by running the process from
// -Warmup), so that event counts in any window have mean rate·length.
type GammaRenewal struct {
	// Shape is the gamma shape α; must be > 0. No default.
	Shape float64
	// Rate is the long-run event rate per second; must be > 0. No default.
	Rate float64
	// Warmup is how many mean intervals the process runs before time 0 to
	// reach equilibrium; 0 means the default, 50.
	Warmup float64
}

// Validate implements Process.
func (g GammaRenewal) Validate() error {
	if !(g.Shape > 0) || math.IsInf(g.Shape, 0) {
		return invalid("gamma shape %v must be finite and > 0", g.Shape)
	}
	if !(g.Rate > 0) || math.IsInf(g.Rate, 0) {
		return invalid("gamma rate %v must be finite and > 0", g.Rate)
	}
	if g.Warmup < 0 {
		return invalid("gamma warmup %v must be >= 0", g.Warmup)
	}
	return nil
}

// Events implements Process.
func (g GammaRenewal) Events(rng *rand.Rand, horizon float64, dst []float64) []float64 {
	w := g.Warmup
	if w == 0 {
		w = 50
	}
	scale := 1 / (g.Shape * g.Rate)
	t := -w / g.Rate
	for {
		t += Gamma(rng, g.Shape) * scale
		if t > horizon {
			return dst
		}
		if t > 0 {
			dst = append(dst, t)
		}
	}
}

// Mean implements Process (stationary renewal process: exact).
func (g GammaRenewal) Mean(t float64) float64 { return g.Rate * t }

// Gamma draws from Gamma(shape, 1) by Marsaglia & Tsang (2000), with the
// shape<1 boost U^{1/shape}.
func Gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return Gamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for {
			x = rng.NormFloat64()
			v = 1 + c*x
			if v > 0 {
				break
			}
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Periodic is a non-homogeneous Poisson process whose intensity is periodic
// with period Period and piecewise constant: Levels[j] (per second) on the
// j-th of len(Levels) equal slices of each period (Matloff §5.5). Events are
// generated exactly by inverting the cumulative intensity.
type Periodic struct {
	// Period in seconds; must be > 0. No default.
	Period float64
	// Levels are the intensities of the equal slices of a period; all >= 0,
	// at least one > 0. No default.
	Levels []float64
}

// Validate implements Process.
func (p Periodic) Validate() error {
	if !(p.Period > 0) || math.IsInf(p.Period, 0) {
		return invalid("periodic period %v must be finite and > 0", p.Period)
	}
	if len(p.Levels) == 0 {
		return invalid("periodic levels empty")
	}
	pos := false
	for _, l := range p.Levels {
		if l < 0 || math.IsNaN(l) || math.IsInf(l, 0) {
			return invalid("periodic level %v must be finite and >= 0", l)
		}
		if l > 0 {
			pos = true
		}
	}
	if !pos {
		return invalid("periodic levels all zero")
	}
	return nil
}

// AverageRate returns the mean intensity over a period, ν = m(Period)/Period.
func (p Periodic) AverageRate() float64 {
	s := 0.0
	for _, l := range p.Levels {
		s += l
	}
	return s / float64(len(p.Levels))
}

// Events implements Process.
func (p Periodic) Events(rng *rand.Rand, horizon float64, dst []float64) []float64 {
	slice := p.Period / float64(len(p.Levels))
	// Walk slice by slice; within a slice of constant level the process is
	// homogeneous, so carry the unit-rate exponential mass across slices.
	need := rng.ExpFloat64()
	for k := 0; float64(k)*slice < horizon; k++ {
		t := float64(k) * slice
		end := math.Min(float64(k+1)*slice, horizon)
		l := p.Levels[k%len(p.Levels)]
		for l > 0 {
			dt := need / l
			if t+dt > end {
				need -= (end - t) * l
				break
			}
			t += dt
			dst = append(dst, t)
			need = rng.ExpFloat64()
		}
	}
	return dst
}

// Mean implements Process: ∫₀ᵗ λ(s) ds exactly.
func (p Periodic) Mean(t float64) float64 {
	if t <= 0 {
		return 0
	}
	n := len(p.Levels)
	slice := p.Period / float64(n)
	full := math.Floor(t / p.Period)
	m := full * p.AverageRate() * p.Period
	rem := t - full*p.Period
	for j := 0; j < n && rem > 0; j++ {
		d := math.Min(rem, slice)
		m += d * p.Levels[j]
		rem -= d
	}
	return m
}

// WeibullSegment is one piece of a piecewise Weibull process: for local time
// u = t − start in (0, Duration], the intensity is (Beta/Eta)(u/Eta)^(Beta−1)
// and E[N(u)] = (u/Eta)^Beta. Beta < 1 is a decreasing rate, 1 constant,
// > 1 increasing.
type WeibullSegment struct {
	// Duration of the segment in seconds; must be > 0.
	Duration float64
	// Beta is the shape; must be > 0.
	Beta float64
	// Eta is the scale in seconds; must be > 0.
	Eta float64
}

// Rate returns the segment's intensity at local time u > 0.
func (s WeibullSegment) Rate(u float64) float64 {
	return s.Beta / s.Eta * math.Pow(u/s.Eta, s.Beta-1)
}

// Piecewise is a piecewise Weibull (power-law) non-homogeneous Poisson
// process: segments follow each other, each restarting its local clock.
// After the last segment no events occur.
type Piecewise struct {
	// Segments in time order; at least one. No default.
	Segments []WeibullSegment
}

// Validate implements Process.
func (p Piecewise) Validate() error {
	if len(p.Segments) == 0 {
		return invalid("piecewise: no segments")
	}
	for i, s := range p.Segments {
		if !(s.Duration > 0) || !(s.Beta > 0) || !(s.Eta > 0) ||
			math.IsInf(s.Duration, 0) || math.IsInf(s.Eta, 0) || math.IsInf(s.Beta, 0) {
			return invalid("piecewise segment %d %+v: all fields must be finite and > 0", i, s)
		}
	}
	return nil
}

// Events implements Process: within a segment the event times are
// u_i = Eta·Γ_i^(1/Beta) where Γ_i are the arrival times of a unit-rate
// Poisson process.
func (p Piecewise) Events(rng *rand.Rand, horizon float64, dst []float64) []float64 {
	start := 0.0
	for _, s := range p.Segments {
		if start >= horizon {
			break
		}
		gamma := 0.0
		for {
			gamma += rng.ExpFloat64()
			u := s.Eta * math.Pow(gamma, 1/s.Beta)
			if u > s.Duration || start+u > horizon {
				break
			}
			dst = append(dst, start+u)
		}
		start += s.Duration
	}
	return dst
}

// Mean implements Process.
func (p Piecewise) Mean(t float64) float64 {
	m, start := 0.0, 0.0
	for _, s := range p.Segments {
		if t <= start {
			break
		}
		u := math.Min(t-start, s.Duration)
		m += math.Pow(u/s.Eta, s.Beta)
		start += s.Duration
	}
	return m
}

// RateAt returns the intensity at absolute time t (0 outside the segments).
func (p Piecewise) RateAt(t float64) float64 {
	start := 0.0
	for _, s := range p.Segments {
		if t > start && t <= start+s.Duration {
			return s.Rate(t - start)
		}
		start += s.Duration
	}
	return 0
}
