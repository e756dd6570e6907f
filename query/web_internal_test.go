package query

import (
	"math"
	"reflect"
	"testing"

	"github.com/changerate/changerate/records"
)

// TestFormatSeconds: sub-second durations keep their value (the Duane
// plot's first tick at 0.1 s read "0s").
func TestFormatSeconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{0, "0s"},
		{0.001, "0.001s"},
		{0.05, "0.05s"},
		{0.1, "0.1s"},
		{0.25, "0.25s"},
		{0.999, "1s"},
		{1, "1s"},
		{20.86, "21s"},
		{119, "119s"},
		{1000, "16.7m"},
		{3 * 3600, "3.0h"},
		{4 * 86400, "4.0d"},
		{math.Inf(1), "∞"},
		{math.NaN(), "∞"},
	} {
		if got := FormatSeconds(c.s); got != c.want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestTickLabels: the Duane plot's log-axis labels at powers of ten, as
// on raeder.dk:81/robots.txt (t from 0.05 s to 20 min).
func TestTickLabels(t *testing.T) {
	for _, c := range []struct {
		name   string
		lo, hi float64 // seconds
		want   []string
	}{
		{"sub-second to minutes", 0.05, 1200, []string{"0.1s", "1s", "10s", "100s", "16.7m"}},
		{"milliseconds", 0.0005, 0.2, []string{"0.001s", "0.01s", "0.1s"}},
		{"narrow: the ends", 0.3, 0.5, []string{"0.3s", "0.5s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, tk := range ticks(math.Log(c.lo), math.Log(c.hi), func(x float64) float64 { return x }) {
				got = append(got, tk.Label)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("labels %q, want %q", got, c.want)
			}
		})
	}
}

// TestRowsIntervals: the "Every estimator" table shows the interval the
// record publishes for each estimator: intervals[key], and for the best
// estimator without one (a window model after a confirmed shift, as
// weibull on the NASA day's http://localhost/) the record's ci95, which is
// the interval of rate_per_s, its rate. The summary above the table
// showed ci95 and the table "–".
func TestRowsIntervals(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	ci := func(lo, hi float64) *[2]float64 { return &[2]float64{lo, hi} }
	for _, c := range []struct {
		name string
		rec  records.Estimate
		want map[string]*[2]float64 // key → interval (nil: none)
	}{
		{"window model after a shift: ci95", records.Estimate{Kind: "access", RatePerS: p(0.02114), Estimator: "weibull", CI95: ci(0.0193, 0.02311),
			Estimates: map[string]float64{"duane": 0.01879, "naive": 0.01372, "weibull": 0.02114},
			Intervals: map[string][2]float64{"naive": {0.01267, 0.01484}}},
			map[string]*[2]float64{"duane": nil, "naive": ci(0.01267, 0.01484), "weibull": ci(0.0193, 0.02311)}},
		{"best with its own interval", records.Estimate{Kind: "change", RatePerS: p(0.5), Estimator: "naive", CI95: ci(0.4, 0.6),
			Estimates: map[string]float64{"naive": 0.5, "bayes_beta": 0.45},
			Intervals: map[string][2]float64{"naive": {0.4, 0.6}, "bayes_beta": {0.3, 0.7}}},
			map[string]*[2]float64{"naive": ci(0.4, 0.6), "bayes_beta": ci(0.3, 0.7)}},
		{"best without an interval, no ci95", records.Estimate{Kind: "change", RatePerS: p(0.5), Estimator: "duane",
			Estimates: map[string]float64{"duane": 0.5}},
			map[string]*[2]float64{"duane": nil}},
		{"ci95 of another rate than the row's", records.Estimate{Kind: "change", RatePerS: p(0.5), Estimator: "duane", CI95: ci(0.4, 0.6),
			Estimates: map[string]float64{"duane": 0.3}},
			map[string]*[2]float64{"duane": nil}},
		{"no best rate", records.Estimate{Kind: "change", Estimates: map[string]float64{"naive": 0, "bayes_beta": 0.0003},
			Intervals: map[string][2]float64{"naive": {0, 0.003}}},
			map[string]*[2]float64{"naive": ci(0, 0.003), "bayes_beta": nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]*[2]float64{}
			for _, r := range rows(&c.rec) {
				if r.Best != (r.Key == c.rec.Estimator) || r.Rate != c.rec.Estimates[r.Key] {
					t.Errorf("row %+v", r)
				}
				got[r.Key] = r.CI
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("intervals %v, want %v", fmtCIs(got), fmtCIs(c.want))
			}
		})
	}
}

func fmtCIs(m map[string]*[2]float64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = "–"
		if v != nil {
			out[k] = fmtCI(*v)
		}
	}
	return out
}
