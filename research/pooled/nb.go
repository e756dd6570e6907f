package pooled

import (
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
)

// Over-dispersed pooled estimates: bursty change histories.
//
// The gamma prior of estimators/pooled.go assumes that, given its rate λ, an object's
// count in the observed window is Poisson. Real histories change in bursts:
// the window's count varies more than Poisson around the long-run rate. A
// gamma-Poisson (negative-binomial) layer models it: in each half h of the
// window (exposure e_h) the count is Poisson(λ·u_h·e_h) with a burst
// multiplier u_h ~ Gamma(k, k) (mean 1, variance 1/k), independent between
// halves and objects. With λ ~ Gamma(α, β) (mean μ, variance σ²) the
// moments of the halves' counts identify the three parameters:
//
//	E[x_h] = μe_h,
//	Cov(x_a, x_b) = σ²·e_a·e_b                       (the rates' spread),
//	Var(x_h) = μe_h + σ²e_h² + (σ² + μ²)·e_h²/k      (+ the bursts),
//
// so, with every sum over the site's objects,
//
//	μ̂ = Σ(x_a+x_b) / Σ(e_a+e_b),
//	σ̂² = Σ(x_a − μ̂e_a)(x_b − μ̂e_b) / Σe_a·e_b,
//	1/k̂ = [Σ_h Σ((x_h − μ̂e_h)² − μ̂e_h) − σ̂²Σ_h Σe_h²] / ((σ̂² + μ̂²)·Σ_h Σe_h²),
//
// each clipped at its floor (σ̂² at μ̂²/maxShape as in estimators.PoolStats.Prior; 1/k̂
// at 0, the Poisson case). Bursts longer than half the window look like
// rate spread and are absorbed into σ̂² (the prior is wider, not the
// likelihood). The object's likelihood of its whole-window count x given λ
// is then that of a sum of the two halves; it is approximated by one
// negative binomial with the same variance, dispersion k_w = 2k for equal
// halves (the two "halves" may also be two adjacent windows of the
// window's length, k_w = k):
//
//	L(λ) ∝ (λe)^x / (k_w + λe)^{x + k_w},
//
// and the posterior Gamma(α, β)·L is integrated on a log grid (no closed
// form). As k → ∞ it is the conjugate Gamma(α + x, β + e) of Pooled.

// DispersionStats holds the O(1) sums of a site's objects' half-window
// evidence. The zero value is empty.
type DispersionStats struct {
	N                                float64
	Xa, Xb, Ea, Eb                   float64
	XaXb, XaEb, XbEa, EaEb           float64
	Xa2, Xb2, Ea2, Eb2, XaEa2, XbEb2 float64 // Σx², Σe², Σx·e per half
}

// Add adds one object's evidence in the first (a) and second (b) half of
// its window. Floored evidence (every interval changed) is skipped.
func (d *DispersionStats) Add(a, b estimators.Evidence) {
	if a.Floor > 0 || b.Floor > 0 || !(a.E > 0) || !(b.E > 0) || !(a.X >= 0) || !(b.X >= 0) ||
		math.IsInf(a.X+b.X+a.E+b.E, 0) {
		return
	}
	d.N++
	d.Xa += a.X
	d.Xb += b.X
	d.Ea += a.E
	d.Eb += b.E
	d.XaXb += a.X * b.X
	d.XaEb += a.X * b.E
	d.XbEa += b.X * a.E
	d.EaEb += a.E * b.E
	d.Xa2 += a.X * a.X
	d.Xb2 += b.X * b.X
	d.Ea2 += a.E * a.E
	d.Eb2 += b.E * b.E
	d.XaEa2 += a.X * a.E
	d.XbEb2 += b.X * b.E
}

// NBPrior is a Gamma(Shape, Rate) prior for λ with the bursts' dispersion
// K (per half window; +Inf: Poisson).
type NBPrior struct {
	estimators.GammaPrior
	K float64
}

// Prior fits the prior and the dispersion by the moments above; ok is
// false with fewer than MinPoolObjects objects or no change.
func (d DispersionStats) Prior() (NBPrior, bool) {
	mu, s2, invK, ok := d.moments()
	if !ok {
		return NBPrior{}, false
	}
	k := math.Inf(1)
	if invK > 0 {
		k = 1 / invK
	}
	p := NBPrior{estimators.GammaPrior{Shape: mu * mu / s2, Rate: mu / s2}, k}
	return p, p.Shape > 0 && p.Rate > 0 && !math.IsInf(p.Shape, 0) && !math.IsInf(p.Rate, 0) && k > 0
}

// InvK is the moment estimate 1/k̂ above before its clip at 0 (an unbiased
// summand of a pooled dispersion, BurstPool); ok as for Prior.
func (d DispersionStats) InvK() (float64, bool) {
	_, _, invK, ok := d.moments()
	return invK, ok && !math.IsNaN(invK) && !math.IsInf(invK, 0)
}

// moments are μ̂, σ̂² (clipped at its floor) and the unclipped 1/k̂.
func (d DispersionStats) moments() (mu, s2, invK float64, ok bool) {
	X, E := d.Xa+d.Xb, d.Ea+d.Eb
	if d.N < estimators.MinPoolObjects || !(X > 0) || !(E > 0) || !(d.EaEb > 0) {
		return 0, 0, 0, false
	}
	mu = X / E
	// Σ(x_a − μe_a)(x_b − μe_b)
	cov := d.XaXb - mu*(d.XaEb+d.XbEa) + mu*mu*d.EaEb
	s2 = cov / d.EaEb
	if floor := mu * mu / estimators.MaxShape; !(s2 > floor) {
		s2 = floor
	}
	// Σ_h Σ((x_h − μe_h)² − μe_h)
	e2 := d.Ea2 + d.Eb2
	ss := d.Xa2 + d.Xb2 - 2*mu*(d.XaEa2+d.XbEb2) + mu*mu*e2 - mu*E
	invK = (ss - s2*e2) / ((s2 + mu*mu) * e2)
	return mu, s2, invK, true
}

// NB returns the posterior mean of λ (P1) and its equal-tailed
// Config.Level interval under the prior and the object's whole-window
// evidence ev, when the window spans parts windows of the length K was
// fitted on (2 when K was fitted on its halves, 1 when on windows as long
// as it): k_w = K·parts. Floored evidence and an infinite K fall back to
// estimators.Pooled (the Poisson case).
func NB(prior NBPrior, ev estimators.Evidence, parts float64, cfg *estimators.Config) (estimators.Estimate, bool) {
	if ev.Floor > 0 || math.IsInf(prior.K, 1) || !(parts > 0) {
		return estimators.Pooled(prior.GammaPrior, ev, cfg)
	}
	a, b := prior.Shape, prior.Rate
	if !(a > 0) || !(b > 0) || !(ev.E > 0) || !(ev.X >= 0) {
		return estimators.Estimate{}, false
	}
	e, x := ev.E, ev.X
	kw := prior.K * parts
	// Grid: the Poisson posterior's range, widened to the prior's upper
	// 10⁻⁹ quantile (the negative binomial likelihood is flatter than the
	// Poisson one above its maximum).
	hiMin := mathext.GammaIncRegInv(a, 1-1e-9) / b * 10
	return estimators.PooledPosterior(prior.GammaPrior, ev, hiMin, func(l float64) float64 {
		// log prior density + log λ (the log grid's Jacobian) + log L
		return a*math.Log(l) - b*l + x*math.Log(l*e) - (x+kw)*math.Log(kw+l*e)
	}, cfg)
}
