package query

import (
	"math"
	"strconv"
)

// The pages and the aggregator's tables say rates as people read them: the
// mean time between two events, 1/rate, "one change every 31 h", with the
// 95 % interval in the same unit ("[20, 50] h"); the API keeps the rates
// per second.

// Unit is the unit in which the durations of one line are written.
type Unit struct {
	Name    string  // "s", "min", "h", "d" or "y"
	Seconds float64 // its length
}

// UnitOf is the unit in which the duration d (seconds) reads best: s under
// 2 min, min under 2 h, h under 2 d, d under 2 years, then years.
func UnitOf(d float64) Unit {
	switch {
	case d < 120:
		return Unit{"s", 1}
	case d < 2*3600:
		return Unit{"min", 60}
	case d < 2*86400:
		return Unit{"h", 3600}
	case d < 2*365.25*86400:
		return Unit{"d", 86400}
	}
	return Unit{"y", 365.25 * 86400}
}

// Format writes the duration d (seconds) in u, with the unit: "31 h".
func (u Unit) Format(d float64) string {
	n := u.Number(d)
	if n == "∞" {
		return n
	}
	return n + " " + u.Name
}

// Number writes the duration d (seconds) in u without the unit, with 3
// significant digits at most (4 from 1000 on), ∞ for +Inf or NaN, and
// bounds beyond the range as "<0.001" and ">9999".
func (u Unit) Number(d float64) string {
	x := d / u.Seconds
	switch {
	case math.IsInf(x, 1) || math.IsNaN(x):
		return "∞"
	case x >= 9999.5:
		return ">9999"
	case x >= 99.95:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 0.1:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 0.001:
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
	return "<0.001"
}

// Interval writes the durations of the rate interval ci (per second) in
// u, [1/hi, 1/lo] with the unit: "[20, 50] h"; "–" without one.
func (u Unit) Interval(ci *[2]float64) string {
	if ci == nil {
		return "–"
	}
	return "[" + u.Number(1/ci[1]) + ", " + u.Number(1/ci[0]) + "] " + u.Name
}

// unitOfRate is the unit of the mean time 1/rate, or, for a rate of 0
// (no event seen), of the shortest time its interval allows.
func unitOfRate(rate float64, ci *[2]float64) Unit {
	if rate > 0 && !math.IsInf(rate, 0) {
		return UnitOf(1 / rate)
	}
	if ci != nil && ci[1] > 0 {
		return UnitOf(1 / ci[1])
	}
	return UnitOf(math.Inf(1))
}

// Every writes the mean time between events of rate (per second): "31 h";
// ∞ for a rate of 0.
func Every(rate float64) string {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return "∞"
	}
	return UnitOf(1 / rate).Format(1 / rate)
}

// EveryCI writes the 95 % interval ci of rate as mean times, in the unit
// of Every(rate).
func EveryCI(rate float64, ci *[2]float64) string { return unitOfRate(rate, ci).Interval(ci) }

// Duration writes d (seconds) in its own unit: "3.2 h".
func Duration(d float64) string { return UnitOf(d).Format(d) }
