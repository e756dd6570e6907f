package query

import (
	"math"
	"testing"
)

// The rates of the page (9.025e-06 /s, 0.0001433 /s) read as mean
// times: 1/9.025e-06 s = 110,803 s = 30.8 h; 1/0.0001433 = 6978 s = 1.9 h
// = 116 min; an interval in the estimate's unit.
func TestHumanRates(t *testing.T) {
	for _, c := range []struct {
		rate        float64
		ci          *[2]float64
		every, ci95 string
	}{
		{9.025e-06, &[2]float64{5e-6, 2e-5}, "30.8 h", "[13.9, 55.6] h"},
		{0.0001433, nil, "116 min", "–"},
		{1.0 / 86400 / 3, &[2]float64{1e-9, 1e-1}, "3.0 d", "[<0.001, >9999] d"},
		{0, &[2]float64{0, 1.0 / 3600}, "∞", "[60.0, ∞] min"},
		{2, nil, "0.5 s", "–"},
		{1 / (3 * 365.25 * 86400), nil, "3.0 y", "–"},
	} {
		if got := Every(c.rate); got != c.every {
			t.Errorf("Every(%g) = %q, want %q", c.rate, got, c.every)
		}
		if got := EveryCI(c.rate, c.ci); got != c.ci95 {
			t.Errorf("EveryCI(%g, %v) = %q, want %q", c.rate, c.ci, got, c.ci95)
		}
	}
	if got := Duration(math.Inf(1)); got != "∞" {
		t.Errorf("Duration(+Inf) = %q", got)
	}
}
