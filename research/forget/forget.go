// Package forget is research: the aged (dynamic Poisson–gamma) posterior
// the closed-loop evaluation plans on. The product does not use it yet.
package forget

import (
	"errors"
	"fmt"
	"math"

	"github.com/changerate/changerate/plan"
)

// Evidence that ages (issue 33): a dynamic Poisson–gamma model.
//
// A page's rate is not fixed: on php/doc-en two thirds of a year's changes
// fall on pages that did not change the year before. Smith & Miller
// (1986, "A non-Gaussian state space model and application to prediction
// of records", JRSS B 48) keep a Gamma(a, b) posterior of a Poisson rate
// that drifts between observations by discounting it: over a time Δt the
// posterior keeps its mean and loses precision, (a, b) ← δ^Δt·(a, b)
// (West & Harrison, Bayesian Forecasting, §10.8, discount factors). Left
// alone, that discount runs to the improper Gamma(0, 0); anchored at the
// population's prior Gamma(α₀, β₀) — the stabilised forgetting of Kulhavý
// & Zarrop (1993, "On a general concept of forgetting", Int. J. Control
// 58) — only the page's own evidence is discounted:
//
//	(a − α₀, b − β₀) ← e^{−κΔt}·(a − α₀, b − β₀),   κ = −ln δ,      (F1)
//
// so that a page quiet for long drifts back to the population's prior and
// the posterior of a page with a burst of changes widens as the burst
// ages. With the evidence in the excess (x, e) = (a − α₀, b − β₀), a
// visit interval of length d that ends at t adds its own evidence, one
// change when its digest changed (the conjugate reading of 1 − e^{−λd},
// exact as λd → 0) and the exposure d, aged from its midpoint:
//
//	x ← e^{−κd}·x + e^{−κd/2}·1{changed},   e ← e^{−κd}·e + e^{−κd/2}·d.  (F2)
//
// At κ = 0 this is the stationary posterior Gamma(α₀ + X, β₀ + E); at
// κ = ∞ every page is the prior, and the freshness-optimal allocation of
// identical posteriors is uniform. κ is not chosen but estimated: the
// one-step predictive probability of a visit's outcome under the
// posterior before it is, by the gamma's Laplace transform,
//
//	P(unchanged over d) = E[e^{−λd}] = (1 + d/b)^{−a},              (F3)
//
// and the population's log predictive likelihood Σ log P over the visits
// seen so far (Bank) is maximised over a grid of κ. The freshness policy then plans on
// each page's aged posterior (ExpectedFreshness integrates over it), which
// hedges an uncertain page's visits toward uniform by exactly as much as
// the population's history says its past predicts its future.

// ErrBank is wrapped by every error of NewBank.
var ErrBank = errors.New("forget: invalid bank")

// Aged is one page's discounted evidence (F2): X changes over exposure E
// (seconds), as of time T (seconds).
type Aged struct {
	X, E, T float64
}

// discount is e^{−κt}: 1 at κ = 0, 0 at κ = +Inf.
func discount(kappa, t float64) float64 {
	if math.IsInf(kappa, 1) {
		return 0
	}
	return math.Exp(-kappa * t)
}

// Observe adds a visit interval of length d ending at t whose digest
// changed or not, at forgetting rate kappa (per second): (F1) from a.T to
// the interval's start when there is a gap, then (F2).
func (a *Aged) Observe(t, d float64, changed bool, kappa float64) {
	if gap := t - d - a.T; gap > 0 {
		f := discount(kappa, gap)
		a.X, a.E = a.X*f, a.E*f
	}
	f, g := discount(kappa, d), discount(kappa, d/2)
	a.X, a.E = a.X*f, a.E*f+g*d
	if changed {
		a.X += g
	}
	a.T = t
}

// Posterior is the page's Gamma posterior of λ at time now (≥ a.T) under
// the prior Gamma(shape0, rate0): its mean and shape (plan.Page's Rate and
// Shape), by (F1).
func (a Aged) Posterior(shape0, rate0, now, kappa float64) (mean, shape float64) {
	f := discount(kappa, now-a.T)
	s, r := shape0+f*a.X, rate0+f*a.E
	return s / r, s
}

// LogPredictive is log P(outcome over d) under λ ~ Gamma(shape, rate)
// (F3): −a·ln(1 + d/b) unchanged, ln(1 − (1 + d/b)^{−a}) changed.
func LogPredictive(shape, rate, d float64, changed bool) float64 {
	lq := -shape * math.Log1p(d/rate)
	if changed {
		return math.Log(-math.Expm1(lq))
	}
	return lq
}

// Bank estimates the forgetting rate κ by the population's one-step
// predictive likelihood (F3): over a grid of κ (per second; 0 and +Inf
// allowed) it keeps every page's aged evidence and the sum of log P of
// every outcome under the posterior before it.
type Bank struct {
	Kappas []float64
	aged   [][]Aged // by κ, then page
	// LogLik[k] is Σ log P over the observations scored, at Kappas[k].
	LogLik []float64
	// N counts the observations scored.
	N int
}

// NewBank returns a bank over n pages.
func NewBank(n int, kappas []float64) (*Bank, error) {
	if len(kappas) == 0 {
		return nil, fmt.Errorf("%w: a forgetting bank needs a grid of rates", ErrBank)
	}
	for _, k := range kappas {
		if !(k >= 0) {
			return nil, fmt.Errorf("%w: forgetting rate %v must be >= 0", ErrBank, k)
		}
	}
	b := &Bank{Kappas: kappas, aged: make([][]Aged, len(kappas)), LogLik: make([]float64, len(kappas))}
	for k := range b.aged {
		b.aged[k] = make([]Aged, n)
	}
	return b, nil
}

// Observe scores page i's visit interval (length d > 0, ending at t) under
// every κ's posterior before it when the population's prior
// Gamma(shape0, rate0) is known (both > 0; Smith & Miller's one-step prior:
// the posterior discounted over the step), then adds it to the page's
// evidence.
func (b *Bank) Observe(i int, t, d float64, changed bool, shape0, rate0 float64) {
	if !(d > 0) {
		return
	}
	score := shape0 > 0 && rate0 > 0
	for k, kappa := range b.Kappas {
		ag := &b.aged[k][i]
		if score {
			m, sh := ag.Posterior(shape0, rate0, math.Max(t, ag.T), kappa)
			b.LogLik[k] += LogPredictive(sh, sh/m, d, changed)
		}
		ag.Observe(t, d, changed, kappa)
	}
	if score {
		b.N++
	}
}

// Best returns the index in Kappas of the largest predictive likelihood
// (the first of equals; 0 before any observation is scored).
func (b *Bank) Best() int {
	best := 0
	for j, v := range b.LogLik {
		if v > b.LogLik[best] {
			best = j
		}
	}
	return best
}

// Pages returns every page's aged posterior at now at the best κ under
// the prior Gamma(shape0, rate0), as planning pages of weight 1.
func (b *Bank) Pages(now, shape0, rate0 float64) []plan.Page {
	k := b.Best()
	out := make([]plan.Page, len(b.aged[k]))
	for i, ag := range b.aged[k] {
		m, sh := ag.Posterior(shape0, rate0, math.Max(now, ag.T), b.Kappas[k])
		out[i] = plan.Page{Rate: m, Shape: sh, Weight: 1}
	}
	return out
}
