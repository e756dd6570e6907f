package estimators

import (
	"errors"
	"fmt"
	"math"
)

// Schedule names for Config.Schedule.
const (
	// ScheduleMalcolm uses Malcolm & Armitage Listing 1 (Last-Modified seen)
	// or Listing 2 (no Last-Modified) while estimating, then the CGM rule.
	ScheduleMalcolm = "malcolm"
	// ScheduleCGM always uses CGM Example 4: visit interval = CGMRatio/λ̂.
	ScheduleCGM = "cgm"
)

// ErrConfig is wrapped by every error of Config.Validate.
var ErrConfig = errors.New("estimators: invalid config")

// Config holds the tunables of the estimators and schedules. Read-only
// after Validate; safe for concurrent readers. Durations are in seconds.
type Config struct {
	// Level is the coverage of every confidence interval. Default 0.95.
	Level float64
	// MinIntervals is the number of observed intervals (visits after the
	// baseline, or Matloff periods, or accesses after the first) an object
	// needs before a best estimate is named. Individual estimators are
	// reported as soon as they are mathematically defined. Default 2
	// (CGM Fig. 12: the bias-corrected last-modified estimator is within 2%
	// already at n = 2).
	MinIntervals int
	// RegularCV is the largest coefficient of variation of the visit
	// intervals for which visits count as regular (CGM §4.1–4.2 estimators
	// apply). Under irregular intervals the regular estimator with the mean
	// frequency underestimates λ by about r·CV²/2 (Jensen), so 0.2 keeps
	// that bias under 3% at the recommended r ≈ 1.5. Default 0.2.
	RegularCV float64
	// MinLastModFraction is the fraction of visit intervals that must carry
	// a Last-Modified date for cgm_lastmod to be the best estimate.
	// Default 0.5.
	MinLastModFraction float64
	// BetaAlpha and BetaBeta are the Beta prior of θ = 1−e^{−r} for
	// bayes_beta (CGM App. B). Default 1, 1 (uniform prior, θ̂ = (X+1)/(n+2)).
	BetaAlpha, BetaBeta float64
	// Classes are the rates (per second) of the frequency classes of the
	// Bayesian classification (CGM §2). Default hourly, daily, weekly,
	// monthly (30 days): 1/3600, 1/86400, 1/604800, 1/2592000. At most
	// MaxClasses entries, each > 0.
	Classes []float64
	// Schedule selects the next-visit rule: ScheduleMalcolm or ScheduleCGM.
	// Default ScheduleMalcolm.
	Schedule string
	// CGMRatio is r = λ/f targeted by the CGM rule (Example 4: σ/r is
	// smallest near r ≈ 1.5), so the visit interval is CGMRatio/λ̂.
	// Default 1.5.
	CGMRatio float64
	// LMMaxChanges, LMTargetInterval, LMMaxRatio are MAX_CHANGES,
	// TARGET_INTERVAL and MAX_RATIO of Malcolm & Armitage Listing 1
	// (Table 3). Defaults 100, 86400 (1 day), 5.
	LMMaxChanges     int64
	LMTargetInterval float64
	LMMaxRatio       float64
	// NoLMMaxChanges, NoLMSoftMaxInterval, NoLMMaxRatio, MinInterval are
	// MAX_CHANGES, SOFT_MAX_INTERVAL, MAX_RATIO and MIN_INTERVAL of
	// Listing 2 (Table 4). Defaults 100, 172800 (2 days), 3, 600 (10 min).
	// MinInterval is also the lower clamp of every schedule.
	NoLMMaxChanges      int64
	NoLMSoftMaxInterval float64
	NoLMMaxRatio        float64
	MinInterval         float64
	// MaxInterval is the upper clamp of every visit interval (a project
	// choice, not in the papers: keep watching every object). Default
	// 2592000 (30 days).
	MaxInterval float64
	// InitialInterval is the interval of the CGM rule while no change has
	// been seen (then the interval grows to the observed span, doubling
	// the span each visit). Default 86400.
	InitialInterval float64
	// StopAtMaxChanges: when true, NextVisit reports ok=false once the
	// Malcolm & Armitage MAX_CHANGES is reached (the listings' "return
	// −1"). When false (default) it continues with the CGM rule.
	StopAtMaxChanges bool
	// StaleProbability is the default target probability that a cached
	// copy is stale at expiry, for TTL. Default 0.1.
	StaleProbability float64
}

// MaxClasses is the largest number of frequency classes.
const MaxClasses = 8

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Level:               0.95,
		MinIntervals:        2,
		RegularCV:           0.2,
		MinLastModFraction:  0.5,
		BetaAlpha:           1,
		BetaBeta:            1,
		Classes:             []float64{1.0 / 3600, 1.0 / 86400, 1.0 / 604800, 1.0 / 2592000},
		Schedule:            ScheduleMalcolm,
		CGMRatio:            1.5,
		LMMaxChanges:        100,
		LMTargetInterval:    86400,
		LMMaxRatio:          5,
		NoLMMaxChanges:      100,
		NoLMSoftMaxInterval: 172800,
		NoLMMaxRatio:        3,
		MinInterval:         600,
		MaxInterval:         2592000,
		InitialInterval:     86400,
		StaleProbability:    0.1,
	}
}

func posFinite(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// Validate reports the first invalid field, wrapping ErrConfig.
func (c *Config) Validate() error {
	bad := func(field string, v any) error {
		return fmt.Errorf("%w: %s = %v", ErrConfig, field, v)
	}
	switch {
	case !(c.Level > 0 && c.Level < 1):
		return bad("Level (want 0 < Level < 1)", c.Level)
	case c.MinIntervals < 1:
		return bad("MinIntervals (want ≥ 1)", c.MinIntervals)
	case !posFinite(c.RegularCV):
		return bad("RegularCV (want > 0)", c.RegularCV)
	case !(c.MinLastModFraction >= 0 && c.MinLastModFraction <= 1):
		return bad("MinLastModFraction (want in [0,1])", c.MinLastModFraction)
	case !posFinite(c.BetaAlpha):
		return bad("BetaAlpha (want > 0)", c.BetaAlpha)
	case !posFinite(c.BetaBeta):
		return bad("BetaBeta (want > 0)", c.BetaBeta)
	case len(c.Classes) == 0 || len(c.Classes) > MaxClasses:
		return bad("Classes (want 1..8 rates)", c.Classes)
	case c.Schedule != ScheduleMalcolm && c.Schedule != ScheduleCGM:
		return bad("Schedule (want malcolm or cgm)", c.Schedule)
	case !posFinite(c.CGMRatio):
		return bad("CGMRatio (want > 0)", c.CGMRatio)
	case c.LMMaxChanges < 1:
		return bad("LMMaxChanges (want ≥ 1)", c.LMMaxChanges)
	case !posFinite(c.LMTargetInterval):
		return bad("LMTargetInterval (want > 0)", c.LMTargetInterval)
	case !posFinite(c.LMMaxRatio):
		return bad("LMMaxRatio (want > 0)", c.LMMaxRatio)
	case c.NoLMMaxChanges < 1:
		return bad("NoLMMaxChanges (want ≥ 1)", c.NoLMMaxChanges)
	case !posFinite(c.NoLMSoftMaxInterval):
		return bad("NoLMSoftMaxInterval (want > 0)", c.NoLMSoftMaxInterval)
	case !posFinite(c.NoLMMaxRatio):
		return bad("NoLMMaxRatio (want > 0)", c.NoLMMaxRatio)
	case !posFinite(c.MinInterval):
		return bad("MinInterval (want > 0)", c.MinInterval)
	case !posFinite(c.MaxInterval) || c.MaxInterval < c.MinInterval:
		return bad("MaxInterval (want ≥ MinInterval)", c.MaxInterval)
	case !posFinite(c.InitialInterval):
		return bad("InitialInterval (want > 0)", c.InitialInterval)
	case !(c.StaleProbability > 0 && c.StaleProbability < 1):
		return bad("StaleProbability (want 0 < p < 1)", c.StaleProbability)
	}
	for i, r := range c.Classes {
		if !posFinite(r) {
			return bad(fmt.Sprintf("Classes[%d] (want > 0)", i), r)
		}
	}
	return nil
}

// z returns the two-sided normal quantile for Level (1.959964 at 0.95).
func (c *Config) z() float64 { return math.Sqrt2 * math.Erfinv(c.Level) }

// tails returns the lower and upper tail probabilities (0.025, 0.975).
func (c *Config) tails() (float64, float64) {
	a := (1 - c.Level) / 2
	return a, 1 - a
}
