package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
	"github.com/changerate/changerate/research/forget"
)

// Tempered posteriors (issue 33, stop 41): the predictive of a rate that
// drifts, from the O(1) evidence the product keeps per page. Every page's
// evidence (X changes over exposure E, estimators.Change.Evidence) counts
// ω times under the population's prior Gamma(α₀, β₀) (moment fit,
// estimators.PoolStats, refitted at every replan):
//
//	λ ~ Gamma(α₀ + ωX, β₀ + ωE) = ω·(a, b) + (1 − ω)·(α₀, β₀),      (T1)
//
// (a, b) the stationary posterior: Kulhavý & Zarrop's stabilised
// forgetting of the whole posterior toward the prior. ω = 1 is the
// stationary pooled posterior, ω = 0 the prior alone (uniform visits).
// The span variant ages the evidence at a rate κ as if it were spread
// evenly over the page's span T (the per-page state keeps no ages):
//
//	ω(κ, T) = (1/T)∫₀ᵀ e^{−κs} ds = (1 − e^{−κT})/(κT).              (T2)
//
// ω (or κ) is chosen as research/forget chooses its κ: every visit's
// outcome is scored under each grid value's posterior before it,
// P(unchanged over d) = (1 + d/b)^{−a} (forget F3), and the plan takes the
// largest log predictive likelihood so far. A diagnostic takes ω from
// both years in hindsight (closedloop_persist.go Q2).

// temperGrid is the grid of ω of (T1).
var temperGrid = []float64{0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1}

// temperState is the tempered policies' prior and predictive scores.
type temperState struct {
	prior     estimators.GammaPrior
	havePrior bool
	// loglik is Σ log P over the visits scored, by temperGrid.
	loglik []float64
	// span: ω is each page's evidence aged at κ as if spread evenly over
	// its span T, (1 − e^{−κT})/(κT), κ over agedKappas by predictive
	// likelihood (spanLL).
	span   bool
	spanLL []float64
	// star is Q2's ω* of the world (closedloop_persist.go), for the
	// hindsight diagnostic.
	star     float64
	haveStar bool
}

// temperHindsight as allocPolicy.temper: ω = Q2's ω*, from both years.
const temperHindsight = -2

// spanWeight is (T2): 1 at κ = 0 (or T = 0), 0 at κ = +Inf.
func spanWeight(kappa, T float64) float64 {
	switch {
	case kappa == 0 || !(T > 0):
		return 1
	case math.IsInf(kappa, 1):
		return 0
	}
	return -math.Expm1(-kappa*T) / (kappa * T)
}

// bestKappa is the span variant's κ of the largest predictive likelihood
// (0 before any visit is scored).
func (ts *temperState) bestKappa() float64 {
	ks := agedKappas()
	if ts.spanLL == nil {
		return 0
	}
	return ks[argmax(ts.spanLL)]
}

// refit fits the population's prior to every page's evidence.
func (ts *temperState) refit(st *loopState) { ts.prior, ts.havePrior = st.populationPrior() }

// observe scores page i's visit interval of length d under every ω before
// its estimator sees it.
func (ts *temperState) observe(st *loopState, i int, d float64, changed bool) {
	if !ts.havePrior || !(d > 0) {
		return
	}
	ev, ok := st.est[i].Evidence(st.cfg)
	if !ok {
		ev = estimators.Evidence{}
	}
	if ts.loglik == nil {
		ts.loglik = make([]float64, len(temperGrid))
	}
	for k, w := range temperGrid {
		a, b := ts.prior.Shape+w*ev.X, ts.prior.Rate+w*ev.E
		ts.loglik[k] += forget.LogPredictive(a, b, d, changed)
	}
	if ts.span {
		ks := agedKappas()
		if ts.spanLL == nil {
			ts.spanLL = make([]float64, len(ks))
		}
		T := st.est[i].Span()
		for k, kappa := range ks {
			w := spanWeight(kappa, T)
			a, b := ts.prior.Shape+w*ev.X, ts.prior.Rate+w*ev.E
			ts.spanLL[k] += forget.LogPredictive(a, b, d, changed)
		}
	}
}

// best is the ω of the largest predictive likelihood (1 before any visit
// is scored).
func (ts *temperState) best() float64 {
	if ts.loglik == nil {
		return 1
	}
	return temperGrid[argmax(ts.loglik)]
}

// pages is every page's tempered posterior (T1) at ω (-1: the best by
// predictive likelihood; temperHindsight: Q2's ω*), or with the span
// variant at (T2)'s ω of the best κ; with point, planned at its mean
// alone. Without a prior yet every page is alike (uniform visits).
func (ts *temperState) pages(st *loopState, w float64, point bool) []plan.Page {
	switch {
	case w == temperHindsight:
		if !ts.haveStar {
			ps, ok := st.w.persistence()
			ts.star, ts.haveStar = 1, true
			if ok {
				ts.star = math.Max(ps.omega, 0)
			}
		}
		w = ts.star
	case w < 0:
		w = ts.best()
	}
	out := make([]plan.Page, len(st.est))
	for i := range out {
		out[i] = plan.Page{Rate: 1 / loopYear, Shape: 1, Weight: 1}
		if !ts.havePrior {
			continue
		}
		ev, ok := st.est[i].Evidence(st.cfg)
		if !ok {
			ev = estimators.Evidence{}
		}
		wi := w
		if ts.span {
			wi = spanWeight(ts.bestKappa(), st.est[i].Span())
		}
		a, b := ts.prior.Shape+wi*ev.X, ts.prior.Rate+wi*ev.E
		out[i].Rate, out[i].Shape = a/b, a
		if point {
			out[i].Shape = 0
		}
	}
	return out
}

// temperNote is the report's paragraph on the tempered rows: their
// freshness against the best baseline at every budget, the ω or κ chosen,
// and their share of visits on the pages quiet in the warm-up year.
func temperNote(w *loopWorld, res [][]loopResult) string {
	row := func(k int) string {
		var parts []string
		for b, bl := range loopBudgets {
			rs := res[b]
			best := math.Inf(-1)
			for _, j := range loopBaselines {
				best = math.Max(best, rs[j].freshness)
			}
			x := rs[k]
			chosen := fmt.Sprintf("ω %.2g", x.omega)
			if k == loopSpanIdx {
				chosen = "κ: " + halfLifeWord(x.halfLife)
			}
			if k == loopStarIdx {
				chosen = ""
			}
			if chosen != "" {
				chosen += ", "
			}
			parts = append(parts, fmt.Sprintf("%s %.4f (%s%.1f %% of visits on warm-up-quiet pages; against the best baseline %+.4f)", bl.label, x.freshness, chosen,
				100*x.quietVisits, x.freshness-best))
		}
		return joinSemi(parts)
	}
	star, cmp := "", ""
	if p, ok := w.persistence(); ok {
		star = fmt.Sprintf(" (ω* = %.3f)", p.omega)
		var picked []string
		for b, bl := range loopBudgets {
			picked = append(picked, fmt.Sprintf("%.2g at %s", res[b][loopTemperIdx].omega, bl.label))
		}
		cmp = fmt.Sprintf(" The visits' predictive likelihood picks ω %s against the year-ahead ω* %.3f: it predicts a visit's outcome over "+
			"the visit's own interval, the plan's freshness is spent over the months after.", strings.Join(picked, ", "), p.omega)
	}
	return fmt.Sprintf("**Planning on a predictive that drifts (closedloop_temper.go).** The plan's objective already integrates over each "+
		"page's Gamma posterior (plan/posterior.go: E[F] = f·β(1 − (1 + 1/(fβ))^{1−α})/(α − 1), KKT in plan.Allocate); what it lacks is a posterior of "+
		"the *next* period's rate. The tempered rows give every page's evidence the weight ω under the prior of all pages, Gamma(α₀ + ωX, β₀ + ωE) "+
		"(stabilised forgetting, T1), or age it at a rate κ as if spread evenly over the page's span, ω = (1 − e^{−κT})/(κT) (T2), both from the O(1) "+
		"evidence the product keeps per page, with ω or κ chosen by the population's one-step predictive likelihood of every visit's outcome, as the "+
		"aged row chooses κ. Tempered, ω by predictive likelihood: %s. Span-aged, κ by predictive likelihood: %s. Tempered at the year-ahead ω*%s, "+
		"known only in hindsight: %s.%s",
		row(loopTemperIdx), row(loopSpanIdx), star, row(loopStarIdx), cmp)
}
