package estimators

import "math"

// Tempered posteriors: the predictive of a rate that drifts (issue 33).
//
// The pooled estimate (pooled.go P1) is the posterior of a stationary
// rate: the object's evidence, X changes over an exposure E, weighs fully
// against its population's prior Gamma(α₀, β₀). When rates drift, old
// evidence says less about the next period than a stationary model
// claims: a page quiet last year is the page that changes next year more
// often than its stationary posterior allows. Counting the evidence ω
// times (0 ≤ ω ≤ 1), the power posterior prior·L^ω of a Poisson
// likelihood L = λ^X e^{−λE} stays a Gamma,
//
//	λ ~ Gamma(α₀ + ωX, β₀ + ωE)
//	  = ω·(α₀ + X, β₀ + E) + (1 − ω)·(α₀, β₀)  (in its parameters),     (T1)
//
// Kulhavý & Zarrop's stabilised forgetting of the whole posterior toward
// the prior: ω = 1 is the stationary posterior, ω = 0 the prior alone
// (every page alike, uniform visits). It needs nothing per object beyond
// the O(1) evidence the pooled estimate already uses.
//
// The predictive of one visit. A page visited d after its previous visit
// is unchanged with probability P(no event in d | λ) = e^{−λd}; under
// (T1)'s Gamma(a, b) (a shape, b rate),
//
//	P(unchanged over d) = ∫ e^{−λd} Gamma(λ; a, b) dλ = (b/(b + d))^a
//	                    = (1 + d/b)^{−a},                               (T2)
//
// and P(changed over d) = 1 − (1 + d/b)^{−a}. Its log is computed as
// −a·log1p(d/b) and log(−expm1(·)), exact for small d/b.
//
// Choosing ω (prequential). Every visit of every page of a population is
// scored, before its outcome enters the page's evidence, under each ω of
// a fixed grid (TemperGrid): the sum over visits of log (T2) at
// Gamma(α₀ + ωX, β₀ + ωE) is the log of the one-step-ahead predictive
// likelihood of the visits' outcomes (Dawid's prequential principle),
//
//	S(ω) = Σ_visits log P_ω(outcome | evidence before the visit),     (T3)
//
// and the plan takes ω̂ = argmax S(ω) over the grid (TemperChoose). S is
// the log marginal likelihood of the sequence under ω (the chain rule:
// a product of one-step predictives), so ω̂ is the maximum-likelihood
// (type-II) choice; with no visit scored every S is 0. Ties (and the
// no-data case) go to the larger ω: tempering is a departure from the
// plain Bayes posterior (ω = 1) that the visits must earn, and among
// values the data cannot tell apart the one closest to the stationary
// posterior is kept. The grid is fixed, not fitted: it spans [0, 1] on a
// roughly geometric scale toward 0 (a page's evidence counted 1/50 to
// fully), so that the sums stay one float per grid point, O(1) per
// population, and the choice is a property of the data alone.

// TemperGrid is the grid of ω of (T3), ascending; TemperGrid[len−1] = 1.
var TemperGrid = [...]float64{0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1}

// TemperPoints is the number of points of TemperGrid.
const TemperPoints = len(TemperGrid)

// Tempered is (T1): the Gamma posterior of the object's rate with its
// evidence ev counted ω times under prior. ω is clamped to [0, 1]; an
// evidence with a negative or non-finite part counts as none.
func Tempered(prior GammaPrior, ev Evidence, omega float64) GammaPrior {
	w := math.Min(math.Max(omega, 0), 1)
	if !(ev.X >= 0) || !(ev.E >= 0) || math.IsInf(ev.X, 0) || math.IsInf(ev.E, 0) {
		return prior
	}
	return GammaPrior{Shape: prior.Shape + w*ev.X, Rate: prior.Rate + w*ev.E}
}

// Mean is the posterior mean a/b (per second).
func (g GammaPrior) Mean() float64 { return g.Shape / g.Rate }

// LogPredictive is the log of (T2): the probability, under λ ~ Gamma(a,
// b), that a visit d seconds after the previous one sees a change
// (changed) or none. d ≤ 0 is no interval: 0 (probability 1 of no
// change). A changed outcome with a vanishing probability is −Inf.
func LogPredictive(g GammaPrior, d float64, changed bool) float64 {
	if !(d > 0) || !(g.Shape > 0) || !(g.Rate > 0) {
		return 0
	}
	lq := -g.Shape * math.Log1p(d/g.Rate)
	if changed {
		return math.Log(-math.Expm1(lq))
	}
	return lq
}

// TemperScore adds one visit's scores to s, (T3): the visit came d
// seconds after the page's previous one and changed or not, ev being the
// page's evidence before the visit and prior its population's prior. A
// score of −Inf (a change where a grid point's predictive gives none, as
// ω > 0 with an infinite exposure) is kept at the most negative finite
// float's share so that the sums stay comparable and finite.
func TemperScore(s *[TemperPoints]float64, prior GammaPrior, ev Evidence, d float64, changed bool) {
	for k, w := range TemperGrid {
		l := LogPredictive(Tempered(prior, ev, w), d, changed)
		if math.IsInf(l, -1) || math.IsNaN(l) {
			l = minLogPredictive
		}
		s[k] += l
	}
}

// minLogPredictive bounds one visit's log score from below: e^{−745} is
// below the smallest float64 (a probability no prior on a 64-bit machine
// assigns), so a sum of many such scores still orders the grid.
const minLogPredictive = -745

// TemperChoose is ω̂ of (T3): the grid's ω of the largest summed score,
// ties toward the larger ω (with no visit scored, ω = 1: the stationary
// posterior). It also returns the index into TemperGrid.
func TemperChoose(s *[TemperPoints]float64) (omega float64, k int) {
	k = TemperPoints - 1
	for j := TemperPoints - 2; j >= 0; j-- {
		if s[j] > s[k] {
			k = j
		}
	}
	return TemperGrid[k], k
}
