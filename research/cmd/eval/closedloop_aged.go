package main

import (
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
	"github.com/changerate/changerate/research/forget"
)

// The aged posterior (research/forget): the crawler keeps every page's
// discounted evidence (F2) over a grid of forgetting rates κ, scores each
// visit's outcome under each κ's posterior before it (F3), and plans on
// the posterior (F1) of the κ whose one-step predictive likelihood over
// the visits so far is the largest, under the population's prior: the
// moment fit of all pages' evidence (estimators.PoolStats, what the
// aggregator fits for a site), refreshed at every replan.

// agedHalfLives are the grid's half-lives ln 2/κ in days; κ = 0 (no
// forgetting: the stationary posterior) and κ = +Inf (the prior alone:
// uniform visits) are in the grid too.
var agedHalfLives = []float64{3, 7, 14, 30, 60, 120, 240, 365, 730, 1460}

// agedKappas is the grid of κ (per second).
func agedKappas() []float64 {
	out := []float64{0}
	for _, h := range agedHalfLives {
		out = append(out, math.Ln2/(h*loopDay))
	}
	return append(out, math.Inf(1))
}

// agedState is the crawler's aged evidence and the population's prior.
type agedState struct {
	bank      *forget.Bank
	prior     estimators.GammaPrior
	havePrior bool
}

func newAgedState(n int) *agedState {
	b, err := forget.NewBank(n, agedKappas())
	if err != nil {
		panic(err)
	}
	return &agedState{bank: b}
}

// refit fits the population's prior to every page's evidence.
func (a *agedState) refit(st *loopState) { a.prior, a.havePrior = st.populationPrior() }

// populationPrior is the gamma prior fitted by moments to every page's
// evidence (estimators.PoolStats).
func (st *loopState) populationPrior() (estimators.GammaPrior, bool) {
	var ps estimators.PoolStats
	for i := range st.est {
		if ev, ok := st.est[i].Evidence(st.cfg); ok {
			ps.Add(ev, 1)
		}
	}
	return ps.Prior()
}

// argmax is the index of xs's largest value (the first of equals).
func argmax(xs []float64) int {
	k := 0
	for j, v := range xs {
		if v > xs[k] {
			k = j
		}
	}
	return k
}

// observe adds page i's visit interval (last, t] before its estimator
// sees it.
func (a *agedState) observe(i int, last, t float64, changed bool) {
	var s, r float64
	if a.havePrior {
		s, r = a.prior.Shape, a.prior.Rate
	}
	a.bank.Observe(i, t, t-last, changed, s, r)
}

// pages is every page's aged posterior at now; without a prior yet, every
// page alike (uniform visits).
func (a *agedState) pages(now float64, n int) []plan.Page {
	if !a.havePrior {
		out := make([]plan.Page, n)
		for i := range out {
			out[i] = plan.Page{Rate: 1 / loopYear, Shape: 1, Weight: 1}
		}
		return out
	}
	return a.bank.Pages(now, a.prior.Shape, a.prior.Rate)
}

// halfLife is the fitted κ's half-life in days (0: κ = +Inf, +Inf: κ = 0).
func (a *agedState) halfLife() float64 {
	k := a.bank.Kappas[a.bank.Best()]
	if math.IsInf(k, 1) {
		return 0
	}
	return math.Ln2 / k / loopDay
}

// gain is the best κ's log predictive likelihood over κ = +Inf's (the last
// of the grid), per 1,000 visits scored.
func (a *agedState) gain() float64 {
	b := a.bank
	if b.N == 0 {
		return 0
	}
	return 1000 * (b.LogLik[b.Best()] - b.LogLik[len(b.LogLik)-1]) / float64(b.N)
}
