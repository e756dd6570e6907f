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

// Config holds the tunables of the estimators and schedules. The zero value
// of every field means its documented default: WithDefaults fills them in,
// and the functions and methods that take a *Config read it as given, so
// pass them one returned by WithDefaults (or DefaultConfig). Read-only
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
	// Default 0.5; AnyLastMod (any negative value) makes one interval with
	// a Last-Modified date enough.
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
	// EventPriorExposure is τ₀ of the Gamma(½, τ₀) prior of the rate of a
	// complete change history (events.go, eq. E2), seconds: ½ day, the
	// paper's ½ in days. Default 43200.
	EventPriorExposure float64
	// StaleProbability is the default target probability that a cached
	// copy is stale at expiry, for TTL. Default 0.1.
	StaleProbability float64
}

// MaxClasses is the largest number of frequency classes.
const MaxClasses = 8

// AnyLastMod as Config.MinLastModFraction makes one visit interval with a
// Last-Modified date enough for cgm_lastmod to be the best estimate (the
// fraction 0, which as a zero value means the default).
const AnyLastMod = -1.0

// WithDefaults returns c with the default of every zero field filled in
// (an empty Classes gets a new slice). It is the one source of the
// defaults.
func (c Config) WithDefaults() Config {
	set := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Level, 0.95)
	if c.MinIntervals == 0 {
		c.MinIntervals = 2
	}
	set(&c.RegularCV, 0.2)
	set(&c.MinLastModFraction, 0.5)
	set(&c.BetaAlpha, 1)
	set(&c.BetaBeta, 1)
	if len(c.Classes) == 0 {
		c.Classes = []float64{1.0 / 3600, 1.0 / 86400, 1.0 / 604800, 1.0 / 2592000}
	}
	if c.Schedule == "" {
		c.Schedule = ScheduleMalcolm
	}
	set(&c.CGMRatio, 1.5)
	if c.LMMaxChanges == 0 {
		c.LMMaxChanges = 100
	}
	set(&c.LMTargetInterval, 86400)
	set(&c.LMMaxRatio, 5)
	if c.NoLMMaxChanges == 0 {
		c.NoLMMaxChanges = 100
	}
	set(&c.NoLMSoftMaxInterval, 172800)
	set(&c.NoLMMaxRatio, 3)
	set(&c.MinInterval, 600)
	set(&c.MaxInterval, 2592000)
	set(&c.InitialInterval, 86400)
	set(&c.StaleProbability, 0.1)
	set(&c.EventPriorExposure, 43200)
	return c
}

// DefaultConfig returns the documented defaults: Config{}.WithDefaults().
func DefaultConfig() Config { return Config{}.WithDefaults() }

func posFinite(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// Validate reports every invalid field of c (with defaults filled in) at
// once, each error wrapping ErrConfig and naming its field.
func (c *Config) Validate() error {
	d := c.WithDefaults()
	var errs []error
	check := func(ok bool, field string, v any) {
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %s = %v", ErrConfig, field, v))
		}
	}
	check(d.Level > 0 && d.Level < 1, "Level (want 0 < Level < 1)", d.Level)
	check(d.MinIntervals >= 1, "MinIntervals (want ≥ 1)", d.MinIntervals)
	check(posFinite(d.RegularCV), "RegularCV (want > 0)", d.RegularCV)
	check(d.MinLastModFraction <= 1, "MinLastModFraction (want ≤ 1, or AnyLastMod)", d.MinLastModFraction)
	check(posFinite(d.BetaAlpha), "BetaAlpha (want > 0)", d.BetaAlpha)
	check(posFinite(d.BetaBeta), "BetaBeta (want > 0)", d.BetaBeta)
	check(len(d.Classes) <= MaxClasses, "Classes (want 1..8 rates)", d.Classes)
	for i, r := range d.Classes {
		check(posFinite(r), fmt.Sprintf("Classes[%d] (want > 0)", i), r)
	}
	check(d.Schedule == ScheduleMalcolm || d.Schedule == ScheduleCGM, "Schedule (want malcolm or cgm)", d.Schedule)
	check(posFinite(d.CGMRatio), "CGMRatio (want > 0)", d.CGMRatio)
	check(d.LMMaxChanges >= 1, "LMMaxChanges (want ≥ 1)", d.LMMaxChanges)
	check(posFinite(d.LMTargetInterval), "LMTargetInterval (want > 0)", d.LMTargetInterval)
	check(posFinite(d.LMMaxRatio), "LMMaxRatio (want > 0)", d.LMMaxRatio)
	check(d.NoLMMaxChanges >= 1, "NoLMMaxChanges (want ≥ 1)", d.NoLMMaxChanges)
	check(posFinite(d.NoLMSoftMaxInterval), "NoLMSoftMaxInterval (want > 0)", d.NoLMSoftMaxInterval)
	check(posFinite(d.NoLMMaxRatio), "NoLMMaxRatio (want > 0)", d.NoLMMaxRatio)
	check(posFinite(d.MinInterval), "MinInterval (want > 0)", d.MinInterval)
	check(posFinite(d.MaxInterval) && d.MaxInterval >= d.MinInterval, "MaxInterval (want ≥ MinInterval)", d.MaxInterval)
	check(posFinite(d.InitialInterval), "InitialInterval (want > 0)", d.InitialInterval)
	check(posFinite(d.EventPriorExposure), "EventPriorExposure (want > 0)", d.EventPriorExposure)
	check(d.StaleProbability > 0 && d.StaleProbability < 1, "StaleProbability (want 0 < p < 1)", d.StaleProbability)
	return errors.Join(errs...)
}

// z returns the two-sided normal quantile for Level (1.959964 at 0.95).
func (c *Config) z() float64 { return math.Sqrt2 * math.Erfinv(c.Level) }

// zOneSided returns the one-sided normal quantile for Level, Φ⁻¹(Level)
// (1.644854 at 0.95).
func (c *Config) zOneSided() float64 { return math.Sqrt2 * math.Erfinv(2*c.Level-1) }

// tails returns the lower and upper tail probabilities (0.025, 0.975).
func (c *Config) tails() (float64, float64) {
	a := (1 - c.Level) / 2
	return a, 1 - a
}
