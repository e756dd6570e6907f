package aggregate

import (
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

// Window-local rates in estimates, and the published rate after a
// confirmed shift (issue 14).
//
// Every estimate carries the current window's three rates at as_of under
// the keys "intuitive" (N(t)/t, 001 §3.1), "weibull" (λ̌(t), §3.2) and
// "duane" (t^{−γ}/α, §3.3), as the SPEC lists them. The whole-history
// estimators stay beside them.
//
// Once a shift of the stream is confirmed (windows.Segmenter.Shifted: the
// current window was opened at the estimated change point), the history
// before the change point describes another regime; the published
// rate_per_s is then the window's rate (the model with the lowest
// prequential MSE, Summary.Model) and ci95 the exact Poisson (Garwood)
// interval of the window's N points over its length, scaled by the ratio
// of the published rate to N(t)/t. The estimator field names the window
// model. The TTL follows the published rate.

// followWindow adds the window rates to rec's estimates (kept in rs) and,
// after a confirmed shift, makes the window rate the published one. It
// reports whether it did the latter.
func followWindow(rec *records.Estimate, rs *recordStore, st *windows.Segmenter, sum windows.Summary, m *Model) bool {
	names := windows.Models()
	for i, ok := range sum.HasRates {
		if ok && finite(sum.Rates[i]) && sum.Rates[i] > 0 && meaningfulWindowRate(i, sum, m) {
			rs.setRate(rec, names[i], sum.Rates[i])
		}
	}
	if !st.Shifted() || !sum.HasRate || !finite(sum.Rate) || !(sum.Rate > 0) || sum.Points < int64(m.Windows.MinPoints) {
		return false
	}
	rec.RatePerS = ptr(sum.Rate)
	rec.Estimator = sum.Model
	rec.CI95 = nil
	if sum.HasRates[0] && sum.Rates[0] > 0 {
		lo, hi := garwood(sum.Points)
		// N(t)/t = Points/length, so the interval of the rate is
		// [lo, hi]/length = [lo, hi]·(N(t)/t)/Points
		k := sum.Rates[0] / float64(sum.Points) * (sum.Rate / sum.Rates[0])
		rec.CI95 = &[2]float64{lo * k, hi * k}
	}
	return true
}

// meaningfulWindowRate reports whether the window's rate of model i (an
// index of windows.Models: 0 is the intuitive N(t)/t) may be published in
// estimates (issue 31: a Duane rate 337 times (changes+1)/span from a
// window of 3 points with slope −54.7). The intuitive rate is a count over
// a time and always is. A fitted rate (Weibull §3.2, Duane §3.3) needs
// what the windows' own published rate needs: at least MinPoints points
// (a least-squares line through 2 or 3 points says nothing about its
// slope), and a non-degenerate fit, within MaxRateRatio of N(t)/t both
// ways: for a power-law process λ(t) = β·N(t)/t, so a larger ratio means a
// shape β outside [1/MaxRateRatio, MaxRateRatio], an extrapolation of a
// burst (windows.summarize applies the same bound to the window's rate).
func meaningfulWindowRate(i int, sum windows.Summary, m *Model) bool {
	if i == 0 {
		return true
	}
	if sum.Points < int64(m.Windows.MinPoints) || !sum.HasRates[0] || !(sum.Rates[0] > 0) {
		return false
	}
	q := sum.Rates[i] / sum.Rates[0]
	return q <= windows.MaxRateRatio && q >= 1/windows.MaxRateRatio
}
