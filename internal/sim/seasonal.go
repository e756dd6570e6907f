package sim

import (
	"math"
	"time"
)

// WeeklyLevels returns the 168 hourly intensities (per second) of a
// periodic NHPP with period one week and the product intensity
// λ(t) = rate·hour[h(t)]·day[d(t)] (h the UTC hour of day, d the day of the
// week, Monday = 0), rotated so that slice 0 starts at start: use it as
// Periodic{Period: 604800, Levels: ...} for a process whose time 0 is start
// (start must be on a whole UTC hour). The factors are used as given (the
// mean intensity is rate·mean(hour)·mean(day)).
func WeeklyLevels(start time.Time, rate float64, hour [24]float64, day [7]float64) []float64 {
	levels := make([]float64, 168)
	start = start.UTC()
	dow := (int(start.Weekday()) + 6) % 7 // Monday = 0
	first := dow*24 + start.Hour()
	for k := range levels {
		c := (first + k) % 168
		levels[k] = rate * hour[c%24] * day[c/24]
	}
	return levels
}

// OfficeHours returns hour-of-day factors 1 + amp·cos(2π(h + 0.5 − peak)/24):
// a smooth daily cycle with its maximum at hour peak (UTC) and a peak to
// trough ratio of (1+amp)/(1−amp); amp in [0, 1).
func OfficeHours(peak float64, amp float64) (f [24]float64) {
	for h := range f {
		f[h] = 1 + amp*math.Cos(2*math.Pi*(float64(h)+0.5-peak)/24)
	}
	return f
}
