package query

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
)

// Plan policies of /v1/plan?policy=.
const (
	// PolicyCGM: revisit frequencies f_i ∝ √λ_i for the budget (CGM §6.4,
	// estimators.Allocate), bounded to [1/MaxRevisit, 1/MinRevisit] by
	// water-filling (the objects at a bound keep it, the rest of the budget
	// is shared ∝ √λ among the others); the budget's B visits are then
	// split ∝ f_i into whole visits (largest remainder), each object's
	// visits evenly spaced from its latest visit to the end of the period.
	PolicyCGM = "cgm"
	// PolicyUniform: the same frequency for every object (CGM's uniform
	// policy), within the same bounds.
	PolicyUniform = "uniform"
	// PolicyProportional: f_i ∝ λ_i (CGM's proportional policy).
	PolicyProportional = "proportional"
	// PolicyMalcolm: every object at its own recommended next visit
	// (Malcolm & Armitage Listings 1 and 2, as published in next_visit),
	// then again every such interval; the budget keeps the visits with the
	// highest probability of detecting a change.
	PolicyMalcolm = "malcolm"
	// PolicyNtoulasGreedy and PolicyNtoulasProportional are Cho & Ntoulas
	// per-site policies for when only site-level change ratios are known:
	// each site's expected change ratio ρ_s over the period (the mean of
	// 1 − e^{−λ_i·period} over its objects) ranks the sites (greedy:
	// whole sites in descending ρ_s) or shares the budget (proportional:
	// plan.Apportion ∝ ρ_s·N_s); every page is downloaded at most once per
	// cycle, at its start.
	PolicyNtoulasGreedy       = "ntoulas-greedy"
	PolicyNtoulasProportional = "ntoulas-proportional"
	// PolicyFreshness (the default): Cho & Garcia-Molina 2003's
	// freshness-optimal allocation of the budget (plan.Allocate), with
	// importance weights and per-host politeness caps; objects not worth
	// a visit get none and are listed in left_out.
	PolicyFreshness = "freshness"
	// PolicyLambdaCrawl: Kolobov et al. 2019's staleness-cost allocation
	// for objects whose changes are seen only at visits (plan.Allocate).
	PolicyLambdaCrawl = "lambdacrawl"
	// DefaultPolicy is /v1/plan's and --plan-out's policy when none is
	// given.
	DefaultPolicy = PolicyFreshness
)

// Policies lists the policies of /v1/plan.
var Policies = []string{PolicyFreshness, PolicyLambdaCrawl, PolicyCGM, PolicyUniform, PolicyProportional, PolicyMalcolm, PolicyNtoulasGreedy, PolicyNtoulasProportional}

// PlanConfig holds the planning configuration. The zero value of every
// field means its documented default (WithDefaults fills them in).
type PlanConfig struct {
	// MinRevisit and MaxRevisit bound every planned revisit interval.
	// Defaults 10m and 720h (30 days).
	MinRevisit, MaxRevisit time.Duration
	// Budget and Period are the defaults of /v1/plan's budget and period.
	// Defaults 1000 fetches per 24h.
	Budget int
	Period time.Duration
	// MaxBudget bounds a request's budget (the response lists every visit).
	// Default 100000.
	MaxBudget int
	// HostCap is the default politeness cap of the freshness and
	// lambdacrawl policies: at most this many visits per host (site) per
	// period; 0: none. HostCaps overrides it per site.
	HostCap  int
	HostCaps map[string]int
	// Weights are the importance weights of weights=given, by object
	// (canonical URL) or site; an object found under neither weighs 1.
	Weights map[string]float64
}

// Defaults of PlanConfig.
const (
	DefaultMinRevisit = 10 * time.Minute
	DefaultMaxRevisit = 720 * time.Hour
	DefaultPlanBudget = 1000
	DefaultPlanPeriod = 24 * time.Hour
	DefaultMaxBudget  = 100000
)

// WithDefaults returns c with the default of every zero field filled in.
func (c PlanConfig) WithDefaults() PlanConfig {
	if c.MinRevisit == 0 {
		c.MinRevisit = DefaultMinRevisit
	}
	if c.MaxRevisit == 0 {
		c.MaxRevisit = DefaultMaxRevisit
	}
	if c.Budget == 0 {
		c.Budget = DefaultPlanBudget
	}
	if c.Period == 0 {
		c.Period = DefaultPlanPeriod
	}
	if c.MaxBudget == 0 {
		c.MaxBudget = DefaultMaxBudget
	}
	return c
}

// Validate reports every problem of c (with defaults filled in) at once,
// each naming its field.
func (c PlanConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.MinRevisit < 0 || c.MaxRevisit < 0 || c.MinRevisit > c.MaxRevisit {
		errs = append(errs, fmt.Errorf("query: Plan.MinRevisit %s and Plan.MaxRevisit %s must be positive with MinRevisit <= MaxRevisit", c.MinRevisit, c.MaxRevisit))
	}
	if c.Budget < 0 || c.MaxBudget < 0 || c.Budget > c.MaxBudget {
		errs = append(errs, fmt.Errorf("query: Plan.Budget %d must be in [1, Plan.MaxBudget %d]", c.Budget, c.MaxBudget))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("query: Plan.Period %s must be positive", c.Period))
	}
	if c.HostCap < 0 {
		errs = append(errs, fmt.Errorf("query: Plan.HostCap %d must be >= 0", c.HostCap))
	}
	for h, v := range c.HostCaps {
		if v < 1 {
			errs = append(errs, fmt.Errorf("query: Plan.HostCaps[%q] %d must be >= 1", h, v))
		}
	}
	for k, v := range c.Weights {
		if !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("query: Plan.Weights[%q] %v must be finite and >= 0", k, v))
		}
	}
	return errors.Join(errs...)
}

// Visit is one planned fetch.
type Visit struct {
	Object string    `json:"object"`
	Due    time.Time `json:"due"`
	// Priority is the probability that this fetch detects a change: 1 −
	// e^{−λ·I}, I the time since the object's previous (planned or last)
	// fetch, under the Poisson model of the estimate.
	Priority float64 `json:"priority"`
}

// PlanResult is /v1/plan's response.
type PlanResult struct {
	Policy  string    `json:"policy"`
	Site    string    `json:"site,omitempty"`
	Budget  int       `json:"budget"`
	PeriodS float64   `json:"period_s"`
	Start   time.Time `json:"start"`
	// Objects is the number of objects with a change estimate considered.
	Objects int     `json:"objects"`
	Visits  []Visit `json:"visits"`
	// ExpectedChangesDetected is the sum of the visits' priorities.
	ExpectedChangesDetected float64 `json:"expected_changes_detected"`
	// MinRevisitS and MaxRevisitS are the bounds applied.
	MinRevisitS float64 `json:"min_revisit_s"`
	MaxRevisitS float64 `json:"max_revisit_s"`
	PlanReport
}

// makePlan plans req.Budget fetches in [start, start+period] over cands.
func makePlan(cands []Candidate, req PlanRequest, cfg PlanConfig) PlanResult {
	policy, budget, start, period := req.Policy, req.Budget, req.Start, req.Period
	res := PlanResult{Policy: policy, Site: req.Site, Budget: budget, PeriodS: period.Seconds(), Start: start, Objects: len(cands),
		Visits: []Visit{}, MinRevisitS: cfg.MinRevisit.Seconds(), MaxRevisitS: cfg.MaxRevisit.Seconds()}
	res.LeftOut = []PlanLeftOut{}
	if len(cands) == 0 || budget == 0 {
		return res
	}
	P := period.Seconds()
	rates := make([]float64, len(cands))
	for i, c := range cands {
		if policy == PolicyFreshness || policy == PolicyLambdaCrawl {
			rates[i] = plan.PlanningRate(c.Rate, c.Hi) // a 0 would never be visited again
		} else if finite(c.Rate) && c.Rate > 0 {
			rates[i] = c.Rate
		}
	}
	var visits []Visit
	switch policy {
	case PolicyFreshness, PolicyLambdaCrawl:
		return optimalPlan(res, cands, rates, req, cfg)
	case PolicyNtoulasGreedy, PolicyNtoulasProportional:
		visits = ntoulas(cands, rates, policy, budget, start, P)
	case PolicyMalcolm:
		for i, c := range cands {
			first := c.NextVisit
			if first.IsZero() {
				first = start
			}
			iv := first.Sub(c.AsOf).Seconds()
			visits = appendEvenly(visits, c, rates[i], clampIv(iv, cfg), first, c.AsOf, start, P)
		}
	default:
		f := make([]float64, len(cands))
		switch policy {
		case PolicyUniform:
			boundedAllocate(make([]float64, len(rates)), float64(budget)/P, cfg, f) // all weights 0: even split
		case PolicyProportional:
			w := make([]float64, len(rates))
			for i, r := range rates {
				w[i] = r * r // Allocate weighs by √w: √(λ²) = λ
			}
			boundedAllocate(w, float64(budget)/P, cfg, f)
		default:
			boundedAllocate(rates, float64(budget)/P, cfg, f)
		}
		// Whole visits per object: the budget split ∝ f by largest
		// remainder (plan.Apportion), at most one visit per MinRevisit.
		end := start.Add(period)
		n := plan.Apportion(budget, f, func(i int) int {
			g := end.Sub(minTime(cands[i].AsOf, start)).Seconds()
			return int(g / cfg.MinRevisit.Seconds())
		})
		for i, c := range cands {
			if n[i] <= 0 {
				continue
			}
			last := minTime(c.AsOf, start)
			iv := end.Sub(last).Seconds() / float64(n[i])
			first := last.Add(dur(iv))
			if first.Before(start) {
				iv = P / float64(n[i])
				first = start
			}
			prev := last
			for j := 0; j < n[i]; j++ {
				t := first.Add(dur(float64(j) * iv))
				visits = append(visits, Visit{Object: c.Object, Due: t, Priority: -math.Expm1(-rates[i] * t.Sub(prev).Seconds())})
				prev = t
			}
		}
	}
	// Keep the budget's most useful visits, then order them by due time.
	sort.SliceStable(visits, func(i, j int) bool { return visits[i].Priority > visits[j].Priority })
	if len(visits) > budget {
		visits = visits[:budget]
	}
	res.setVisits(visits)
	res.expectedFreshness(cands, rates, nil, P)
	return res
}

// setVisits makes visits the plan's, in due-time order (then by object),
// and adds up their expected changes detected.
func (res *PlanResult) setVisits(visits []Visit) {
	sort.SliceStable(visits, func(i, j int) bool {
		if !visits[i].Due.Equal(visits[j].Due) {
			return visits[i].Due.Before(visits[j].Due)
		}
		return visits[i].Object < visits[j].Object
	})
	for _, v := range visits {
		res.ExpectedChangesDetected += v.Priority
	}
	res.Visits = visits
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func clampIv(iv float64, cfg PlanConfig) float64 {
	lo, hi := cfg.MinRevisit.Seconds(), cfg.MaxRevisit.Seconds()
	if !(iv >= lo) {
		return lo
	}
	return math.Min(iv, hi)
}

// appendEvenly appends c's visits from first every iv seconds within
// [start, start+P), each with its detection probability 1 − e^{−λ·gap}.
func appendEvenly(visits []Visit, c Candidate, rate, iv float64, first, last, start time.Time, P float64) []Visit {
	end := start.Add(dur(P))
	prev := last
	for t := first; t.Before(end); t = t.Add(dur(iv)) {
		gap := t.Sub(prev).Seconds()
		visits = append(visits, Visit{Object: c.Object, Due: t, Priority: -math.Expm1(-rate * gap)})
		prev = t
		if iv <= 0 {
			break
		}
	}
	return visits
}

// boundedAllocate is estimators.Allocate (f ∝ √w, Σf = total) with every
// f_i kept in [1/MaxRevisit, 1/MinRevisit]: objects whose share falls
// outside are fixed at the bound and the rest of the budget is allocated
// again among the others, until none moves (at most len(w) rounds).
func boundedAllocate(w []float64, total float64, cfg PlanConfig, out []float64) {
	fmin, fmax := 1/cfg.MaxRevisit.Seconds(), 1/cfg.MinRevisit.Seconds()
	fixed := make([]bool, len(w))
	free := make([]int, 0, len(w))
	sub, subOut := make([]float64, 0, len(w)), make([]float64, len(w))
	for round := 0; round <= len(w); round++ {
		rest := total
		free, sub = free[:0], sub[:0]
		for i := range w {
			if fixed[i] {
				rest -= out[i]
			} else {
				free = append(free, i)
				sub = append(sub, w[i])
			}
		}
		if len(free) == 0 {
			return
		}
		estimators.Allocate(sub, math.Max(rest, 0), subOut)
		moved := false
		for k, i := range free {
			out[i] = subOut[k]
			switch {
			case out[i] > fmax:
				out[i], fixed[i], moved = fmax, true, true
			case out[i] < fmin && rest > 0:
				out[i], fixed[i], moved = fmin, true, true
			}
		}
		if !moved {
			return
		}
	}
}

// ntoulas plans one download cycle at start with Cho & Ntoulas's
// site-level policies: sites ranked (greedy) or weighted (proportional) by
// their expected change ratio over the period.
func ntoulas(cands []Candidate, rates []float64, policy string, budget int, start time.Time, P float64) []Visit {
	type siteInfo struct {
		name  string
		pages []int // candidate indices, by descending rate
		rho   float64
	}
	idx := map[string]int{}
	var sites []*siteInfo
	for i, c := range cands {
		k, ok := idx[c.Site]
		if !ok {
			k = len(sites)
			idx[c.Site] = k
			sites = append(sites, &siteInfo{name: c.Site})
		}
		s := sites[k]
		s.pages = append(s.pages, i)
		s.rho += -math.Expm1(-rates[i] * P)
	}
	for _, s := range sites {
		s.rho /= float64(len(s.pages))
		sort.SliceStable(s.pages, func(a, b int) bool { return rates[s.pages[a]] > rates[s.pages[b]] })
	}
	take := make([]int, len(sites))
	if policy == PolicyNtoulasGreedy {
		order := make([]int, len(sites))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return sites[order[a]].rho > sites[order[b]].rho })
		left := budget
		for _, k := range order {
			n := min(left, len(sites[k].pages))
			take[k], left = n, left-n
		}
	} else {
		weights := make([]float64, len(sites))
		for k, s := range sites {
			weights[k] = s.rho * float64(len(s.pages))
		}
		take = plan.Apportion(min(budget, len(cands)), weights, func(k int) int { return len(sites[k].pages) })
	}
	var visits []Visit
	for k, s := range sites {
		for _, i := range s.pages[:take[k]] {
			visits = append(visits, Visit{Object: cands[i].Object, Due: start, Priority: -math.Expm1(-rates[i] * P)})
		}
	}
	return visits
}
