package pooled

import (
	"math"

	"github.com/changerate/changerate/estimators"
)

// Site priors over time: a site's level shifts from period to period.
//
// estimators.PoolStats.Prior fits a site's Gamma(α, β) prior on one period (the
// observed window). When the site's activity varies between periods (a
// directory edited in campaigns), the period's level is not the level of
// the periods an estimate is judged on. Three extensions, each O(1) per
// site:
//
//  1. a longer history (PoolStats.Decay): the prior is fitted on the
//     period sums weighted w^h for the period h periods back (w = 0: the
//     observed period alone, w = 1: every period alike);
//
//  2. a level that drifts: the site's log level ℓ_h = log(X_h/E_h) follows
//     a random walk with increments of variance τ² per period (LevelDrift
//     estimates τ² from the site's own consecutive periods, eq. H1), so the
//     rate of the next period is λ = θ·e^η, θ ~ Gamma(α, β) the fitted
//     prior and η ~ N(0, τ²) (median-preserving). Its moments
//
//     E[λ] = μ·e^{τ²/2},   E[λ²] = (σ² + μ²)·e^{2τ²}              (H2)
//
//     give the inflated gamma prior (WithLevelVar): a site whose
//     level wanders gets a wider prior, so an object's own evidence counts
//     more;
//
//  3. three levels: a site's long-run log level L_s ~ N(ℓ_g, ω²) around the
//     level ℓ_g of all sites, observed through the period average ℓ_s with
//     variance v_s (Poisson noise plus the periods' deviations). Its
//     posterior mean
//
//     ℓ*_s = (ℓ_s/v_s + ℓ_g/ω²) / (1/v_s + 1/ω²)                      (H3)
//
//     moves the prior's mean (WithMean) towards all sites' level
//     when the site's own is uncertain;
//
//  4. lasting rates and bursts: a page's rate in period h is λ_h = θ·u_h,
//     its lasting rate θ (mean μ, variance σ_θ²) times the period's burst
//     multiplier u_h ~ Gamma(k, k) (mean 1, variance 1/k; the layer of
//     nb.go with periods for halves). The whole periods' moments
//     (PoolStats over page-periods, the low-noise estimate of `pooled`)
//     measure the variance of λ_h,
//
//     σ_w² = σ_θ²·(1 + 1/k) + μ²/k,                                  (H4)
//
//     so the lasting rates' prior keeps the whole periods' mean and has
//     σ_θ² = (σ_w² − μ²/k)/(1 + 1/k) (Lasting). Only the
//     cross-covariance of consecutive periods of the same pages separates
//     θ's spread from the bursts' (DispersionStats), a noisy moment for
//     one site: H4 with one site's own 1/k̂ returns that cross-covariance.
//     The sites of one calendar share their burst process, so 1/k is
//     pooled over them (BurstPool), the sites' unclipped moment estimates
//     weighted by their pages,
//
//     1/k̄ = max(0, Σ_s N_s·(1/k̂_s) / Σ_s N_s);                      (H5)
//
//     without bursts (1/k̄ = 0) the lasting prior is the whole periods'.

// LevelDrift holds the O(1) sums of a site's period-to-period changes of
// log level. The zero value is empty; add periods newest first or oldest
// first, consistently.
type LevelDrift struct {
	// N is the number of consecutive pairs, SS Σ(ℓ_h − ℓ_{h+1})² and Noise
	// Σ(1/X_h + 1/X_{h+1}), their Poisson part.
	N, SS, Noise float64
	last, lastX  float64
	has          bool
}

// AddPeriod adds one period's site totals (X changes over exposure E). A
// period without a change breaks the chain (its log level is undefined).
func (d *LevelDrift) AddPeriod(p estimators.PoolStats) {
	if !(p.X > 0) || !(p.E > 0) {
		d.has = false
		return
	}
	l := math.Log(p.X / p.E)
	if d.has {
		diff := l - d.last
		d.N++
		d.SS += diff * diff
		d.Noise += 1/p.X + 1/d.lastX
	}
	d.last, d.lastX, d.has = l, p.X, true
}

// Var is τ², the variance of one period's log-level increment net of the
// Poisson noise of the two levels (eq. H1, clipped at 0):
//
//	τ̂² = (Σ(ℓ_h − ℓ_{h+1})² − Σ(1/X_h + 1/X_{h+1})) / N            (H1)
//
// ok is false without a pair.
func (d LevelDrift) Var() (float64, bool) {
	if d.N < 1 {
		return 0, false
	}
	return math.Max(0, (d.SS-d.Noise)/d.N), true
}

// Mean is the prior's mean α/β.
func Mean(g estimators.GammaPrior) float64 { return g.Shape / g.Rate }

// WithLevelVar is the gamma prior matched to the moments H2 of λ = θ·e^η,
// θ ~ g, η ~ N(0, tau2).
func WithLevelVar(g estimators.GammaPrior, tau2 float64) estimators.GammaPrior {
	if !(tau2 > 0) {
		return g
	}
	mu := Mean(g)
	m2 := (g.Shape + 1) * g.Shape / (g.Rate * g.Rate) // σ² + μ²
	mean := mu * math.Exp(tau2/2)
	v := m2*math.Exp(2*tau2) - mean*mean
	return estimators.GammaPrior{Shape: mean * mean / v, Rate: mean / v}
}

// WithMean is the prior with the same shape and the mean m.
func WithMean(g estimators.GammaPrior, m float64) estimators.GammaPrior {
	if !(m > 0) || math.IsInf(m, 0) {
		return g
	}
	return estimators.GammaPrior{Shape: g.Shape, Rate: g.Shape / m}
}

// ShrinkLevel is eq. H3: the log level l with variance v shrunk towards the
// level lg of all sites, whose sites' long-run levels spread with variance
// omega2 (omega2 = 0: lg itself; v = 0: l itself).
func ShrinkLevel(l, v, lg, omega2 float64) float64 {
	switch {
	case !(v > 0):
		return l
	case !(omega2 > 0):
		return lg
	}
	return (l/v + lg/omega2) / (1/v + 1/omega2)
}

// Lasting is the prior of lasting rates θ from the gamma prior g of the
// periods' rates λ = θ·u, u ~ Gamma(k, k) (eq. H4): the same mean, the
// variance (σ_w² − μ²/k)/(1 + 1/k) floored at μ²/estimators.MaxShape as in
// estimators.PoolStats.Prior. k = +Inf (no bursts) returns g.
func Lasting(g estimators.GammaPrior, k float64) estimators.GammaPrior {
	if math.IsInf(k, 1) || !(k > 0) {
		return g
	}
	mu := Mean(g)
	s2 := (g.Shape/(g.Rate*g.Rate) - mu*mu/k) / (1 + 1/k)
	if floor := mu * mu / estimators.MaxShape; !(s2 > floor) {
		s2 = floor
	}
	return estimators.GammaPrior{Shape: mu * mu / s2, Rate: mu / s2}
}

// BurstPool holds the O(1) sums of eq. H5 over the sites of one calendar.
// The zero value is empty.
type BurstPool struct {
	// N is Σ_s N_s, S Σ_s N_s·(1/k̂_s).
	N, S float64
}

// Add adds one site's consecutive-period moments (skipped when they give
// no estimate).
func (b *BurstPool) Add(d DispersionStats) {
	if v, ok := d.InvK(); ok {
		b.N += d.N
		b.S += d.N * v
	}
}

// K is the pooled dispersion k̄ of eq. H5 (+Inf: no bursts, or no site).
func (b BurstPool) K() float64 {
	if !(b.N > 0) || !(b.S > 0) {
		return math.Inf(1)
	}
	return b.N / b.S
}
