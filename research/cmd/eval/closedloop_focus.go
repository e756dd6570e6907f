package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/changerate/changerate/plan"
)

// closedLoopFocus is the closed loop's short form (-loop-orders K): the
// default (/v1/plan on the records' tempered plan posteriors), the
// default before (/v1/plan on the published estimates), uniform and the
// true-rate allocation, in name order at every budget; then the default
// and uniform in K random page orders (permuted, seeds 1…K: the phase
// note's first K); then the access-weighted rows. What the whole section
// reports beside these is not run.
func closedLoopFocus(e *Env, w *loopWorld, cycle float64) {
	r := e.R
	focus := func() []loopPolicy {
		ps, def := loopPolicies()
		return []loopPolicy{ps[def], ps[loopPublishedIdx], ps[loopUniformIdx], ps[loopTruthIdx]}
	}
	res := runPolicies(w, focus, cycle, e.Procs)
	r.P("Short form (-loop-orders %d): %s pages; the default, the default before the tempered plan, uniform and the true-rate "+
		"allocation by name, then the default and uniform in %d random page orders.", e.LoopOrders, commas(len(w.names)), e.LoopOrders)
	header := []string{"policy (by name)"}
	for _, b := range loopBudgets {
		header = append(header, "freshness "+b.label)
	}
	rows := freshnessRows(res)
	var omegas []string
	for b, bl := range loopBudgets {
		m := res[b][0].mix
		omegas = append(omegas, fmt.Sprintf("%s ω %.2g (%d of %d pages on the tempered posterior)", bl.label, m.omega, m.tempered, m.pages))
	}
	r.Table(header, rows)
	r.P("The default's ω at its last plan: %s.", joinSemi(omegas))
	// Random orders: default and uniform on the same permuted worlds.
	type pair struct{ d, u float64 }
	out := make([][]pair, len(loopBudgets))
	for b := range out {
		out[b] = make([]pair, e.LoopOrders)
	}
	for s := 1; s <= e.LoopOrders; s++ {
		pw := w.permuted(uint64(s))
		two := func() []loopPolicy {
			ps, def := loopPolicies()
			return []loopPolicy{ps[def], &allocPolicy{label: "uniform", cfg: plan.AllocConfig{Policy: plan.PolicyPower, Exponent: 0}}}
		}
		rs := runPolicies(pw, two, cycle, e.Procs)
		for b := range loopBudgets {
			out[b][s-1] = pair{rs[b][0].freshness, rs[b][1].freshness}
		}
	}
	rows = nil
	for b, bl := range loopBudgets {
		var ds, us []string
		dm, um, ahead := 0.0, 0.0, 0
		for _, p := range out[b] {
			ds, us = append(ds, fmt.Sprintf("%.4f", p.d)), append(us, fmt.Sprintf("%.4f", p.u))
			dm, um = dm+p.d, um+p.u
			if p.d >= p.u {
				ahead++
			}
		}
		k := float64(e.LoopOrders)
		rows = append(rows, []string{bl.label, strings.Join(ds, " / "), fmt.Sprintf("%.4f", dm/k), strings.Join(us, " / "), fmt.Sprintf("%.4f", um/k),
			fmt.Sprintf("%d of %d", ahead, e.LoopOrders)})
	}
	r.Table([]string{"budget", "default by order", "mean", "uniform by order", "mean", "default ≥ uniform"}, rows)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range out[len(loopBudgets)-1] {
		lo, hi = math.Min(lo, p.u), math.Max(hi, p.u)
	}
	r.P("Uniform's spread over the orders at %s: %.4f–%.4f (by name %.4f).", loopBudgets[len(loopBudgets)-1].label, lo, hi, res[len(loopBudgets)-1][2].freshness)
	accessLoop(e, w, cycle)
}
