package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// This file holds the revisit-rate allocations of a budget B of visits per
// unit time over pages that change as Poisson processes of known rates:
//
//   - Freshness (Cho & Garcia-Molina, "Effective page refresh policies for
//     Web crawlers", ACM TODS 2003): maximise the time-averaged weighted
//     freshness Σ wᵢ F(λᵢ, fᵢ), F(λ, f) = (f/λ)(1 − e^{−λ/f}), subject to
//     Σ fᵢ = B, fᵢ ≥ 0. The Lagrangian's stationarity condition is
//     wᵢ ∂F/∂f = μ with ∂F/∂f = (1 − e^{−x}(1 + x))/λ, x = λ/f, which falls
//     from w/λ at f → 0 to 0 at f → ∞: a page with wᵢ/λᵢ ≤ μ is not worth a
//     visit and gets fᵢ = 0 (the KKT condition of the bound fᵢ ≥ 0).
//   - LambdaCrawl (Kolobov, Peres, Lu & Horvitz, NeurIPS 2019, the
//     incomplete-change-observation case: changes seen only at visits):
//     minimise the harmonic staleness cost, maximise Σ μᵢ ln(ρᵢ/(ρᵢ + Δᵢ))
//     subject to Σ ρᵢ = R, whose stationarity condition μᵢΔᵢ/(ρᵢ(ρᵢ+Δᵢ)) = λ
//     gives ρᵢ = (−Δᵢ + √(Δᵢ² + 4μᵢΔᵢ/λ))/2.
//   - Power: fᵢ ∝ wᵢ·λᵢ^p (p = 0 uniform, ½ CGM's √λ, 1 proportional).
//
// Each policy is a response fᵢ(ν) of a page to a price ν of a visit,
// non-increasing in ν; the price is found by bisection so that the budget
// is spent. A per-page upper bound (the shortest revisit interval) clips
// the response; a per-host politeness cap (visits per host per unit time)
// raises the price inside the host until its pages fit (ν_h ≥ ν: the KKT
// multiplier of the host's constraint is ν_h − ν), which is exact for these
// separable concave problems.

// ErrAlloc is wrapped by every error of Allocate.
var ErrAlloc = errors.New("plan: invalid allocation")

// Allocation policies.
const (
	PolicyFreshness  = "freshness"
	PolicyLambdaCraw = "lambdacrawl"
	PolicyPower      = "power"
)

// Page is one page to allocate visits to.
type Page struct {
	// Rate is λ, changes per unit time; 0 or less: never changes.
	Rate float64
	// Weight is the page's importance w (μ in LambdaCrawl); 0 or less:
	// not worth a visit.
	Weight float64
	// Host is the page's host for the politeness caps.
	Host string
	// Shape, when > 0 and finite, says the rate is uncertain: λ ~
	// Gamma(Shape, Shape/Rate), Rate its posterior mean, and the freshness
	// policy maximises the expected freshness over it (posterior.go).
	// 0: Rate is known. The other policies plan at Rate.
	Shape float64
}

// uncertain reports whether p's rate has a Gamma posterior.
func (p Page) uncertain() bool { return p.Shape > 0 && !math.IsInf(p.Shape, 1) && p.Rate > 0 }

// expected is p's expected freshness at visit rate f.
func (p Page) expected(f float64) float64 {
	if p.uncertain() {
		return ExpectedFreshness(p.Rate, p.Shape, f)
	}
	return Freshness(p.Rate, f)
}

// AllocConfig is an allocation's budget and bounds, in the pages' unit of
// time.
type AllocConfig struct {
	// Policy is PolicyFreshness, PolicyLambdaCraw or PolicyPower.
	Policy string
	// Exponent is PolicyPower's p (fᵢ ∝ wᵢ·λᵢ^p).
	Exponent float64
	// Budget is B, visits per unit time; must be > 0.
	Budget float64
	// MaxRate bounds every page's visit rate (1 / the shortest revisit
	// interval); 0: none.
	MaxRate float64
	// HostCap bounds the visit rate of every host (politeness); 0: none.
	// HostCaps overrides it per host.
	HostCap  float64
	HostCaps map[string]float64
}

// Validate reports every problem of c at once.
func (c AllocConfig) Validate() error {
	var errs []error
	switch c.Policy {
	case PolicyFreshness, PolicyLambdaCraw, PolicyPower:
	default:
		errs = append(errs, fmt.Errorf("%w: Policy %q (want %s, %s or %s)", ErrAlloc, c.Policy, PolicyFreshness, PolicyLambdaCraw, PolicyPower))
	}
	if !(c.Budget > 0) || math.IsInf(c.Budget, 0) {
		errs = append(errs, fmt.Errorf("%w: Budget %v must be positive and finite", ErrAlloc, c.Budget))
	}
	if !(c.MaxRate >= 0) {
		errs = append(errs, fmt.Errorf("%w: MaxRate %v must be >= 0", ErrAlloc, c.MaxRate))
	}
	if !(c.HostCap >= 0) {
		errs = append(errs, fmt.Errorf("%w: HostCap %v must be >= 0", ErrAlloc, c.HostCap))
	}
	for h, v := range c.HostCaps {
		if !(v > 0) {
			errs = append(errs, fmt.Errorf("%w: HostCaps[%q] %v must be > 0", ErrAlloc, h, v))
		}
	}
	if math.IsNaN(c.Exponent) || math.IsInf(c.Exponent, 0) {
		errs = append(errs, fmt.Errorf("%w: Exponent %v", ErrAlloc, c.Exponent))
	}
	return errors.Join(errs...)
}

// capOf returns host h's cap, +Inf when none.
func (c AllocConfig) capOf(h string) float64 {
	if v, ok := c.HostCaps[h]; ok {
		return v
	}
	if c.HostCap > 0 {
		return c.HostCap
	}
	return math.Inf(1)
}

// Reasons a page gets no visit.
const (
	ReasonNeverChanges = "never changes"              // λ = 0: always fresh
	ReasonNoWeight     = "no weight"                  // w = 0: nobody values it
	ReasonNotWorth     = "not worth a visit"          // freshness: w/λ ≤ μ
	ReasonHostCap      = "host at its politeness cap" // the host's price shut it out
)

// LeftOut is a page with no visit and why.
type LeftOut struct {
	Page   int
	Reason string
}

// HostCapped is a host whose politeness cap binds.
type HostCapped struct {
	Host string
	// Cap is the host's cap; Wanted the visit rate its pages would get
	// without it.
	Cap, Wanted float64
	// Price is the host's multiplier ν_h (≥ the global price).
	Price float64
}

// Allocation is a policy's answer.
type Allocation struct {
	// Rate is fᵢ, visits per unit time of every page.
	Rate []float64
	// Price is the budget's Lagrange multiplier (μ of CGM, λ of
	// LambdaCrawl; for PolicyPower the inverse of the proportionality
	// constant).
	Price float64
	// Spent is Σ fᵢ: the budget, or less when the bounds and caps allow
	// no more (Unspent says so).
	Spent   float64
	Unspent bool
	// Freshness is the expected time-averaged freshness Σ wᵢF(λᵢ,fᵢ)/Σ wᵢ
	// over the pages with a positive weight (1 for pages that never
	// change); FreshnessUnweighted the plain mean over all pages.
	Freshness, FreshnessUnweighted float64
	// Cost is LambdaCrawl's expected harmonic staleness cost per unit time,
	// Σ wᵢ ln(1 + λᵢ/fᵢ) over the pages with wᵢλᵢ > 0; +Inf when such a
	// page gets no visit (its staleness grows without bound).
	Cost float64
	// LeftOut lists the pages with no visit, by page index.
	LeftOut []LeftOut
	// Capped lists the hosts whose cap binds, by name.
	Capped []HostCapped
}

// Freshness is F(λ, f) = (f/λ)(1 − e^{−λ/f}) (CGM 2003), the expected
// time-averaged freshness of a page changing at rate λ visited every 1/f:
// 1 when λ ≤ 0, 0 when f ≤ 0 < λ.
func Freshness(rate, f float64) float64 {
	switch {
	case !(rate > 0):
		return 1
	case !(f > 0):
		return 0
	}
	x := rate / f
	return -math.Expm1(-x) / x
}

// freshnessSlope is ∂F/∂f = (1 − e^{−x}(1 + x))/λ at x = λ/f.
func freshnessSlope(rate, f float64) float64 {
	if !(f > 0) {
		return 1 / rate
	}
	x := rate / f
	return g(x) / rate
}

// g(x) = 1 − e^{−x}(1 + x), increasing from 0 to 1 on (0, ∞); computed
// without cancellation for small x.
func g(x float64) float64 {
	if x < 1e-3 {
		return x * x / 2 * (1 - 2*x/3 + x*x/4)
	}
	return -math.Expm1(-x) - x*math.Exp(-x)
}

// ginv solves g(x) = c for c ∈ (0, 1): safeguarded Newton (g' = x·e^{−x})
// from x₀ = √(2c) for small c and −ln(1−c) + ln(1 + x) otherwise.
func ginv(c float64) float64 {
	lo, hi := 0.0, math.Inf(1)
	x := math.Sqrt(2 * c)
	if c > 0.1 {
		x = -math.Log1p(-c)
		x += math.Log1p(x)
	}
	for i := 0; i < 100; i++ {
		d := g(x) - c
		if d < 0 {
			lo = x
		} else {
			hi = x
		}
		step := d / (x * math.Exp(-x))
		nx := x - step
		if !(nx > lo && nx < hi) {
			if math.IsInf(hi, 1) {
				nx = 2 * x
			} else {
				nx = (lo + hi) / 2
			}
		}
		if math.Abs(nx-x) <= 1e-13*x {
			return nx
		}
		x = nx
	}
	return x
}

// response is page p's unclipped visit rate at price ν > 0.
func response(cfg *AllocConfig, p Page, nu float64) float64 {
	if !(p.Weight > 0) {
		return 0
	}
	switch cfg.Policy {
	case PolicyFreshness:
		if p.uncertain() {
			return expectedResponse(p.Rate, p.Shape, p.Weight, nu)
		}
		if !(p.Rate > 0) || p.Weight/p.Rate <= nu {
			return 0
		}
		return p.Rate / ginv(nu*p.Rate/p.Weight)
	case PolicyLambdaCraw:
		if !(p.Rate > 0) {
			return 0
		}
		d := p.Rate
		return (-d + math.Sqrt(d*d+4*p.Weight*d/nu)) / 2
	default: // PolicyPower
		if !(p.Rate > 0) && cfg.Exponent != 0 {
			return 0
		}
		return p.Weight * math.Pow(math.Max(p.Rate, 0), cfg.Exponent) / nu
	}
}

func (cfg *AllocConfig) clip(f float64) float64 {
	if cfg.MaxRate > 0 && f > cfg.MaxRate {
		return cfg.MaxRate
	}
	return f
}

// priceFor returns the price ν at which sum(ν) = target (the smallest
// with sum(ν) ≤ target when sum jumps over it), sum non-increasing in ν:
// the Illinois variant of regula falsi on log ν, which keeps a bracket,
// safeguarded by bisection.
func priceFor(sum func(float64) float64, target float64) float64 {
	lo, hi := -690.0, 0.0 // log ν; e^{−690} ≈ 1e−300
	shi := sum(math.Exp(hi)) - target
	for shi > 0 {
		lo, hi = hi, hi+7
		if hi > 690 {
			return math.Exp(hi)
		}
		shi = sum(math.Exp(hi)) - target
	}
	slo := sum(math.Exp(lo)) - target
	if slo <= 0 {
		return math.Exp(lo)
	}
	side := 0
	width := [2]float64{math.Inf(1), math.Inf(1)} // the bracket two and one steps ago
	for i := 0; i < 400 && hi-lo > 1e-13; i++ {
		m := (lo*shi - hi*slo) / (shi - slo)
		// Bisect when the false position stalls: the bracket did not
		// halve over the last two steps (the sums span many orders of
		// magnitude at the bracket's ends).
		if !(m > lo && m < hi) || math.IsInf(slo, 0) || hi-lo > width[0]/2 {
			m = (lo + hi) / 2
		}
		width[0], width[1] = width[1], hi-lo
		sm := sum(math.Exp(m)) - target
		if math.Abs(sm) <= 1e-13*target {
			return math.Exp(m)
		}
		if sm > 0 {
			lo, slo = m, sm
			if side == -1 {
				shi /= 2
			}
			side = -1
		} else {
			hi, shi = m, sm
			if side == 1 {
				slo /= 2
			}
			side = 1
		}
	}
	return math.Exp(hi)
}

// Allocate splits cfg.Budget visits per unit time over pages by cfg's
// policy within the page bound and the host caps, and says what it left
// out and why.
func Allocate(pages []Page, cfg AllocConfig) (Allocation, error) {
	if err := cfg.Validate(); err != nil {
		return Allocation{}, err
	}
	hosts := map[string][]int{}
	var names []string
	for i, p := range pages {
		if _, ok := hosts[p.Host]; !ok {
			names = append(names, p.Host)
		}
		hosts[p.Host] = append(hosts[p.Host], i)
	}
	sort.Strings(names)
	hostSum := func(idx []int, nu float64) float64 {
		s := 0.0
		for _, i := range idx {
			s += cfg.clip(response(&cfg, pages[i], nu))
		}
		return s
	}
	// hostPrice is the host's price at the global price ν: ν, or higher
	// when the cap binds.
	hostPrice := func(h string, nu float64) float64 {
		c := cfg.capOf(h)
		if math.IsInf(c, 1) || hostSum(hosts[h], nu) <= c {
			return nu
		}
		return math.Max(nu, priceFor(func(v float64) float64 { return hostSum(hosts[h], v) }, c))
	}
	total := func(nu float64) float64 {
		s := 0.0
		for _, h := range names {
			s += hostSum(hosts[h], hostPrice(h, nu))
		}
		return s
	}
	a := Allocation{Rate: make([]float64, len(pages))}
	if len(pages) == 0 {
		a.Freshness, a.FreshnessUnweighted, a.Unspent = 1, 1, true
		return a, nil
	}
	nu := priceFor(total, cfg.Budget)
	a.Price = nu
	for _, h := range names {
		hp := hostPrice(h, nu)
		for _, i := range hosts[h] {
			a.Rate[i] = cfg.clip(response(&cfg, pages[i], hp))
		}
		if hp > nu {
			a.Capped = append(a.Capped, HostCapped{Host: h, Cap: cfg.capOf(h), Wanted: hostSum(hosts[h], nu), Price: hp})
		}
	}
	// The bisection leaves Σf within a relative 1e-13 of B; when the
	// bounds and caps cannot absorb the budget (the price fell to its
	// floor) it is spent only partly.
	for _, f := range a.Rate {
		a.Spent += f
	}
	a.Unspent = a.Spent < cfg.Budget*(1-1e-9)
	capped := map[string]bool{}
	for _, c := range a.Capped {
		capped[c.Host] = true
	}
	var wsum, wf, uf float64
	a.Cost = 0
	for i, p := range pages {
		F := Freshness(p.Rate, a.Rate[i])
		if cfg.Policy == PolicyFreshness {
			F = p.expected(a.Rate[i])
		}
		uf += F
		if p.Weight > 0 {
			wsum += p.Weight
			wf += p.Weight * F
			if p.Rate > 0 {
				if a.Rate[i] > 0 {
					a.Cost += p.Weight * math.Log1p(p.Rate/a.Rate[i])
				} else {
					a.Cost = math.Inf(1)
				}
			}
		}
		if a.Rate[i] > 0 {
			continue
		}
		r := ReasonNotWorth
		switch {
		case !(p.Rate > 0):
			r = ReasonNeverChanges
		case !(p.Weight > 0):
			r = ReasonNoWeight
		case capped[p.Host] && response(&cfg, p, nu) > 0:
			r = ReasonHostCap
		}
		a.LeftOut = append(a.LeftOut, LeftOut{Page: i, Reason: r})
	}
	a.FreshnessUnweighted = uf / float64(len(pages))
	a.Freshness = 1
	if wsum > 0 {
		a.Freshness = wf / wsum
	}
	return a, nil
}

// PlanningRate is the rate a page is planned at from its estimate: the
// estimate, or its interval's upper bound hi when the estimate is 0 (no
// change seen yet). A page planned at 0 never changes for the allocation,
// gets no visit and so never shows the change that would correct it; the
// upper bound (what the visits so far cannot exclude) keeps it visited, at
// a rate that falls as unchanged visits accumulate. Negative or non-finite
// values count as 0.
func PlanningRate(rate, hi float64) float64 {
	if rate > 0 && !math.IsInf(rate, 0) {
		return rate
	}
	if hi > 0 && !math.IsInf(hi, 0) {
		return hi
	}
	return 0
}
