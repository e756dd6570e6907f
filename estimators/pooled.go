package estimators

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// Pooled (empirical-Bayes) change rates: beyond the papers (issue 16).
//
// Objects of one site share their change behaviour. Each object's data is
// summarised by its evidence, an effective Poisson count x and exposure e
// whose likelihood λ^x·e^{−λe} matches the object's own likelihood at its
// maximum (value and curvature):
//
//   - with Last-Modified (CGM §5, Fig. 10) the likelihood is exactly
//     λ^X·e^{−λT}: x = X, e = T;
//   - otherwise the existence-of-change likelihood of CGM App. C,
//     Π_i (1 − e^{−λ t_ci})·e^{−λU} (regular visits are the special case
//     t_ci = 1/f): at its root λ̂ of eq. 2 with observed information I,
//     x = λ̂²·I and e = λ̂·I; with no change x = 0 and e = U exactly.
//
// A site's rates are modelled as λ ~ Gamma(α, β) (shape α, rate β), fitted
// by moments from the site's objects (PoolStats, O(1) state): with
// x_i | λ_i ~ Poisson(λ_i e_i), E[x_i] = μe_i and Var[x_i] = μe_i + σ²e_i², so
//
//	μ̂ = Σx_i / Σe_i,   σ̂² = (Σ x_i²/e_i − 2μ̂Σx_i + μ̂²Σe_i − (N−1)μ̂) / Σe_i,
//	α = μ̂²/σ̂², β = μ̂/σ̂²
//
// (the exposure-weighted moment estimator of Clayton & Kaldor, Biometrics
// 1987). An object's posterior is then Gamma(α + x, β + e) (conjugate): the
// estimate is its median, which minimises the expected |log(λ̂/λ)|, and the
// interval its equal-tailed Config.Level quantiles.

// KeyPooled is the estimate key of the pooled estimator.
const KeyPooled = "pooled"

// PooledMaxChanges: objects with fewer detected changes than this publish
// the pooled estimate as their best one when their site has a prior
// (cmd/eval measures the gain there; with more changes the object's own
// likelihood dominates the prior).
const PooledMaxChanges = 5

// MinPoolObjects is the least (weighted) number of objects for a prior.
const MinPoolObjects = 10

// maxShape bounds the fitted prior's shape: a site whose objects look
// identical still gets a prior with a coefficient of variation of 10 %.
const maxShape = 100

// Evidence returns the object's effective Poisson count x and exposure e
// (seconds); ok is false when the object has no usable data.
func (c *Change) Evidence(cfg *Config) (x, e float64, ok bool) {
	if c.lmN >= int64(cfg.MinIntervals) && c.hasLastMod(cfg) && c.lmT > 0 {
		return float64(c.lmX), seconds(c.lmT), true
	}
	if _, _, ok := c.visitBase(); !ok {
		return 0, 0, false
	}
	u := c.unchangedTime()
	if c.changes == 0 {
		return 0, u, u > 0
	}
	var ts, ws [NumBuckets]float64
	k := c.changedBuckets(&ts, &ws)
	l, info, ok := solveIrregular(ts[:k], ws[:k], u)
	if ok && l > 0 && info > 0 && !math.IsInf(l, 0) {
		return l * l * info, l * info, true
	}
	// Every interval changed (the MLE is infinite): CGM's improved
	// estimate with the detected changes as the count.
	if im, ok := c.improvedEst(cfg, false); ok && im.Rate > 0 {
		return float64(c.changes), float64(c.changes) / im.Rate, true
	}
	return 0, 0, false
}

// PoolStats holds the sufficient statistics of a site's prior: the
// (weighted) number of objects N, Σx, Σe and Σx²/e over their evidence.
// The zero value is empty. Add and Decay keep it O(1).
type PoolStats struct {
	N, X, E, X2E float64
}

// Add adds one object's evidence with weight w (1 for a plain sum).
func (p *PoolStats) Add(x, e, w float64) {
	if !(e > 0) || !(x >= 0) || math.IsInf(x, 0) || math.IsInf(e, 0) {
		return
	}
	p.N += w
	p.X += w * x
	p.E += w * e
	p.X2E += w * x * x / e
}

// Decay multiplies every sum by f ∈ (0, 1]: an exponentially weighted sum
// that follows the site's recent objects.
func (p *PoolStats) Decay(f float64) {
	p.N, p.X, p.E, p.X2E = p.N*f, p.X*f, p.E*f, p.X2E*f
}

// GammaPrior is a Gamma(Shape, Rate) prior for λ (Rate in seconds).
type GammaPrior struct {
	Shape, Rate float64
}

// Prior fits the gamma prior by the moments above; ok is false with fewer
// than MinPoolObjects objects or no change at all.
func (p PoolStats) Prior() (GammaPrior, bool) {
	if p.N < MinPoolObjects || !(p.X > 0) || !(p.E > 0) {
		return GammaPrior{}, false
	}
	mu := p.X / p.E
	s2 := (p.X2E - 2*mu*p.X + mu*mu*p.E - (p.N-1)*mu) / p.E
	if floor := mu * mu / maxShape; !(s2 > floor) {
		s2 = floor
	}
	g := GammaPrior{Shape: mu * mu / s2, Rate: mu / s2}
	return g, g.Shape > 0 && g.Rate > 0 && !math.IsInf(g.Shape, 0) && !math.IsInf(g.Rate, 0)
}

// Pooled returns the posterior median of λ under the prior and the evidence
// (x, e), with the equal-tailed Config.Level credible interval.
func Pooled(prior GammaPrior, x, e float64, cfg *Config) (Estimate, bool) {
	a, b := prior.Shape+x, prior.Rate+e
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return Estimate{}, false
	}
	pLo, pHi := cfg.tails()
	est := Estimate{Key: KeyPooled, Rate: mathext.GammaIncRegInv(a, 0.5) / b,
		Lo: mathext.GammaIncRegInv(a, pLo) / b, Hi: mathext.GammaIncRegInv(a, pHi) / b, HasCI: true}
	return sane(est, true)
}
