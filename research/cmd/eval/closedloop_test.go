package main

import (
	"fmt"
	"math"
	"testing"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
)

// The adaptive schedulers' interval rules with their shipped defaults.
func TestAdaptivePolicies(t *testing.T) {
	n := nutchPolicy()
	n.replan(0, &loopState{last: make([]float64, 1)})
	n.visited(0, 0, false)
	if want := 30 * loopDay * 1.4; math.Abs(n.iv[0]-want) > 1e-6 {
		t.Errorf("Nutch unchanged: %g, want ×1.4 of 30 days %g", n.iv[0], want)
	}
	n.visited(0, 0, true)
	if want := 30 * loopDay * 1.4 * 0.8; math.Abs(n.iv[0]-want) > 1e-6 {
		t.Errorf("Nutch changed: %g, want ×0.8: %g", n.iv[0], want)
	}
	for range 20 {
		n.visited(0, 0, false)
	}
	if n.iv[0] != 90*loopDay {
		t.Errorf("Nutch: %g, want the 90-day cap", n.iv[0])
	}
	s := stormPolicy()
	s.replan(0, &loopState{last: make([]float64, 1)})
	s.visited(0, 0, true)
	if want := 0.5*loopDay + 0.5*3600; math.Abs(s.iv[0]-want) > 1e-9 {
		t.Errorf("StormCrawler changed: %g, want halfway from 1 day to 1 h: %g", s.iv[0], want)
	}
	s.visited(0, 0, false)
	if want := 1.5 * (0.5*loopDay + 0.5*3600); math.Abs(s.iv[0]-want) > 1e-9 {
		t.Errorf("StormCrawler unchanged: %g, want ×1.5: %g", s.iv[0], want)
	}
}

// runLoop's score on a hand-made world: one page, visited once a day from
// T0 (uniform policy), changing at S + 0.25 day and S + 0.5 day and S +
// 10.75 days; scored year (S, S + 3 days·…]: the page is stale from a
// change until the next whole day's visit.
func TestRunLoopScore(t *testing.T) {
	T0 := 0.0
	w := &loopWorld{names: []string{"p"}, T0: T0, S: T0 + loopYear, T1: T0 + 2*loopYear}
	S := w.S
	w.ev = [][]float64{{S + 0.25*loopDay, S + 0.5*loopDay, S + 10.75*loopDay}}
	w.truth = []float64{3 / (2 * loopYear)}
	w.past = []float64{0}
	pol := &allocPolicy{label: "uniform", cfg: plan.AllocConfig{Policy: plan.PolicyPower}}
	res := runLoop(w, pol, 1, loopDay)
	// visits at whole days from T0; S is a whole day. Stale: (S+0.25d,
	// S+1d] with one change for 0.25 d and two for 0.5 d; (S+10.75d,
	// S+11d] one change.
	staleOne := 0.25*loopDay + 0.25*loopDay
	staleTwo := 0.5 * loopDay
	span := w.T1 - w.S
	if want := 1 - (staleOne+staleTwo)/span; math.Abs(res.freshness-want) > 1e-12 {
		t.Errorf("freshness %.12f, want %.12f", res.freshness, want)
	}
	if want := (staleOne*1 + staleTwo*1.5) / span; math.Abs(res.cost-want) > 1e-12 {
		t.Errorf("harmonic cost %.12g, want %.12g (H(1) = 1, H(2) = 1.5)", res.cost, want)
	}
	if res.visits != 365 {
		t.Errorf("%d visits in the scored year, want 365", res.visits)
	}
}

// cachePage's accounting: requests every 6 hours, one change at day 2.1,
// a fixed TTL of one day (a heuristic whose cap binds).
func TestCachePage(t *testing.T) {
	var req []float64
	for k := 1; k <= 16; k++ {
		req = append(req, float64(k)*loopDay/4)
	}
	ev := []float64{-100 * loopDay, 2.1 * loopDay}
	m := ttlMethod{squidFamily, 1, heuristicTTL(1, loopDay)}
	stale, origin := cachePage(req, ev, m, 0, 0, newEstConfig())
	// fetches at 0.25 and 1.25 d (a request at exactly the expiry goes
	// to the origin), 2.25 d (Last-Modified 2.1 d: TTL 0.15 d), 2.5 d (TTL
	// 0.4 d), 3.0 d (0.9 d), 4.0 d: 6 origin requests; no hit is stale.
	if origin != 6 || stale != 0 {
		t.Errorf("origin %g stale %g, want 6 and 0", origin, stale)
	}
	// a TTL of 1.5 days: fetches at 0.25, 1.75, 3.25; the copy of 1.75 d
	// is stale at 2.25, 2.5, 2.75, 3.0 d.
	m = ttlMethod{squidFamily, 1, heuristicTTL(1, 1.5*loopDay)}
	stale, origin = cachePage(req, ev, m, 0, 0, newEstConfig())
	if origin != 3 || stale != 4 {
		t.Errorf("origin %g stale %g, want 3 and 4", origin, stale)
	}
}

// The age rule's observations: the time between distinct Last-Modified
// values seen, and the latest one's age at the latest fetch, running.
func TestCacheIntervals(t *testing.T) {
	got := cacheIntervals([]float64{10, 20, 30, 40, 50}, []float64{5, 5, 25, 25, 45})
	want := []struct {
		l     float64
		ended bool
	}{{20, true}, {20, true}, {5, false}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Length != w.l || got[i].Ended != w.ended {
			t.Errorf("interval %d: %+v, want %+v", i, got[i], w)
		}
	}
}

// Access rates go to the pages by rank in a permutation; pages beyond
// the log's URLs get none, and the weighted score weighs by them.
func TestWithAccess(t *testing.T) {
	w := &loopWorld{names: []string{"a", "b", "c", "d"}}
	wa := w.withAccess([]float64{1, 5, 3}, 2, 1)
	seen := map[float64]int{}
	for _, a := range wa.access {
		seen[a]++
	}
	if seen[10] != 1 || seen[6] != 1 || seen[2] != 1 || seen[0] != 1 {
		t.Errorf("access %v, want 10, 6, 2 and 0 in some order", wa.access)
	}
	if w.access != nil || w.weight(0) != 1 {
		t.Errorf("withAccess changed the original world")
	}
}

// The aged policy (closedloop_aged.go) before the population has a prior
// (no change seen yet) plans every page alike: the uniform allocation,
// B/N visits each; once the pages differ, the plan follows the aged
// posterior at the fitted κ, and κ = +Inf (the prior alone) is uniform
// again whatever the evidence.
func TestClosedLoopAgedUniformWithoutEvidence(t *testing.T) {
	const n = 12
	w := &loopWorld{names: make([]string, n), ev: make([][]float64, n), T0: 0, S: loopYear, T1: 2 * loopYear}
	st := &loopState{w: w, budget: 3.0 / loopDay, last: make([]float64, n), est: make([]estimators.Change, n), cfg: newEstConfig(), aged: newAgedState(n)}
	for i := range st.est {
		st.est[i].Visit(estimators.Visit{Time: 0})
	}
	pol := &allocPolicy{label: "aged", cfg: plan.AllocConfig{Policy: plan.PolicyFreshness}, aged: true}
	pol.replan(0, st)
	for i, f := range pol.f {
		// tolerance: the price's bisection (relative 1e-13 of the budget)
		if want := st.budget / n; math.Abs(f-want) > 1e-9*want {
			t.Errorf("page %d: %g visits/s, want the uniform %g", i, f, want)
		}
	}
	// Page 0 changed at every third visit, the others never: with a prior,
	// the plan at κ = +Inf (forced by its likelihood) is uniform, at κ = 0
	// it is not.
	for v := 1; v <= 30; v++ {
		tv := float64(v) * loopDay
		for i := range st.est {
			ch := i == 0 && v%3 == 0
			st.aged.observe(i, tv-loopDay, tv, ch)
			st.est[i].Visit(estimators.Visit{Time: tv, Changed: ch})
		}
		st.aged.refit(st)
	}
	if !st.aged.havePrior {
		t.Fatal("no prior after 30 days with 10 changes")
	}
	b := st.aged.bank
	for _, c := range []struct {
		k       int
		uniform bool
	}{{len(b.Kappas) - 1, true}, {0, false}} {
		for j := range b.LogLik {
			b.LogLik[j] = -1
		}
		b.LogLik[c.k] = 0
		pol.replan(30*loopDay, st)
		spread := (pol.f[0] - pol.f[1]) / pol.f[1]
		if c.uniform != (math.Abs(spread) < 1e-9) {
			t.Errorf("κ = %g: page 0 gets %g visits/s, the others %g", b.Kappas[c.k], pol.f[0], pol.f[1])
		}
	}
}

// The verdict compares the default with uniform over the random page
// orders (paired means) and with the other baselines by name: uniform
// ahead by name but behind in the orders passes, behind by name but ahead
// in the orders fails, and without orders the by-name gap decides.
func TestLoopVerdictChecksPhase(t *testing.T) {
	rs := make([]loopResult, loopPublishedIdx+1)
	for i := range rs {
		rs[i] = loopResult{policy: fmt.Sprintf("p%d", i), freshness: 0.90}
	}
	rs[0].freshness = 0.95              // the default
	rs[loopUniformIdx].freshness = 0.96 // uniform by name, ahead
	rs[loopTruthIdx].freshness = 0.965
	behind := []phasePair{{0.95, 0.94}, {0.96, 0.95}} // uniform behind in every order
	ahead := []phasePair{{0.95, 0.97}, {0.94, 0.95}}  // uniform ahead in the orders
	for _, tc := range []struct {
		label string
		phase []phasePair
		gap   float64
		ok    bool
	}{
		{"orders, uniform behind", behind, 0.01, true},
		{"orders, uniform ahead", ahead, -0.015, false},
		{"by name", nil, -0.01, false},
	} {
		cs := loopVerdictChecks("N/7", rs, tc.phase)
		if len(cs) != 2 {
			t.Fatalf("%s: %d checks", tc.label, len(cs))
		}
		if math.Abs(cs[0].ours-tc.gap) > 1e-12 || cs[0].ok() != tc.ok {
			t.Errorf("%s: %s, want gap %g ok %v", tc.label, cs[0], tc.gap, tc.ok)
		}
		if r := cs[1].ours; math.Abs(r-0.95/0.965) > 1e-12 || !cs[1].ok() {
			t.Errorf("%s: %s, want 0.95/0.965 met", tc.label, cs[1])
		}
	}
	// Another baseline ahead by name decides even when uniform is behind
	// in the orders.
	rs[loopBaselines[0]].freshness = 0.955
	if cs := loopVerdictChecks("N/7", rs, behind); cs[0].ok() || math.Abs(cs[0].ours+0.005) > 1e-12 {
		t.Errorf("baseline ahead by name: %s, want gap -0.005 not met", cs[0])
	}
}
