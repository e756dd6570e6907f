package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/changerate/changerate/plan"
)

// How much of a page's warm-up year persists into the scored year (issue
// 33, stop 41): the most any plan made from the warm-up year's evidence
// can gain over uniform, to first order.
//
// With λᵢ/fᵢ small (N/7 and N/30 here: a page changes about once in
// two years and is visited every 7 or 30 days), CGM's freshness is
// F(λ, f) = 1 − λ/(2f) + O((λ/f)²), so a plan's staleness is
// Σ λᵢ/(2fᵢ) and, for a predictor mᵢ of the scored year's rate, the
// freshness-optimal allocation is fᵢ ∝ √mᵢ (the Lagrangian of
// Σ mᵢ/(2fᵢ) at Σ fᵢ = B). Scored on the year's counts yᵢ, its staleness
// relative to uniform's (fᵢ = B/N) is
//
//	ρ(m) = (Σ√mᵢ)(Σ yᵢ/√mᵢ) / (N·Σ yᵢ),                             (Q1)
//
// below 1 when the plan beats uniform. The predictors are the warm-up
// year's counts xᵢ (exact, which a crawler does not see) under the
// population's Gamma(α, β) prior (moment fit of the counts), tempered by
// ω — the stabilised forgetting of a year's evidence toward the prior,
// Gamma(α + ωx, β + ω) over one year —, and a page's own posterior mean
// without the prior, x + ½. The ω that the two years support is the
// linear credibility of the scored year on the warm-up year: the
// tempered mean (α + ωx)/(β + ω) has relative slope ω/(α + ωx̄) in x,
// set equal to Cov(x, y)/(Var(x)·ȳ) (the least-squares slope of y on x,
// relative to ȳ):
//
//	ω* = s·α/(1 − s·x̄),   s = Cov(x, y)/(Var(x)·ȳ).                   (Q2)

// persistence is Q1 and Q2 on w's pages.
type persistence struct {
	year1, year2 float64 // changes in the warm-up and scored year
	shape        float64 // the warm-up counts' prior shape α
	omega        float64 // Q2
	// ratio[k] is Q1 of the tempered predictor at persistOmegas[k]; own
	// of x + ½, truth of the two-year rate.
	ratio       []float64
	own, truth  float64
	quietShare  float64 // the scored year's changes on pages with x = 0
	quietPages  float64 // the share of pages with x = 0
	quietRatio2 float64 // scored-year rate of pages with x > 0 ÷ x = 0
}

// persistOmegas are the ω of Q1's table.
var persistOmegas = []float64{0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1}

// stalenessRatio is Q1 of predictor m against counts y (m > 0).
func stalenessRatio(m, y []float64) float64 {
	var a, b, sy float64
	for i := range m {
		a += math.Sqrt(m[i])
		b += y[i] / math.Sqrt(m[i])
		sy += y[i]
	}
	return a * b / (float64(len(m)) * sy)
}

func (w *loopWorld) persistence() (p persistence, ok bool) {
	n := len(w.ev)
	x, y := make([]float64, n), make([]float64, n)
	for i, v := range w.ev {
		for _, t := range v {
			if t > w.S {
				y[i]++
			} else {
				x[i]++
			}
		}
		p.year1 += x[i]
		p.year2 += y[i]
	}
	N := float64(n)
	if n < 2 || p.year1 == 0 || p.year2 == 0 {
		return p, false
	}
	mx, my := p.year1/N, p.year2/N
	var vx, cxy, x2 float64
	var nq, yq, ya float64
	for i := range x {
		vx += (x[i] - mx) * (x[i] - mx) / N
		cxy += (x[i] - mx) * (y[i] - my) / N
		x2 += x[i] * x[i] / N
		if x[i] == 0 {
			nq++
			yq += y[i]
		} else {
			ya += y[i]
		}
	}
	// Moment fit of Gamma(α, β) to the counts over one year (exposure 1):
	// Var(x) = μ + μ²/α.
	excess := vx - mx
	if !(excess > 0) {
		return p, false
	}
	p.shape = mx * mx / excess
	beta := p.shape / mx
	s := cxy / (vx * my)
	p.omega = s * p.shape / (1 - s*mx)
	m := make([]float64, n)
	for _, om := range persistOmegas {
		for i := range m {
			m[i] = (p.shape + om*x[i]) / (beta + om)
		}
		p.ratio = append(p.ratio, stalenessRatio(m, y))
	}
	for i := range m {
		m[i] = x[i] + 0.5
	}
	p.own = stalenessRatio(m, y)
	for i := range m {
		m[i] = math.Max(x[i]+y[i], 0.5) // a page unchanged over both years: half a change
	}
	p.truth = stalenessRatio(m, y)
	p.quietShare, p.quietPages = yq/p.year2, nq/N
	if nq > 0 && N > nq {
		p.quietRatio2 = (ya / (N - nq)) / (yq / nq)
	}
	return p, true
}

// persistenceNote is the report's paragraph on Q1 and Q2.
func persistenceNote(w *loopWorld) string {
	p, ok := w.persistence()
	if !ok {
		return ""
	}
	var cells []string
	for k, om := range persistOmegas {
		cells = append(cells, fmt.Sprintf("ω = %g: %.3f", om, p.ratio[k]))
	}
	best := 0
	for k := range p.ratio {
		if p.ratio[k] < p.ratio[best] {
			best = k
		}
	}
	return fmt.Sprintf("**How much of the warm-up year persists.** To first order in λ/f (N/7, N/30), a plan's staleness is Σ λᵢ/(2fᵢ), the plan "+
		"on a predictor mᵢ of the scored year's rate is fᵢ ∝ √mᵢ, and its staleness relative to uniform's is (Σ√mᵢ)(Σ yᵢ/√mᵢ)/(N·Σ yᵢ) on the "+
		"scored year's counts yᵢ (closedloop_persist.go Q1; below 1 beats uniform). On the warm-up year's exact counts xᵢ (%s changes; %s in the "+
		"scored year), under their moment-fitted Gamma prior (shape %.3f) with the year's evidence counted ω times (stabilised forgetting toward the "+
		"prior, Gamma(α + ωx, β + ω)): %s; a page's own posterior mean without the prior (x + ½): %.3f; the two years' exact counts (hindsight): %.3f. "+
		"The scored year's rate on the pages that changed in the warm-up year is %.2f times that on the others (%.0f %% of the pages, %.0f %% of the "+
		"scored year's changes). The least-squares slope of y on x gives the year-ahead weight of a page's evidence, ω* = %.3f (Q2): a year "+
		"of evidence persists at about %s of what a stationary rate assumes (ω = 1, the stationary pooled posterior: %.3f times uniform's "+
		"staleness); the least ratio of the table, %.3f at ω = %g, is the most the warm-up year's exact counts buy over uniform to first order. "+
		"The crawler sees less than the exact counts (changes only at visits).",
		commas(int(p.year1)), commas(int(p.year2)), p.shape, strings.Join(cells, ", "), p.own, p.truth, p.quietRatio2, 100*p.quietPages,
		100*p.quietShare, p.omega, fractionWord(p.omega), p.ratio[len(p.ratio)-1], p.ratio[best], persistOmegas[best])
}

// fractionWord names a fraction ≤ 1 as "n-th" (1/n rounded).
func fractionWord(f float64) string {
	if !(f > 0) {
		return "none"
	}
	n := math.Round(1 / f)
	return fmt.Sprintf("1/%g", n)
}

// permuted returns w with its pages in a seeded random order: the same
// pages and histories, visited by a round-robin (uniform) in another
// phase. The loop breaks ties of due times by page index, so uniform's
// visits follow the order of the pages; with the pages by name, those of
// one directory — which bulk commits change together — are visited one
// after the other.
func (w *loopWorld) permuted(seed uint64) *loopWorld {
	perm := rand.New(rand.NewPCG(seed, 41)).Perm(len(w.names))
	out := *w
	out.names, out.ev = make([]string, len(perm)), make([][]float64, len(perm))
	out.truth, out.past = make([]float64, len(perm)), make([]float64, len(perm))
	if w.access != nil {
		out.access = make([]float64, len(perm))
	}
	for k, i := range perm {
		out.names[k], out.ev[k], out.truth[k], out.past[k] = w.names[i], w.ev[i], w.truth[i], w.past[i]
		if w.access != nil {
			out.access[k] = w.access[i]
		}
	}
	return &out
}

// phaseOrders is the number of random page orders of phaseRuns.
const phaseOrders = 8

// phasePair is the default's and uniform's freshness in one random page
// order.
type phasePair struct{ def, uni float64 }

// phaseRuns runs uniform and the default (the product's tempered plan)
// on phaseOrders random page orders at every budget (indexed as
// loopBudgets): how far a policy's freshness on this one history moves
// with the phase of its visits alone, and the two compared order by
// order.
func phaseRuns(w *loopWorld, cycle float64) [][]phasePair {
	out := make([][]phasePair, len(loopBudgets))
	for b, bl := range loopBudgets {
		for s := uint64(1); s <= phaseOrders; s++ {
			pw := w.permuted(s)
			r := runLoop(pw, &allocPolicy{label: "uniform", cfg: plan.AllocConfig{Policy: plan.PolicyPower, Exponent: 0}}, bl.v, cycle)
			ps, def := loopPolicies()
			d := runLoop(pw, ps[def], bl.v, cycle)
			out[b] = append(out[b], phasePair{def: d.freshness, uni: r.freshness})
		}
	}
	return out
}

// phaseMeans are the means of the default's and uniform's freshness over
// the orders of one budget.
func phaseMeans(ps []phasePair) (def, uni float64) {
	for _, p := range ps {
		def += p.def / float64(len(ps))
		uni += p.uni / float64(len(ps))
	}
	return def, uni
}

// phaseNote reports phaseRuns beside the by-name results res.
func phaseNote(phase [][]phasePair, res [][]loopResult) string {
	var parts []string
	for b, bl := range loopBudgets {
		lo, hi, ahead := math.Inf(1), math.Inf(-1), 0
		var pairs []string
		for _, p := range phase[b] {
			lo, hi = math.Min(lo, p.uni), math.Max(hi, p.uni)
			if p.def >= p.uni {
				ahead++
			}
			pairs = append(pairs, fmt.Sprintf("%.4f/%.4f", p.def, p.uni))
		}
		dm, um := phaseMeans(phase[b])
		parts = append(parts, fmt.Sprintf("%s: by name %.4f, %d random orders %.4f–%.4f (mean %.4f; the default by name %.4f, in the same random orders "+
			"mean %.4f, at or above uniform in %d of %d; default/uniform by order %s)", bl.label,
			res[b][loopUniformIdx].freshness, len(phase[b]), lo, hi, um, res[b][0].freshness, dm, ahead, len(phase[b]),
			strings.Join(pairs, ", ")))
	}
	return fmt.Sprintf("**The phase of the visits.** The loop visits the page due the earliest, ties by page order, so uniform visits the pages "+
		"round-robin in name order, and the pages of one directory, which bulk commits change together, one after the other: its freshness on "+
		"this one history depends on where in its cycle each commit falls. Uniform and the default with the same pages in random orders "+
		"(closedloop_persist.go permuted): %s. Differences between policies smaller than that spread are the phase of a few commits, not the policies; "+
		"the verdict below therefore compares the default with uniform over these orders, paired, and with the other baselines (run by name only) by name.", joinSemi(parts))
}
