package query

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/changerate/changerate/plan"
)

// TestBoundedAllocate: CGM's f ∝ √λ with the revisit bounds — an object
// whose share exceeds 1/MinRevisit is held there and the rest of the budget
// is shared ∝ √λ among the others; the frequencies sum to the budget.
func TestBoundedAllocate(t *testing.T) {
	cfg := PlanConfig{MinRevisit: 10 * time.Minute, MaxRevisit: 720 * time.Hour}.WithDefaults()
	rates := []float64{1, 1e-4, 4e-4, 9e-4} // √: 1, 0.01, 0.02, 0.03
	total := 200.0 / 86400                  // 200 visits a day
	f := make([]float64, len(rates))
	boundedAllocate(rates, total, cfg, f)
	fmax := 1 / cfg.MinRevisit.Seconds()
	if math.Abs(f[0]-fmax) > 1e-15 {
		t.Fatalf("f[0] = %g, want the bound %g", f[0], fmax)
	}
	rest := total - fmax
	for i, w := range []float64{0.01, 0.02, 0.03} {
		if want := rest * w / 0.06; math.Abs(f[i+1]-want) > 1e-12*want {
			t.Errorf("f[%d] = %g, want %g (∝ √λ of what the bound left)", i+1, f[i+1], want)
		}
	}
	sum := 0.0
	for _, v := range f {
		sum += v
	}
	if math.Abs(sum-total) > 1e-12*total {
		t.Errorf("Σf = %g, budget %g", sum, total)
	}
}

// TestNtoulas: the site-level policies rank (greedy) or weigh
// (proportional) sites by the expected change ratio over the period.
func TestNtoulas(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var cands []Candidate
	var rates []float64
	add := func(site string, n int, rate float64) {
		for i := 0; i < n; i++ {
			cands = append(cands, Candidate{Object: fmt.Sprintf("http://%s/%d", site, i), Site: site, Rate: rate, AsOf: start})
			rates = append(rates, rate)
		}
	}
	add("fast.example", 3, 1e-4) // ρ = 1 − e^{−8.64} ≈ 1
	add("slow.example", 5, 1e-6) // ρ ≈ 0.083
	add("mid.example", 4, 1e-5)  // ρ ≈ 0.58
	P := 86400.0
	count := func(v []Visit) map[string]int {
		m := map[string]int{}
		for _, x := range v {
			m[x.Object[7:11]]++
		}
		return m
	}
	g := count(ntoulas(cands, rates, PolicyNtoulasGreedy, 5, start, P))
	if g["fast"] != 3 || g["mid."] != 2 || g["slow"] != 0 {
		t.Fatalf("greedy: %v, want all 3 pages of the fastest site, then 2 of the next", g)
	}
	rho := func(r float64) float64 { return -math.Expm1(-r * P) }
	want := plan.Apportion(6, []float64{3 * rho(1e-4), 5 * rho(1e-6), 4 * rho(1e-5)}, func(k int) int { return []int{3, 5, 4}[k] })
	p := count(ntoulas(cands, rates, PolicyNtoulasProportional, 6, start, P))
	if p["fast"] != want[0] || p["slow"] != want[1] || p["mid."] != want[2] {
		t.Fatalf("proportional: %v, want %v (fast, slow, mid)", p, want)
	}
}

// TestOptimalPlan: the freshness policy through the request path — host
// caps hold in the visits listed, access weights leave out objects nobody
// requests, and the expected freshness is plan.Allocate's.
func TestOptimalPlan(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var cands []Candidate
	for i := 0; i < 12; i++ {
		site := "a.example"
		if i%3 == 0 {
			site = "b.example"
		}
		c := Candidate{Object: fmt.Sprintf("http://%s/%d", site, i), Site: site, Rate: float64(i+1) / 86400, AsOf: start}
		if i%4 != 0 {
			c.AccessRate = float64(i) / 3600
		}
		cands = append(cands, c)
	}
	rates := make([]float64, len(cands))
	for i, c := range cands {
		rates[i] = c.Rate
	}
	cfg := PlanConfig{}.WithDefaults()
	req := PlanRequest{Policy: PolicyFreshness, Budget: 30, Period: 24 * time.Hour, Start: start, Weights: WeightsUniform, HostCap: 8}
	res := makePlan(cands, req, cfg)
	per := map[string]int{}
	for _, v := range res.Visits {
		per[v.Object[7:16]]++
	}
	if per["b.example"] > 8 || per["a.example"] > 8 {
		t.Errorf("visits per host %v over the cap 8", per)
	}
	if len(res.CappedHosts) == 0 {
		t.Errorf("no capped host reported with 16 visits allowed of a budget of 30")
	}
	pages := make([]plan.Page, len(cands))
	for i, c := range cands {
		pages[i] = plan.Page{Rate: c.Rate, Weight: 1, Host: c.Site}
	}
	a, err := plan.Allocate(pages, plan.AllocConfig{Policy: plan.PolicyFreshness, Budget: 30.0 / 86400, MaxRate: 1 / cfg.MinRevisit.Seconds(), HostCap: 8.0 / 86400})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Freshness-res.ExpectedFreshness) > 1e-12 {
		t.Errorf("expected freshness %g, plan.Allocate's %g", res.ExpectedFreshness, a.Freshness)
	}
	req.Weights, req.HostCap = WeightsAccess, 0
	res = makePlan(cands, req, cfg)
	out := map[string]string{}
	for _, l := range res.LeftOut {
		out[l.Object] = l.Reason
	}
	for i, c := range cands {
		if i%4 == 0 && out[c.Object] != plan.ReasonNoWeight {
			t.Errorf("%s has no accesses: left out %q, want %q", c.Object, out[c.Object], plan.ReasonNoWeight)
		}
	}
	for _, v := range res.Visits {
		if out[v.Object] != "" {
			t.Errorf("%s is visited and listed as left out (%s)", v.Object, out[v.Object])
		}
	}
}

// TestOptimalPlanZeroAndMaxRevisit: an object whose estimate is 0 is
// planned at its upper bound (never left out as never changing), and
// MaxRevisit does not force visits beyond the optimum: with N/30 visits a
// day, the optimum leaves the fastest objects without a visit in 30 days
// (not worth one), where forcing the bound would visit every object once.
func TestOptimalPlanZeroAndMaxRevisit(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var cands []Candidate
	for i := 0; i < 60; i++ {
		rate := math.Pow(10, -7+3*float64(i)/60) // 1e-7 … 1e-4 per second
		cands = append(cands, Candidate{Object: fmt.Sprintf("http://a.example/%d", i), Site: "a.example", Rate: rate, Hi: 2 * rate, AsOf: start})
	}
	cands[0].Rate, cands[0].Hi = 0, 1e-6
	rates := make([]float64, len(cands))
	for i, c := range cands {
		rates[i] = plan.PlanningRate(c.Rate, c.Hi)
	}
	cfg := PlanConfig{}.WithDefaults()
	res := makePlan(cands, PlanRequest{Policy: PolicyFreshness, Budget: 60, Period: 30 * 24 * time.Hour, Start: start, Weights: WeightsUniform}, cfg)
	for _, l := range res.LeftOut {
		if l.Object == cands[0].Object && l.Reason == plan.ReasonNeverChanges {
			t.Errorf("the zero estimate is left out as never changing")
		}
	}
	notWorth := 0
	for _, l := range res.LeftOut {
		if l.Reason == plan.ReasonNotWorth {
			notWorth++
		}
	}
	if notWorth == 0 {
		t.Errorf("every object visited within the 30-day MaxRevisit (60 visits per 30 days over 60 objects of rates 1e-7…1e-4/s): the bound forced the plan to uniform")
	}
	if len(res.Visits) == 0 || len(res.Visits) > 60 {
		t.Errorf("%d visits for a budget of 60", len(res.Visits))
	}
}

// The freshness policy plans on each object's posterior matched to its
// published interval: the rates are plan.Allocate's on those Gamma pages,
// and an object with no change seen ([0, Hi]) gets visits.
func TestOptimalPlanPosterior(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var cands []Candidate
	for i := 0; i < 20; i++ {
		r := float64(i+1) / 86400 / 10
		cands = append(cands, Candidate{Object: fmt.Sprintf("http://a.example/%d", i), Site: "a.example", Rate: r, Lo: r / 3, Hi: r * 2.5, AsOf: start})
	}
	cands = append(cands, Candidate{Object: "http://a.example/new", Site: "a.example", Rate: 0, Hi: 1.0 / 86400, AsOf: start})
	rates := make([]float64, len(cands))
	pages := make([]plan.Page, len(cands))
	for i, c := range cands {
		rates[i] = plan.PlanningRate(c.Rate, c.Hi)
		m, a, ok := plan.GammaFromInterval(c.Lo, c.Hi, 0.95)
		if !ok {
			t.Fatalf("%s: no posterior", c.Object)
		}
		pages[i] = plan.Page{Rate: m, Shape: a, Weight: 1, Host: c.Site}
	}
	cfg := PlanConfig{}.WithDefaults()
	res := makePlan(cands, PlanRequest{Policy: PolicyFreshness, Budget: 10, Period: 24 * time.Hour, Start: start, Weights: WeightsUniform}, cfg)
	a, err := plan.Allocate(pages, plan.AllocConfig{Policy: plan.PolicyFreshness, Budget: 10.0 / 86400, MaxRate: 1 / cfg.MinRevisit.Seconds()})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Freshness-res.ExpectedFreshness) > 1e-12 {
		t.Errorf("expected freshness %g, plan.Allocate's on the posteriors %g", res.ExpectedFreshness, a.Freshness)
	}
	if !(a.Rate[len(cands)-1] > 0) {
		t.Errorf("the object with no change seen gets no visit rate")
	}
}

// TestPlanReportsOmega: a freshness plan plans every candidate with
// plan evidence under its site's latest prior and ω (by as-of), lists that
// ω by site with the candidates planned with it, the rule, and the
// candidates without one; other policies report none.
func TestPlanReportsOmega(t *testing.T) {
	cfg := PlanConfig{}.WithDefaults()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	old, late := start.Add(-48*time.Hour), start.Add(-time.Hour)
	pr := func(w float64, at time.Time) PlanPrior { return PlanPrior{Shape: 0.5, Rate: 5e5, Omega: w, AsOf: at} }
	ev := [2]float64{2, 4e6}
	cands := []Candidate{
		{Object: "a1", Site: "a", Rate: 1e-6, Hi: 2e-6, AsOf: old, Evidence: ev, Prior: pr(1, old), HasPlan: true},
		{Object: "a2", Site: "a", Rate: 1e-6, Hi: 2e-6, AsOf: late, Evidence: ev, Prior: pr(0.2, late), HasPlan: true},
		{Object: "a3", Site: "a", Rate: 1e-6, Hi: 2e-6, AsOf: old, Evidence: ev, Prior: pr(0.5, old), HasPlan: true},
		{Object: "b1", Site: "b", Rate: 1e-6, Hi: 2e-6, AsOf: old, Evidence: ev, Prior: pr(0.05, old), HasPlan: true},
		{Object: "c1", Site: "c", Rate: 1e-6, Lo: 5e-7, Hi: 2e-6, AsOf: start},
	}
	req := PlanRequest{Policy: PolicyFreshness, Budget: 10, Period: 24 * time.Hour, Start: start, Weights: WeightsUniform}
	res := makePlan(cands, req, cfg)
	want := []PlanOmega{{"a", 0.2, 3}, {"b", 0.05, 1}}
	if fmt.Sprint(res.Omega) != fmt.Sprint(want) || res.OmegaFallback != 1 || res.OmegaRule != OmegaRule {
		t.Errorf("ω %+v, fallback %d, rule %q; want %+v and 1", res.Omega, res.OmegaFallback, res.OmegaRule, want)
	}
	// Every page of site a at ω 0.2 (its latest), Gamma(0.5 + 0.2·2,
	// 5e5 + 0.2·4e6): exact arithmetic of the same operations.
	pages := PlanPages(cands, req, cfg)
	for k := 0; k < 3; k++ {
		a, b := 0.5+0.2*2, 5e5+0.2*4e6
		if pages[k].Shape != a || pages[k].Rate != a/b {
			t.Errorf("%s: planned on %+v, want Gamma(%v, %v)", cands[k].Object, pages[k], a, b)
		}
	}
	req.Policy = PolicyLambdaCrawl
	if res := makePlan(cands, req, cfg); res.Omega != nil || res.OmegaFallback != 0 {
		t.Errorf("lambdacrawl reports ω %+v, fallback %d", res.Omega, res.OmegaFallback)
	}
}
