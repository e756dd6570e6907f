package estimators

import "math"

// NextVisit returns the recommended time of the next visit (seconds since
// the epoch): the latest visit plus the interval of the configured rule,
// but not before asOf (an overdue object is due now). An object never
// visited is due at asOf. ok=false when cfg.StopAtMaxChanges and the
// Malcolm & Armitage MAX_CHANGES has been reached (the listings' −1), or
// asOf is not finite. It does not allocate.
//
// ScheduleMalcolm (default) — while fewer than MAX_CHANGES changes were
// detected:
//   - Last-Modified seen (on cfg.MinLastModFraction of the intervals, or
//     on the baseline only): Listing 1, interval = max(TARGET_INTERVAL,
//     chgIntervalEst/MAX_RATIO) with chgIntervalEst the eq. 2 mean age;
//   - otherwise Listing 2: interval = chgIntervalEst, capped at
//     SOFT_MAX_INTERVAL unless that is below chgIntervalEst/MAX_RATIO, and
//     at least MIN_INTERVAL; chgIntervalEst is the bias-corrected eq. 3
//     interval; with no change yet it is the span observed so far (the
//     change interval is probably longer), and when every interval changed
//     (eq. 3 singular) it is 1/λ̂ of cgm_improved.
//
// After MAX_CHANGES, and always under ScheduleCGM: CGM Example 4, interval
// = CGMRatio/λ̂ (r = λ/f ≈ 1.5 minimises σ/r) with λ̂ the best estimate;
// while λ̂ = 0 the interval is max(InitialInterval, span). Every interval
// is finally clamped to [MinInterval, MaxInterval].
func (c *Change) NextVisit(asOf float64, cfg *Config) (t float64, ok bool) {
	return c.nextVisit(asOf, cfg, nil)
}

// NextVisitFrom is NextVisit given the best estimate that Estimate returned
// for the same state and cfg (best, ok), so that the CGM rule does not
// compute it again. The result is the same as NextVisit's.
func (c *Change) NextVisitFrom(asOf float64, cfg *Config, best Estimate, ok bool) (t float64, nextOK bool) {
	return c.nextVisit(asOf, cfg, &knownBest{rate: best.Rate, ok: ok})
}

// knownBest is the best estimate's rate when the caller already has it.
type knownBest struct {
	rate float64
	ok   bool
}

func (c *Change) nextVisit(asOf float64, cfg *Config, kb *knownBest) (t float64, ok bool) {
	if !finite(asOf) {
		return 0, false
	}
	if c.visits == 0 {
		return asOf, true
	}
	iv, ok := c.nextInterval(cfg, kb)
	if !ok {
		return 0, false
	}
	t = c.latest() + iv
	if t < asOf {
		t = asOf
	}
	return t, true
}

// NextInterval is the interval part of NextVisit (seconds after the latest
// visit).
func (c *Change) NextInterval(cfg *Config) (interval float64, ok bool) {
	return c.nextInterval(cfg, nil)
}

func (c *Change) nextInterval(cfg *Config, kb *knownBest) (interval float64, ok bool) {
	if cfg.Schedule == ScheduleMalcolm {
		lm := c.ageN > 0 && (c.Intervals() == 0 || c.hasLastMod(cfg))
		if lm {
			if c.changes >= cfg.LMMaxChanges {
				if cfg.StopAtMaxChanges {
					return 0, false
				}
				return c.cgmInterval(cfg, kb), true
			}
			// Listing 1.
			interval = cfg.LMTargetInterval
			if c.ageSum > 0 {
				if est := c.totalAge() / float64(c.ageN); interval < est/cfg.LMMaxRatio {
					interval = est / cfg.LMMaxRatio
				}
			}
			return c.clamp(interval, cfg), true
		}
		if c.changes >= cfg.NoLMMaxChanges {
			if cfg.StopAtMaxChanges {
				return 0, false
			}
			return c.cgmInterval(cfg, kb), true
		}
		// Listing 2.
		T := c.Span()
		var est float64
		if _, ivl, ok := MalcolmNoLastModRate(T, c.unchangedTime(), c.changes); ok {
			est = ivl
		} else if c.changes == 0 {
			est = T
		} else {
			n := c.Intervals()
			est = T / (float64(n) * ImprovedRatio(n, c.changes))
		}
		interval = est
		if interval > cfg.NoLMSoftMaxInterval {
			interval = cfg.NoLMSoftMaxInterval
			if interval < est/cfg.NoLMMaxRatio {
				interval = est / cfg.NoLMMaxRatio
			}
		}
		if interval <= cfg.MinInterval {
			interval = cfg.MinInterval
		}
		return c.clamp(interval, cfg), true
	}
	return c.cgmInterval(cfg, kb), true
}

// cgmInterval is CGM Example 4's rule with the best estimate.
func (c *Change) cgmInterval(cfg *Config, kb *knownBest) float64 {
	var rate float64
	var ok bool
	if kb != nil {
		rate, ok = kb.rate, kb.ok
	} else {
		rate, ok = c.bestRate(cfg)
	}
	if ok && rate > 0 {
		return c.clamp(cfg.CGMRatio/rate, cfg)
	}
	return c.clamp(math.Max(cfg.InitialInterval, c.Span()), cfg)
}

func (c *Change) clamp(iv float64, cfg *Config) float64 {
	if !(iv >= cfg.MinInterval) { // also catches NaN
		return cfg.MinInterval
	}
	if iv > cfg.MaxInterval {
		return cfg.MaxInterval
	}
	return iv
}

// TTL returns the cache lifetime (seconds) for which a Poisson process of
// the given rate (per second) changes with probability pStale:
// 1 − e^{−λ·TTL} = pStale, TTL = −ln(1 − pStale)/λ. ok=false when rate ≤ 0
// or not finite (no change expected: no finite TTL) or pStale ∉ (0, 1).
func TTL(rate, pStale float64) (seconds float64, ok bool) {
	if !posFinite(rate) || !(pStale > 0 && pStale < 1) {
		return 0, false
	}
	return -math.Log1p(-pStale) / rate, true
}

// Allocate writes into out[i] the revisit frequency of object i for a total
// budget (visits per unit time summing to budget), with f_i ∝ √λ_i (CGM
// §6.4: the policy that gave the best freshness in their experiment).
// Rates that are negative or not finite count as 0; if every rate is 0 the
// budget is split evenly. out must be at least as long as rates; only
// out[:len(rates)] is written. It does not allocate.
func Allocate(rates []float64, budget float64, out []float64) {
	if len(rates) == 0 {
		return
	}
	out = out[:len(rates)]
	sum := 0.0
	for i, r := range rates {
		s := 0.0
		if posFinite(r) {
			s = math.Sqrt(r)
		}
		out[i] = s
		sum += s
	}
	if sum == 0 {
		for i := range out {
			out[i] = budget / float64(len(out))
		}
		return
	}
	for i := range out {
		out[i] = budget * out[i] / sum
	}
}
