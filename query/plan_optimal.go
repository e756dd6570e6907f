package query

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/plan"
)

// Importance weights of the freshness and lambdacrawl policies
// (/v1/plan?weights=, --plan-weights).
const (
	// WeightsUniform: every object weighs 1 (the default).
	WeightsUniform = "uniform"
	// WeightsAccess: an object weighs its measured access rate, so that
	// the plan maximises the expected share of requests served fresh;
	// objects without accesses weigh 0 and get no visit.
	WeightsAccess = "access"
	// WeightsGiven: PlanConfig.Weights, by object then by site (1 when
	// neither is given).
	WeightsGiven = "given"
)

// WeightModes lists the weights= values.
var WeightModes = []string{WeightsUniform, WeightsAccess, WeightsGiven}

func validWeights(w string) bool {
	for _, m := range WeightModes {
		if w == m {
			return true
		}
	}
	return false
}

// PlanRequest is one plan's question, as /v1/plan's parameters and the
// filter mode's --plan-* options ask it.
type PlanRequest struct {
	// Policy is one of Policies; "": DefaultPolicy.
	Policy string
	// Budget is the fetches per Period; 0: PlanConfig.Budget.
	Budget int
	// Period is the plan's length; 0: PlanConfig.Period.
	Period time.Duration
	// Start is the plan's start; zero: the latest estimate's time (now
	// when there is none).
	Start time.Time
	// Site restricts the plan to one site; "": every site.
	Site string
	// Weights is one of WeightModes; "": WeightsUniform.
	Weights string
	// HostCap is the visits per host per period; -1: PlanConfig.HostCap,
	// 0: none.
	HostCap int
}

// PlanLeftOut is an object the plan does not visit in the period, and why.
type PlanLeftOut struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
}

// PlanHostCapped is a host whose politeness cap binds.
type PlanHostCapped struct {
	Host string `json:"host"`
	// Cap is the host's cap, visits per period; Wanted the visits its
	// objects would get at the price the other hosts pay.
	Cap    float64 `json:"cap"`
	Wanted float64 `json:"wanted"`
}

// Reasons of PlanLeftOut beside plan's (never changes, no weight, not
// worth a visit, host at its politeness cap).
const (
	// ReasonLaterThanPeriod: the object's visits at its allocated rate
	// fall after the period (the plan's next period visits it).
	ReasonLaterThanPeriod = "next visit after the period"
	// ReasonTrimmed: due in the period but beyond the budget's count
	// (whole visits are rounded; the lowest detection probabilities go).
	ReasonTrimmed = "beyond the budget's whole visits"
)

// PlanOmega is the ω of the plan posteriors of one site's objects
// (Candidate.Plan): Objects of them were planned with their evidence
// counted Omega times under the site's prior.
type PlanOmega struct {
	Site    string  `json:"site"`
	Omega   float64 `json:"omega"`
	Objects int     `json:"objects"`
}

// OmegaRule is why a plan posterior has its ω (PlanReport.OmegaRule).
const OmegaRule = "per site, the ω of estimators.TemperGrid with the largest summed one-step log predictive probability of " +
	"its objects' visit outcomes, (1 + d/b)^{-a} for no change over d under Gamma(α₀ + ωX, β₀ + ωE) (ties and no visits: the larger ω, 1 = the stationary posterior)"

// planOmegas lists the ω of each site's latest prior among the
// candidates (sitePriors), with the candidates planned with it.
func planOmegas(cands []Candidate) []PlanOmega {
	priors := sitePriors(cands)
	n := map[string]int{}
	for _, c := range cands {
		if _, ok := tempered(c, priors); ok {
			n[c.Site]++
		}
	}
	out := make([]PlanOmega, 0, len(n))
	for s, v := range n {
		out = append(out, PlanOmega{Site: s, Omega: priors[s].Omega, Objects: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Site < out[j].Site })
	return out
}

// sitePriors is the latest Prior (by AsOf, the later candidate on ties)
// of each site's candidates that have one: what the site's state said at
// its latest record.
func sitePriors(cands []Candidate) map[string]PlanPrior {
	out := map[string]PlanPrior{}
	for _, c := range cands {
		if !c.HasPlan {
			continue
		}
		if p, ok := out[c.Site]; !ok || !c.Prior.AsOf.Before(p.AsOf) {
			out[c.Site] = c.Prior
		}
	}
	return out
}

// tempered is candidate c's plan posterior (estimators/tempered.go T1):
// its evidence counted ω times under its site's latest prior, ok false
// without one (or with no usable Gamma).
func tempered(c Candidate, priors map[string]PlanPrior) (estimators.GammaPrior, bool) {
	if !c.HasPlan {
		return estimators.GammaPrior{}, false
	}
	p := priors[c.Site]
	g := estimators.Tempered(estimators.GammaPrior{Shape: p.Shape, Rate: p.Rate}, estimators.Evidence{X: c.Evidence[0], E: c.Evidence[1]}, p.Omega)
	m := g.Mean()
	return g, g.Shape > 0 && m > 0 && finite(m) && finite(g.Shape)
}

// PlanReport is what a plan says about itself beside its visits.
type PlanReport struct {
	// Omega lists, for the freshness policy, the ω of the posteriors the
	// objects were planned on, by site: each object's evidence (X changes
	// over an exposure E) counted ω times under its site's prior
	// Gamma(α₀, β₀), λ ~ Gamma(α₀ + ωX, β₀ + ωE) (estimators/tempered.go
	// T1), ω chosen as OmegaRule says. OmegaFallback counts the objects
	// without such a posterior (no site prior yet, or a complete
	// history), planned on the Gamma matched to their published interval.
	Omega         []PlanOmega `json:"omega,omitempty"`
	OmegaRule     string      `json:"omega_rule,omitempty"`
	OmegaFallback int         `json:"omega_fallback,omitempty"`
	// Weights is the importance weighting used (freshness, lambdacrawl).
	Weights string `json:"weights,omitempty"`
	// HostCap is the per-host cap applied, visits per period (0: none).
	HostCap int `json:"host_cap,omitempty"`
	// ExpectedFreshness is the expected time-averaged freshness of the
	// objects under the plan's visit rates, weighted by the importance
	// weights (CGM 2003's F(λ, f) = (f/λ)(1 − e^{−λ/f}) under the
	// estimates; for the per-period policies with f = visits / period).
	ExpectedFreshness float64 `json:"expected_freshness"`
	// StalenessCost is LambdaCrawl's objective: Σ wᵢ ln(1 + λᵢ/fᵢ), the
	// expected harmonic staleness penalty (1 + ½ + … + 1/n for n changes
	// missed) found at a visit, summed over the objects; absent when an
	// object with a weight that changes gets no visit (infinite).
	StalenessCost *float64 `json:"staleness_cost,omitempty"`
	// LeftOut lists every object with no visit in the period, and why.
	LeftOut []PlanLeftOut `json:"left_out"`
	// SlowerThanMaxRevisit counts the objects planned less often than
	// max_revisit: the bound never overrides the budget (freshness and
	// lambdacrawl); the optimum gives them fewer visits.
	SlowerThanMaxRevisit int `json:"slower_than_max_revisit,omitempty"`
	// CappedHosts lists the hosts whose politeness cap binds.
	CappedHosts []PlanHostCapped `json:"capped_hosts,omitempty"`
	// BudgetUnused is the budget's visits not planned, with the reason.
	BudgetUnused       int    `json:"budget_unused,omitempty"`
	BudgetUnusedReason string `json:"budget_unused_reason,omitempty"`
}

// Plan answers req over the index's objects: /v1/plan and the filter
// mode's --plan-out give the same answer on the same estimates.
func (s *Server) Plan(req PlanRequest) (*PlanResult, error) {
	pc := s.cfg.Plan
	if req.Policy == "" {
		req.Policy = DefaultPolicy
	}
	if req.Budget == 0 {
		req.Budget = pc.Budget
	}
	if req.Period == 0 {
		req.Period = pc.Period
	}
	if req.Weights == "" {
		req.Weights = WeightsUniform
	}
	if req.HostCap < 0 {
		req.HostCap = pc.HostCap
	}
	var errs []string
	known := false
	for _, p := range Policies {
		known = known || p == req.Policy
	}
	if !known {
		errs = append(errs, fmt.Sprintf("policy must be one of %s, got %q", strings.Join(Policies, ", "), req.Policy))
	}
	if !validWeights(req.Weights) {
		errs = append(errs, fmt.Sprintf("weights must be one of %s, got %q", strings.Join(WeightModes, ", "), req.Weights))
	}
	if req.Budget < 1 || req.Budget > pc.MaxBudget {
		errs = append(errs, fmt.Sprintf("budget must be in [1, %d], got %d", pc.MaxBudget, req.Budget))
	}
	if req.Period < time.Minute {
		errs = append(errs, fmt.Sprintf("period must be at least 1m, got %s", req.Period))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("query: plan: %s", strings.Join(errs, "; "))
	}
	if req.Start.IsZero() {
		req.Start = s.idx.Latest()
	}
	if req.Start.IsZero() {
		req.Start = time.Now().UTC()
	}
	req.Site = strings.ToLower(req.Site)
	res := makePlan(s.idx.Candidates(req.Site, 0), req, pc)
	return &res, nil
}

// weightOf returns candidate c's importance weight under mode.
func weightOf(c Candidate, mode string, cfg PlanConfig) float64 {
	switch mode {
	case WeightsAccess:
		if finite(c.AccessRate) && c.AccessRate > 0 {
			return c.AccessRate
		}
		return 0
	case WeightsGiven:
		if w, ok := cfg.Weights[c.Object]; ok {
			return w
		}
		if w, ok := cfg.Weights[c.Site]; ok {
			return w
		}
	}
	return 1
}

// publishedLevel is the coverage of the published intervals (ci95).
const publishedLevel = 0.95

// PlanPages returns the pages /v1/plan allocates over for the freshness
// and lambdacrawl policies (req.Policy, req.Weights): each candidate's
// planning rate (plan.PlanningRate of its rate and upper bound), its
// weight and host, and, for the freshness policy, its tempered
// posterior when it has plan evidence (Candidate.HasPlan): Gamma(α₀ + ωX,
// β₀ + ωE) with the latest prior and ω of its site among cands
// (estimators/tempered.go T1; sitePriors); without, the Gamma posterior
// matched to its interval (plan.GammaFromInterval at the published
// level) when it has one: a lower bound above 0, or the zero estimate's
// [0, hi]. A candidate with a rate above 0 but a lower bound of 0 (a
// change estimate with no change seen whose rate is not 0, e.g. the site
// prior's pooled estimate: CandidateOf ranks it at 0) is planned at its
// rate alone. The evaluation's closed loop plans on these pages
// (research/cmd/eval/closedloop.go).
func PlanPages(cands []Candidate, req PlanRequest, cfg PlanConfig) []plan.Page {
	rates := make([]float64, len(cands))
	for i, c := range cands {
		rates[i] = plan.PlanningRate(c.Rate, c.Hi)
	}
	return planPages(cands, rates, req, cfg)
}

// planPages is PlanPages with the planning rates computed (makePlan's).
func planPages(cands []Candidate, rates []float64, req PlanRequest, cfg PlanConfig) []plan.Page {
	pages := make([]plan.Page, len(cands))
	fits := map[[2]float64][2]float64{} // the posterior of an interval, once per distinct interval
	var priors map[string]PlanPrior
	if req.Policy == PolicyFreshness {
		priors = sitePriors(cands)
	}
	for i, c := range cands {
		pages[i] = plan.Page{Rate: rates[i], Weight: weightOf(c, req.Weights, cfg), Host: c.Site}
		if g, ok := tempered(c, priors); ok && req.Policy == PolicyFreshness {
			// The tempered posterior (issue 33): the object's evidence
			// counted ω times under its site's latest prior, ω by the
			// site's visits' predictive likelihood (estimators/
			// tempered.go T1–T3).
			pages[i].Rate, pages[i].Shape = g.Mean(), g.Shape
			continue
		}
		// Without one (no site prior, a complete history), a posterior
		// needs an interval: one with Lo > 0, or the zero
		// estimate's [0, Hi] (no change seen; the exponential posterior).
		if req.Policy != PolicyFreshness || !(rates[i] > 0) || !(c.Lo > 0 || c.Rate == 0) {
			continue
		}
		// The freshness policy maximises the expected freshness under the
		// posterior of λ matched to the published 95 % interval (issue
		// 33: a point estimate sends no visit to pages that have not
		// changed yet and over-trusts a few changes).
		key := [2]float64{c.Lo, c.Hi}
		g, seen := fits[key]
		if !seen {
			if m, a, ok := plan.GammaFromInterval(c.Lo, c.Hi, publishedLevel); ok {
				g = [2]float64{m, a}
			}
			fits[key] = g
		}
		if g[0] > 0 {
			pages[i].Rate, pages[i].Shape = g[0], g[1]
		}
	}
	return pages
}

// optimalPlan is the freshness and lambdacrawl policies: plan.Allocate's
// visit rates fᵢ (per second) for the budget per period, within
// 1/MinRevisit and the host caps; each object's visits fall every 1/fᵢ from
// its latest visit (the first at the start when overdue), those inside the
// period planned, the whole visits beyond the budget trimmed by detection
// probability.
func optimalPlan(res PlanResult, cands []Candidate, rates []float64, req PlanRequest, cfg PlanConfig) PlanResult {
	P := req.Period.Seconds()
	pages := planPages(cands, rates, req, cfg)
	ac := plan.AllocConfig{Policy: plan.PolicyFreshness, Budget: float64(req.Budget) / P, MaxRate: 1 / cfg.MinRevisit.Seconds()}
	if req.Policy == PolicyLambdaCrawl {
		ac.Policy = plan.PolicyLambdaCraw
	}
	if req.HostCap > 0 {
		ac.HostCap = float64(req.HostCap) / P
	}
	for h, v := range cfg.HostCaps {
		if ac.HostCaps == nil {
			ac.HostCaps = map[string]float64{}
		}
		ac.HostCaps[h] = float64(v) / P
	}
	res.Weights, res.HostCap = req.Weights, req.HostCap
	if req.Policy == PolicyFreshness {
		res.Omega, res.OmegaRule, res.OmegaFallback = planOmegas(cands), OmegaRule, 0
		for _, o := range res.Omega {
			res.OmegaFallback -= o.Objects
		}
		res.OmegaFallback += len(cands)
	}
	a, err := plan.Allocate(pages, ac)
	if err != nil { // the request was validated: a defect
		panic(err)
	}
	res.ExpectedFreshness = a.Freshness
	if !math.IsInf(a.Cost, 0) {
		c := a.Cost
		res.StalenessCost = &c
	}
	leftOut := map[int]string{}
	for _, l := range a.LeftOut {
		leftOut[l.Page] = l.Reason
	}
	for _, h := range a.Capped {
		res.CappedHosts = append(res.CappedHosts, PlanHostCapped{Host: h.Host, Cap: h.Cap * P, Wanted: h.Wanted * P})
	}
	end := req.Start.Add(req.Period)
	var visits []Visit
	for i, c := range cands {
		f := a.Rate[i]
		if !(f > 0) {
			continue
		}
		iv := 1 / f
		if iv > cfg.MaxRevisit.Seconds() {
			res.SlowerThanMaxRevisit++
		}
		last := minTime(c.AsOf, req.Start)
		if iv > end.Sub(last).Seconds() {
			// the first visit falls after the period (and 1/f may be far
			// beyond what a time.Duration holds: the posterior gives
			// every object a rate, some of them tiny)
			leftOut[i] = ReasonLaterThanPeriod
			continue
		}
		first := last.Add(dur(iv))
		if first.Before(req.Start) {
			first = req.Start
		}
		if first.After(end) {
			leftOut[i] = ReasonLaterThanPeriod
			continue
		}
		prev := last
		for t := first; !t.After(end); t = t.Add(dur(iv)) {
			visits = append(visits, Visit{Object: c.Object, Due: t, Priority: -math.Expm1(-rates[i] * t.Sub(prev).Seconds())})
			prev = t
		}
	}
	sort.SliceStable(visits, func(i, j int) bool { return visits[i].Priority > visits[j].Priority })
	if len(visits) > req.Budget {
		kept := map[string]bool{}
		for _, v := range visits[:req.Budget] {
			kept[v.Object] = true
		}
		for _, v := range visits[req.Budget:] {
			if !kept[v.Object] {
				kept[v.Object] = true // once
				for i, c := range cands {
					if c.Object == v.Object {
						leftOut[i] = ReasonTrimmed
						break
					}
				}
			}
		}
		visits = visits[:req.Budget]
	}
	if n := req.Budget - len(visits); n > 0 {
		res.BudgetUnused = n
		res.BudgetUnusedReason = "the allocated rates put fewer whole visits in this period (the next periods use them)"
		if a.Unspent {
			res.BudgetUnusedReason = "the revisit bound and host caps allow no more visits"
		}
	}
	res.setVisits(visits)
	idx := make([]int, 0, len(leftOut))
	for i := range leftOut {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		res.LeftOut = append(res.LeftOut, PlanLeftOut{Object: cands[i].Object, Reason: leftOut[i]})
	}
	return res
}

// expectedFreshness fills the report of the per-period policies: the
// freshness of uniform weights at f = visits / period, and every object
// without a visit as left out by the policy.
func (res *PlanResult) expectedFreshness(cands []Candidate, rates []float64, _ []float64, P float64) {
	n := map[string]int{}
	for _, v := range res.Visits {
		n[v.Object]++
	}
	sum := 0.0
	for i, c := range cands {
		sum += plan.Freshness(rates[i], float64(n[c.Object])/P)
		if n[c.Object] == 0 {
			res.LeftOut = append(res.LeftOut, PlanLeftOut{Object: c.Object, Reason: "no visit under the policy in this period"})
		}
	}
	if len(cands) > 0 {
		res.ExpectedFreshness = sum / float64(len(cands))
	}
}
