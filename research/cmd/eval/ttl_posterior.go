package main

import (
	"math"

	"github.com/changerate/changerate/estimators"
)

// The posterior rule (issue 33): at a fill the cache knows the copy's age
// (now − Last-Modified) and what its own fetches say of the page's rate.
// With the page's rate λ ~ Gamma(α₀, β₀) a priori (the site's prior,
// estimators.PoolStats.Prior over the pages' evidence, the aggregator's
// site prior) and the page's evidence (X changes over exposure E,
// estimators.Change.Evidence) plus the Last-Modified's word that nothing
// changed over the age a₀ the page had at the cache's first fetch (which
// the estimator's exposure, starting at that fetch, leaves out), the
// posterior is Gamma(k, R) with k = α₀ + X, R = β₀ + E + a₀, and a copy
// survives a lifetime L with the posterior-predictive probability
//
//	E[e^{−λL}] = (1 + L/R)^{−k},
//
// so the TTL with staleness probability pStale is
//
//	L = R·((1 − pStale)^{−1/k} − 1):
//
// long for a page quiet for years (R grows with its age), short for one
// seen to change often (k grows with its changes).

const postFamily = "ours, posterior: R((1 − pStale)^{−1/k} − 1)"

// postTTL is the lifetime above.
func postTTL(k, r, pStale float64) float64 {
	return r * math.Expm1(-math.Log1p(-pStale)/k)
}

// postFit is the site's prior, fitted at the scored year's start.
type postFit struct {
	prior estimators.GammaPrior
	ok    bool
}

// posteriorAt returns the page's posterior (k, R) at a fill: ok is false
// up to scoredFrom (the warm-up) or without a prior. It records the age at
// the page's first fill (one cache per page and method, each run in one
// goroutine).
func posteriorAt(scoredFrom float64, fit *postFit) func(t, lm float64, c *estimators.Change, cfg *estimators.Config) (k, r float64, ok bool) {
	firstAge := map[*estimators.Change]float64{}
	return func(t, lm float64, c *estimators.Change, cfg *estimators.Config) (float64, float64, bool) {
		if _, ok := firstAge[c]; !ok {
			firstAge[c] = math.Max(t-lm, 0)
		}
		if t <= scoredFrom || !fit.ok {
			return 0, 0, false
		}
		k, r := fit.prior.Shape, fit.prior.Rate+firstAge[c]
		if ev, ok := c.Evidence(cfg); ok {
			k, r = k+ev.X, r+ev.E
		}
		return k, r, true
	}
}

// ourPostTTL is the posterior rule from scoredFrom on with the site's
// prior, ourTTL before it (the warm-up) or without a prior.
func ourPostTTL(pStale, scoredFrom float64, fit *postFit) func(t, lm float64, c *estimators.Change, cfg *estimators.Config) float64 {
	poisson := ourTTL(pStale)
	post := posteriorAt(scoredFrom, fit)
	return func(t, lm float64, c *estimators.Change, cfg *estimators.Config) float64 {
		k, r, ok := post(t, lm, c, cfg)
		if !ok {
			return poisson(t, lm, c, cfg)
		}
		return postTTL(k, r, pStale)
	}
}

// postMethods are the posterior rule's methods, one per pStale, with the
// priors they use (filled by ttlRun).
func postMethods(scoredFrom float64) ([]ttlMethod, []*postFit) {
	var ms []ttlMethod
	var fits []*postFit
	for _, p := range agePStales {
		f := &postFit{}
		ms = append(ms, ttlMethod{postFamily, p, ourPostTTL(p, scoredFrom, f)})
		fits = append(fits, f)
	}
	return ms, fits
}

// The load-optimal rule: a threshold on the staleness probability is not
// what minimises stale hits at equal origin load. With requests at rate r
// and a copy changing by time s after its fill with probability F(s), a
// lifetime L serves per fill r∫₀ᴸ F(s) ds stale hits over a cycle of
// L + 1/r (the lifetime, then the wait for the next request, which goes to
// the origin). Minimising the stale hits per unit time subject to the
// origin requests per unit time (Lagrangian, as Cho & Garcia-Molina's
// allocation) gives, with the multiplier θ (seconds),
//
//	G(L) = ∫₀ᴸ s dF(s) + F(L)/r = θ,
//
// increasing in L (G′ = (L + 1/r) F′(L)). For rL ≪ 1 it is the threshold
// F(L) = rθ (pStale = rθ); for rL ≫ 1 and a Poisson rate, λL²/2 = θ:
// L ∝ 1/√λ, as √λ revisits in a crawl — a fast-changing page gets a
// lifetime longer than the threshold's, a slow one a shorter one.
// Under the posterior predictive F(s) = 1 − (1 + s/R)^{−k},
//
//	∫₀ᴸ s dF = L·F(L) − ∫₀ᴸ F = ∫₀ᴸ (1 + s/R)^{−k} ds − L(1 + L/R)^{−k},
//	∫₀ᴸ (1 + s/R)^{−k} ds = R((1 + L/R)^{1−k} − 1)/(1 − k)  (R ln(1 + L/R) at k = 1).

const optFamily = "ours, load-optimal: posterior, ∫₀ᴸ s dF + F(L)/r = θ"

// lomaxG is G(L) for F(s) = 1 − (1 + s/R)^{−k}.
func lomaxG(l, k, r, perSec float64) float64 {
	u := math.Log1p(l / r)
	var integ float64
	if math.Abs(1-k) < 1e-9 {
		integ = r * u
	} else {
		integ = r * math.Expm1((1-k)*u) / (1 - k)
	}
	surv := math.Exp(-k * u)
	return integ - l*surv + (1-surv)/perSec
}

// optTTL solves G(L) = θ by bisection over ln L in [1 s, 100 years];
// the bounds when θ is outside G's range there.
func optTTL(k, r, perSec, theta float64) float64 {
	lo, hi := 0.0, math.Log(100*365*86400.0)
	if lomaxG(1, k, r, perSec) >= theta {
		return 1
	}
	if lomaxG(math.Exp(hi), k, r, perSec) <= theta {
		return math.Exp(hi)
	}
	for hi-lo > 1e-6 {
		m := (lo + hi) / 2
		if lomaxG(math.Exp(m), k, r, perSec) < theta {
			lo = m
		} else {
			hi = m
		}
	}
	return math.Exp((lo + hi) / 2)
}

// optThetas are θ in days.
var optThetas = []float64{1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1}

// ourOptTTL is the load-optimal rule under the posterior from scoredFrom
// on, the Poisson TTL at pStale 0.01 before it (the warm-up) or without a
// prior.
func ourOptTTL(theta, perDay, scoredFrom float64, fit *postFit) func(t, lm float64, c *estimators.Change, cfg *estimators.Config) float64 {
	poisson := ourTTL(0.01)
	post := posteriorAt(scoredFrom, fit)
	return func(t, lm float64, c *estimators.Change, cfg *estimators.Config) float64 {
		k, r, ok := post(t, lm, c, cfg)
		if !ok {
			return poisson(t, lm, c, cfg)
		}
		return optTTL(k, r, perDay/loopDay, theta*loopDay)
	}
}

func optMethods(perDay, scoredFrom float64, fit *postFit) []ttlMethod {
	var ms []ttlMethod
	for _, th := range optThetas {
		ms = append(ms, ttlMethod{optFamily, th, ourOptTTL(th, perDay, scoredFrom, fit)})
	}
	return ms
}

// The load-optimal rule under the site's age model (estimators.BurstModel):
// F(s) = 1 − S(a + s)/S(a) for a copy fetched at age a; G's integral
// ∫₀ᴸ S(a + s)/S(a) ds by Simpson's rule (32 panels) over
// u = ln(1 + s/(β + a)).
const optAgeFamily = "ours, load-optimal: age model, ∫₀ᴸ s dF + F(L)/r = θ"

// optAgeInFamily is the load-optimal age rule with the age model fitted
// in sample, to the scored year's own intervals (the Poisson TTL's cache
// there): a diagnostic of how much of the gap to Squid is the change from
// the warm-up year to the scored one, not a rule a cache could run.
const optAgeInFamily = "diagnostic: load-optimal age model fitted on the scored year itself"

func burstG(m estimators.BurstModel, age, l, perSec float64) float64 {
	c := m.Scale + age
	if m.Shape == 0 {
		c = 1 / m.Base
	}
	surv := func(s float64) float64 { return 1 - m.StaleProb(age, s) }
	umax := math.Log1p(l / c)
	const n = 32
	h := umax / n
	integ := 0.0
	for i := 0; i <= n; i++ {
		u := float64(i) * h
		s := c * math.Expm1(u)
		w := 2.0
		if i == 0 || i == n {
			w = 1
		} else if i%2 == 1 {
			w = 4
		}
		integ += w * surv(s) * c * math.Exp(u)
	}
	integ *= h / 3
	sl := surv(l)
	return integ - l*sl + (1-sl)/perSec
}

func optAgeTTL(m estimators.BurstModel, age, perSec, theta float64) float64 {
	lo, hi := 0.0, math.Log(100*365*86400.0)
	if burstG(m, age, 1, perSec) >= theta {
		return 1
	}
	if burstG(m, age, math.Exp(hi), perSec) <= theta {
		return math.Exp(hi)
	}
	for hi-lo > 1e-3 {
		mid := (lo + hi) / 2
		if burstG(m, age, math.Exp(mid), perSec) < theta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}

func optAgeMethods(family string, perDay, scoredFrom float64, fit *ageFit) []ttlMethod {
	var ms []ttlMethod
	poisson := ourTTL(0.01)
	for _, th := range optThetas {
		th := th
		ms = append(ms, ttlMethod{family, th, func(t, lm float64, c *estimators.Change, cfg *estimators.Config) float64 {
			if t <= scoredFrom || !fit.ok {
				return poisson(t, lm, c, cfg)
			}
			return optAgeTTL(fit.m, math.Max(t-lm, 0), perDay/loopDay, th*loopDay)
		}})
	}
	return ms
}
