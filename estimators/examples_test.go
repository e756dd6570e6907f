package estimators

import (
	"math"
	"testing"
)

const (
	hour = 3600.0
	day  = 86400.0
	week = 7 * day
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %.2g", what, got, want, tol)
	}
}

func mustCfg(t testing.TB) *Config {
	t.Helper()
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// regular builds a Change from daily visits with the given changed flags.
func regular(interval float64, changed []bool) *Change {
	var c Change
	c.Visit(Visit{Time: 1e9})
	for i, ch := range changed {
		c.Visit(Visit{Time: 1e9 + float64(i+1)*interval, Changed: ch})
	}
	return &c
}

// CGM Example 1: 6 changes in 10 daily visits. Naive 0.6/day; improved
// −log(4.5/10.5) = 0.8473/day ("0.8 times per day").
func TestCGMExample1(t *testing.T) {
	cfg := mustCfg(t)
	ch := []bool{true, true, false, true, false, true, true, false, false, true}
	c := regular(day, ch)
	var out Estimates
	pub, ok := c.Estimate(1e9+10*day, cfg, &out)
	if !ok || pub.Key != KeyBayesBeta {
		t.Fatalf("best = %+v %v, want bayes_beta (regular, %d changes in 10 visits: lowest risk, best.go B6)", pub, ok, c.Changes())
	}
	best, _ := out.Get(KeyCGMImproved)
	nv, _ := out.Get(KeyNaive)
	near(t, "naive per day", nv.Rate*day, 0.6, 1e-12)
	near(t, "improved per day", best.Rate*day, -math.Log(4.5/10.5), 1e-12)
	near(t, "improved rounded", math.Round(best.Rate*day*10)/10, 0.8, 0)
	if !(best.Lo < best.Rate && best.Rate < best.Hi) {
		t.Errorf("CI %v..%v does not contain %v", best.Lo, best.Hi, best.Rate)
	}
	// Clopper–Pearson for 6/10: θ ∈ [0.26238, 0.87845] (exact binomial).
	near(t, "CI lo per day", best.Lo*day, -math.Log(1-0.2623781), 1e-5)
	near(t, "CI hi per day", best.Hi*day, -math.Log(1-0.8784477), 1e-5)
	bb, _ := out.Get(KeyBayesBeta)
	near(t, "bayes per day", bb.Rate*day, -math.Log(1-7.0/12), 1e-12)
}

// CGM Example 5: changed intervals 6 h and 3 h, unchanged 4 h and 7 h:
// λ = 2.67 changes per 20 hours.
func TestCGMExample5(t *testing.T) {
	l, ok := IrregularMLE([]float64{6 * hour, 3 * hour}, 11*hour)
	if !ok {
		t.Fatal("singular")
	}
	near(t, "exact λ per 20h", l*20*hour, 2.67, 0.005)
	// The same through the O(1) state (bucketed intervals).
	var c Change
	c.Visit(Visit{Time: 0})
	for _, v := range []Visit{{Time: 6 * hour, Changed: true}, {Time: 10 * hour}, {Time: 13 * hour, Changed: true}, {Time: 20 * hour}} {
		c.Visit(v)
	}
	cfg := mustCfg(t)
	var out Estimates
	c.Estimate(20*hour, cfg, &out)
	e, ok := out.Get(KeyCGMIrregularMLE)
	if !ok {
		t.Fatal("no cgm_irregular_mle")
	}
	near(t, "bucketed λ per 20h", e.Rate*20*hour, l*20*hour, 0.01*l*20*hour)
	if !(e.HasCI && e.Lo < e.Rate && e.Rate < e.Hi) {
		t.Errorf("bad CI %+v", e)
	}
}

// expectImproved is CGM eq. 1: E[r̂] by summing the binomial distribution of
// X̄ ~ B(n, e^{−r}).
func expectImproved(n int, r float64) (mean, sd float64) {
	q := math.Exp(-r)
	var m1, m2 float64
	for i := 0; i <= n; i++ {
		p := binom(n, i, q)
		v := ImprovedRatio(int64(n), int64(n-i))
		m1 += p * v
		m2 += p * v * v
	}
	return m1, math.Sqrt(math.Max(0, m2-m1*m1))
}

// binom is C(n,i) q^i (1−q)^(n−i), computed in logs.
func binom(n, i int, q float64) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	if q == 0 {
		if i == 0 {
			return 1
		}
		return 0
	}
	if q == 1 {
		if i == n {
			return 1
		}
		return 0
	}
	return math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(q) + float64(n-i)*math.Log1p(-q))
}

// CGM Theorem 4.1, Corollary 4.2 and Example 3, by summing the binomial.
func TestCGMNaiveTheory(t *testing.T) {
	for _, n := range []int{1, 5, 10, 50} {
		for _, r := range []float64{0.01, 0.21, 1, 2, 5} {
			var m1, m2 float64
			for m := 0; m <= n; m++ {
				p := binom(n, m, 1-math.Exp(-r)) // P{X = m}
				v := float64(m) / float64(n)
				m1 += p * v
				m2 += p * v * v
			}
			near(t, "E[X/n]", m1, 1-math.Exp(-r), 1e-12)
			near(t, "σ[X/n]", math.Sqrt(m2-m1*m1), math.Sqrt(math.Exp(-r)*(1-math.Exp(-r))/float64(n)), 1e-9)
		}
	}
	// §4.1: bias < 10% iff r < 0.21.
	near(t, "(1−e^{−0.21})/0.21", (1-math.Exp(-0.21))/0.21, 0.9, 0.005)
	// Example 3: r = 2 → E[r̂]/r ≈ 0.43 (57% bias); r = 1/7, n = 10 → 2σ/r ≈ 1.5.
	near(t, "Example 3 bias", (1-math.Exp(-2))/2, 0.43, 0.005)
	r := 1.0 / 7
	near(t, "Example 3 2σ/r", 2*math.Sqrt(math.Exp(-r)*(1-math.Exp(-r))/10)/r, 1.5, 0.01)
}

// CGM eq. 1 and Fig. 6: the < 10% bias region is r < 3.5 at n = 20 and
// r < 5 at n = 80; Fig. 5: practically unbiased for r < 1 at n ≥ 3.
func TestCGMImprovedBiasRegion(t *testing.T) {
	edge := func(n int) float64 { // smallest r with bias ≥ 10%
		lo, hi := 0.5, 20.0
		for i := 0; i < 60; i++ {
			mid := (lo + hi) / 2
			m, _ := expectImproved(n, mid)
			if math.Abs(m-mid)/mid < 0.1 {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	e20, e80 := edge(20), edge(80)
	t.Logf("Fig. 6 edge: n=20 r=%.3f, n=80 r=%.3f", e20, e80)
	near(t, "Fig. 6 edge n=20", e20, 3.5, 0.1)
	near(t, "Fig. 6 edge n=80", e80, 5, 0.15)
	for _, n := range []int{3, 10, 50} {
		m, _ := expectImproved(n, 0.9)
		if b := math.Abs(m/0.9 - 1); b > 0.05 {
			t.Errorf("n=%d r=0.9 bias %.3f", n, b)
		}
	}
	// §4.2 (2): σ/r = 0.4 at r = 1.5, n = 10; 0.2 at n = 40.
	_, s10 := expectImproved(10, 1.5)
	_, s40 := expectImproved(40, 1.5)
	near(t, "σ/r n=10", s10/1.5, 0.4, 0.03)
	near(t, "σ/r n=40", s40/1.5, 0.2, 0.02)
	// Example 4: n = 10, r = 1.5: bias < 0.3% ... and within ±35% with
	// probability ≥ 75%.
	m, _ := expectImproved(10, 1.5)
	if b := math.Abs(m/1.5 - 1); b > 0.003 {
		t.Errorf("Example 4 bias %.4f ≥ 0.3%%", b)
	}
	p := 0.0
	for i := 0; i <= 10; i++ {
		if v := ImprovedRatio(10, int64(10-i)); math.Abs(v/1.5-1) <= 0.35 {
			p += binom(10, i, math.Exp(-1.5))
		}
	}
	if p < 0.75 {
		t.Errorf("Example 4: P(|r̂/r−1| ≤ 35%%) = %.3f < 0.75", p)
	}
	t.Logf("Example 4: bias %.4f%%, P(within 35%%) = %.3f", 100*(m/1.5-1), p)
}

// CGM Example 4 schedule: a page believed to change once a week is visited
// every 7 days × 1.5 ≈ 10 days.
func TestCGMExample4Schedule(t *testing.T) {
	cfg := mustCfg(t)
	cfg.Schedule = ScheduleCGM
	cfg.MaxInterval = 365 * day
	// Regular daily visits with X chosen so that cgm_improved ≈ 1/week:
	// 100 visits, change probability 1−e^{−1/7}: X = 13 gives
	// −log(87.5/100.5)/day ≈ 0.1385/day.
	ch := make([]bool, 100)
	for i := 0; i < 13; i++ {
		ch[i*7] = true
	}
	c := regular(day, ch)
	best, _ := c.Estimate(0, cfg, nil)
	iv, ok := c.NextInterval(cfg)
	if !ok {
		t.Fatal("no interval")
	}
	near(t, "interval·λ̂", iv*best.Rate, 1.5, 1e-9)
	// The changes fall every 7th visit: the spacings are all equal but the
	// two partial ones at the ends, R̂ is far below its null quantile and
	// (R6) publishes D = R̂ < 1. Under that factor the count's variance is
	// small against bayes_beta's bias, and the rule (best.go B7) names
	// cgm_improved, as the risks say (with D = 1 it names bayes_beta:
	// TestBestRuleFactorFlips).
	D := c.FlagDependence(cfg)
	if !(D < 0.25) {
		t.Fatalf("D = %v, want < 0.25 for flags every 7th visit", D)
	}
	if best.Key != KeyCGMImproved {
		t.Fatalf("best %+v, want cgm_improved", best)
	}
	near(t, "interval days", iv/day, 1.5/ImprovedRatio(100, 13), 1e-9)
}
