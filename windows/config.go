package windows

import (
	"errors"
	"fmt"
	"math"
)

// Config holds the tunables of the window segmentation (001 §4–§5) and of the
// rate-shift detector. The zero value of every field means its documented
// default: WithDefaults fills them in, and the methods that take a *Config
// read it as given, so pass them one returned by WithDefaults (or
// DefaultConfig). A Config is read-only for the methods that take it and
// may be shared by goroutines.
type Config struct {
	// MinPoints is the minimum number of update points of a consistent window
	// (001 §5: "a minimum size of four update points"). Below it a window is
	// "forming" and no shift can close it (merge rule, see Segmenter). It is also
	// the first n at which the unbiased Weibull rate λ̌ (which needs n > 3) is
	// defined. Default 4; must be at least 4.
	MinPoints int

	// TrendLevel is the two-sided significance level of the Crow-AMSAA trend
	// test that classifies a window as increasing, decreasing or constant
	// (Definition 1): under a homogeneous Poisson process
	// 2·Σ ln(t_n/t_i) ~ χ²_{2(n−1)} (Lemma 1); a window is increasing when the
	// statistic is below the TrendLevel/2 quantile, decreasing when above the
	// 1−TrendLevel/2 quantile, else constant. Default 0.05; in (0, 1).
	TrendLevel float64

	// ShiftRatio ρ is the rate ratio the CUSUM discrepancy is tuned for: the
	// up-side statistic accumulates the log-likelihood ratio of rate ρ·λ̂ against
	// the window's own fit λ̂, the down-side that of λ̂/ρ. Default 2; > 1.
	ShiftRatio float64

	// Threshold h is the discrepancy threshold of 001 §4, in nats: a window
	// tolerates inconsistent update points as long as their CUSUM
	// log-likelihood ratio stays below h; when it reaches h (and the pending
	// points pass the MinRatio and MaxPValue gates) the window is closed and a
	// new one starts at the estimated change point. Larger values mean fewer
	// false alarms and longer detection delays. Default 15, calibrated by
	// simulation: 0.45 % of homogeneous Poisson objects raise an alert within
	// 1,000 events (13 → 0.85 %, 14 → 0.7 %; see docs/windows-eval.md). > 0.
	Threshold float64

	// FreezePoints is the smallest window part before the candidate change
	// point τ whose fit is frozen as the detector's reference while an
	// excursion is pending; smaller windows are scored against the fit of the
	// whole window (their own estimate is too noisy to extrapolate). Default
	// 100; ≥ MinPoints.
	FreezePoints int

	// MinRatio is the smallest shift reported: the pending points' count over
	// its expectation under the closed window's fit must be ≥ MinRatio (up) or
	// ≤ 1/MinRatio (down). It keeps the estimation error of a window's rate
	// (which a CUSUM against a plug-in rate eventually detects) from being
	// reported as a shift. Default √2 (half the ShiftRatio on a log scale);
	// ≥ 1.
	MinRatio float64

	// MaxPValue is the largest p-value of the one-sided conditional binomial
	// test of the pending points (see Segmenter) for which a shift is reported.
	// Default 0.01; in (0, 1].
	MaxPValue float64

	// ScanAlarms turns on the scan confirmation of rises: a pending upward
	// excursion whose CUSUM has not reached Threshold is also confirmed at
	// a point where the likelihood ratio of its k pending points, mixed over
	// the rises ρ ∈ {2, 4, 8} with equal weights,
	// M = ⅓·Σ_ρ ρ^k·e^{−(ρ−1)μ} (μ their expectation under the window up
	// to τ), reaches λ̂·1 week/ScanAlarms (λ̂ the rate of that window), and
	// they pass MinPoints, MinRatio and MaxPValue. A CUSUM tuned to
	// ShiftRatio gathers only part of the evidence of a larger shift (a 4×
	// burst of 13 points where 3.3 were expected is 5.7 nats of 2× evidence
	// against 8.1 of 4×). Without a shift M, started at any point, is a
	// martingale of mean 1, so it ever reaches 1/a with probability ≤ a
	// (Ville's inequality); the excursions start at most λ̂·1 week times a
	// week, so the expected false confirmations a week are ≤ ScanAlarms
	// whatever the stream's rate (with λ̂ known; it is estimated). Default
	// 0: off; ≥ 0.
	ScanAlarms float64

	// AlphaDecreasing is the bound α of 001 §5 applied to the prediction
	// t_next = t_cur + α·MTBU(t_cur) when the window is decreasing (the paper
	// reports α = 0.7). Default 0.7; in (0, 1].
	AlphaDecreasing float64

	// Alpha is the α used for the other window states. Default 1; in (0, 1].
	Alpha float64
}

// WithDefaults returns c with the default of every zero field filled in.
// It is the one source of the defaults.
func (c Config) WithDefaults() Config {
	if c.MinPoints == 0 {
		c.MinPoints = 4
	}
	if c.TrendLevel == 0 {
		c.TrendLevel = 0.05
	}
	if c.ShiftRatio == 0 {
		c.ShiftRatio = 2
	}
	if c.Threshold == 0 {
		c.Threshold = 15
	}
	if c.FreezePoints == 0 {
		c.FreezePoints = 100
	}
	if c.MinRatio == 0 {
		c.MinRatio = math.Sqrt2
	}
	if c.MaxPValue == 0 {
		c.MaxPValue = 0.01
	}
	if c.AlphaDecreasing == 0 {
		c.AlphaDecreasing = 0.7
	}
	if c.Alpha == 0 {
		c.Alpha = 1
	}
	return c
}

// DefaultConfig returns the documented defaults: Config{}.WithDefaults().
func DefaultConfig() Config { return Config{}.WithDefaults() }

// ErrConfig is wrapped by every error returned by Config.Validate.
var ErrConfig = errors.New("windows: invalid config")

// Validate reports every invalid field of c (with defaults filled in) at
// once, each error wrapping ErrConfig and naming its field.
func (c *Config) Validate() error {
	d := c.WithDefaults()
	in01 := func(v float64, closedHigh bool) bool {
		if math.IsNaN(v) || v <= 0 {
			return false
		}
		if closedHigh {
			return v <= 1
		}
		return v < 1
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if d.MinPoints < 4 || d.MinPoints > 1<<20 {
		bad("MinPoints %d not in [4, 2^20]", d.MinPoints)
	}
	if !in01(d.TrendLevel, false) {
		bad("TrendLevel %v not in (0, 1)", d.TrendLevel)
	}
	if d.FreezePoints < d.MinPoints || d.FreezePoints > 1<<20 {
		bad("FreezePoints %d not in [MinPoints, 2^20]", d.FreezePoints)
	}
	if !(d.ShiftRatio > 1) || math.IsInf(d.ShiftRatio, 0) {
		bad("ShiftRatio %v not > 1", d.ShiftRatio)
	}
	if !(d.MinRatio >= 1) || math.IsInf(d.MinRatio, 0) {
		bad("MinRatio %v not ≥ 1", d.MinRatio)
	}
	if !(d.Threshold > 0) || math.IsInf(d.Threshold, 0) {
		bad("Threshold %v not > 0", d.Threshold)
	}
	if !in01(d.MaxPValue, true) {
		bad("MaxPValue %v not in (0, 1]", d.MaxPValue)
	}
	if !(d.ScanAlarms >= 0) || math.IsInf(d.ScanAlarms, 0) {
		bad("ScanAlarms %v not ≥ 0", d.ScanAlarms)
	}
	if !in01(d.AlphaDecreasing, true) {
		bad("AlphaDecreasing %v not in (0, 1]", d.AlphaDecreasing)
	}
	if !in01(d.Alpha, true) {
		bad("Alpha %v not in (0, 1]", d.Alpha)
	}
	return errors.Join(errs...)
}
