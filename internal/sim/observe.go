package sim

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Schedule produces visit times.
type Schedule interface {
	// Validate reports whether the parameters are usable.
	Validate() error
	// Times appends the visit times in [start, end] to dst, ascending.
	Times(rng *rand.Rand, start, end float64, dst []float64) []float64
}

// Regular visits every Interval seconds starting at start.
type Regular struct {
	// Interval between visits in seconds; must be > 0. No default.
	Interval float64
}

// Validate implements Schedule.
func (r Regular) Validate() error {
	if !(r.Interval > 0) || math.IsInf(r.Interval, 0) {
		return invalid("regular interval %v must be finite and > 0", r.Interval)
	}
	return nil
}

// Times implements Schedule. Times are start + i·Interval (computed by
// multiplication, not accumulation, so they are exact multiples).
func (r Regular) Times(_ *rand.Rand, start, end float64, dst []float64) []float64 {
	for i := 0; ; i++ {
		t := start + float64(i)*r.Interval
		if t > end*(1+1e-12) {
			return dst
		}
		dst = append(dst, t)
	}
}

// PoissonVisits visits at the events of a Poisson process of rate Rate,
// with a first visit at start (irregular access, CGM §4.3).
type PoissonVisits struct {
	// Rate of visits per second; must be > 0. No default.
	Rate float64
}

// Validate implements Schedule.
func (p PoissonVisits) Validate() error {
	if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
		return invalid("poisson visit rate %v must be finite and > 0", p.Rate)
	}
	return nil
}

// Times implements Schedule.
func (p PoissonVisits) Times(rng *rand.Rand, start, end float64, dst []float64) []float64 {
	t := start
	dst = append(dst, t)
	for {
		t += rng.ExpFloat64() / p.Rate
		if t > end {
			return dst
		}
		dst = append(dst, t)
	}
}

// Visit is what a visitor sees at one visit.
type Visit struct {
	// Time of the visit (seconds).
	Time float64
	// Interval since the previous visit (0 for the first visit).
	Interval float64
	// First is true for the first visit, which only establishes a baseline:
	// Changed is meaningless there.
	First bool
	// Changed reports whether at least one event happened in
	// (previous visit, Time].
	Changed bool
	// HasLastModified reports whether LastModified is set (the observer was
	// configured to see it).
	HasLastModified bool
	// LastModified is the time of the last event at or before Time, or 0
	// (the object's creation at the process start) when there was none.
	LastModified float64
}

// Age returns Time − LastModified (time since the last change), or NaN when
// Last-Modified is not available.
func (v Visit) Age() float64 {
	if !v.HasLastModified {
		return math.NaN()
	}
	return v.Time - v.LastModified
}

// Observe returns what a visitor sees at the given ascending visit times of
// a process whose ascending event times are events. withLastModified
// controls whether LastModified is reported. dst is reused.
func Observe(events, visits []float64, withLastModified bool, dst []Visit) []Visit {
	dst = dst[:0]
	prev := math.Inf(-1)
	j := 0 // events[:j] are <= current visit
	for i, t := range visits {
		before := j
		for j < len(events) && events[j] <= t {
			j++
		}
		v := Visit{Time: t, First: i == 0}
		if i > 0 {
			v.Interval = t - prev
			v.Changed = j > before
		}
		if withLastModified {
			v.HasLastModified = true
			if j > 0 {
				v.LastModified = events[j-1]
			}
		}
		dst = append(dst, v)
		prev = t
	}
	return dst
}

// Snapshot is one of Matloff's indirect observations: a poll at the end of
// an interval of length τ reporting the last access/modification time.
type Snapshot struct {
	// PollTime is the end of the interval, i·τ.
	PollTime float64
	// HasLast reports whether any event happened at or before PollTime.
	HasLast bool
	// Last is the time of the last event at or before PollTime.
	Last float64
}

// Snapshots polls every tau seconds at tau, 2tau, …, n·tau (intervals
// ((i−1)τ, iτ]) and reports the last event time at each poll. The interval
// i is non-empty iff Last > (i−1)τ; then W_i = Last − (i−1)τ.
func Snapshots(events []float64, tau float64, n int, dst []Snapshot) []Snapshot {
	dst = dst[:0]
	j := 0
	for i := 1; i <= n; i++ {
		t := float64(i) * tau
		for j < len(events) && events[j] <= t {
			j++
		}
		s := Snapshot{PollTime: t}
		if j > 0 {
			s.HasLast = true
			s.Last = events[j-1]
		}
		dst = append(dst, s)
	}
	return dst
}

// Count returns the number of events in (a, b] of the ascending slice.
func Count(events []float64, a, b float64) int {
	lo := sort.Search(len(events), func(i int) bool { return events[i] > a })
	hi := sort.Search(len(events), func(i int) bool { return events[i] > b })
	return hi - lo
}
