package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// TestIdentifiedRate: (H5)–(H6) against closed forms and a simulation.
// Poisson changes (k = 1): λ_p = λ. Rayleigh intervals (k = 2): ∫_0^1
// exp(−(s/η)²) ds = η·(√π/2)·erf(1/η), η = 1/(λΓ(3/2)). Weibull k = ½
// and 3: the share of unit intervals with a change in hoObserve's
// stationary renewal world is 1 − e^{−λ_p}, within 4 binomial standard
// errors widened for the flags' dependence (objects are independent; the
// share's SE is taken from the spread of the 400 objects' shares).
func TestIdentifiedRate(t *testing.T) {
	if got := identifiedRate(0.7, 1); got != 0.7 {
		t.Errorf("k=1: λ_p = %g, want 0.7", got)
	}
	for _, lambda := range []float64{0.3, 1, 3} {
		eta := 1 / (lambda * math.Gamma(1.5))
		p := lambda * eta * math.Sqrt(math.Pi) / 2 * math.Erf(1/eta)
		if got, want := identifiedRate(lambda, 2), -math.Log1p(-p); math.Abs(got/want-1) > 1e-9 {
			t.Errorf("k=2, λ=%g: λ_p = %.12g, want %.12g", lambda, got, want)
		}
	}
	for _, k := range []float64{0.5, 3} {
		for _, r := range []float64{0.3, 1} {
			rng := rand.New(rand.NewPCG(7, uint64(k*100+r*10)))
			w := hoWorld{r: r, n: 500, shape: k}
			var shares []float64
			for i := 0; i < 400; i++ {
				c := hoObserve(rng, w)
				shares = append(shares, float64(c.Changes())/float64(w.n))
			}
			var m, v float64
			for _, s := range shares {
				m += s / float64(len(shares))
			}
			for _, s := range shares {
				v += (s - m) * (s - m) / float64(len(shares)-1)
			}
			se := math.Sqrt(v / float64(len(shares)))
			want := -math.Expm1(-identifiedRate(r, k))
			if math.Abs(m-want) > 4*se {
				t.Errorf("k=%g r=%g: changed share %.4f, want 1 − e^{−λ_p} = %.4f ± %.4f", k, r, m, want, 4*se)
			}
		}
	}
}

// TestSimulatedFactor: the calibration table's D (D1 as the simulation
// shows it) on regular visits whose change flags are a two-state Markov
// chain with P(change) = p and lag-1 correlation ρ is (1+ρ)/(1−ρ) (D2),
// within three relative standard errors √(2/(K−1)) of a sample variance
// plus the finite-n term 2ρ(1−ρⁿ)/(n(1−ρ)²) of (D1).
func TestSimulatedFactor(t *testing.T) {
	const n, K = 400, 3000
	for _, tc := range []struct{ p, rho float64 }{{0.3, 0}, {0.3, 0.5}, {0.6, -0.3}} {
		rng := rand.New(rand.NewPCG(11, uint64(tc.rho*10+10)))
		p11, p01 := tc.p+tc.rho*(1-tc.p), tc.p*(1-tc.rho)
		cs := make([]*estimators.Change, K)
		for k := range cs {
			var c estimators.Change
			c.Visit(estimators.Visit{Time: 0})
			x := rng.Float64() < tc.p
			for i := 1; i <= n; i++ {
				if i > 1 {
					q := p01
					if x {
						q = p11
					}
					x = rng.Float64() < q
				}
				c.Visit(estimators.Visit{Time: float64(i), Changed: x})
			}
			cs[k] = &c
		}
		want := (1 + tc.rho) / (1 - tc.rho)
		tol := 3*math.Sqrt(2.0/(K-1))*want + math.Abs(2*tc.rho*(1-math.Pow(tc.rho, n))/(n*(1-tc.rho)*(1-tc.rho)))
		if got := simulatedFactor(cs); math.Abs(got-want) > tol {
			t.Errorf("p %.1f ρ %.1f: D = %.3f, want %.3f ± %.3f", tc.p, tc.rho, got, want, tol)
		}
	}
}

// TestHoSites: the held-out sites cover the K objects in order, each of
// hoSiteMin–hoSiteMax objects but the last, which takes the rest (at
// least hoSiteMin, at most hoSiteMax + hoSiteMin − 1).
func TestHoSites(t *testing.T) {
	for _, K := range []int{4000, 600, 251} {
		site := hoSites(rand.New(rand.NewPCG(1, uint64(K))), K)
		sizes := map[int]int{}
		for i, s := range site {
			if i > 0 && s != site[i-1] && s != site[i-1]+1 {
				t.Fatalf("K %d: object %d in site %d after %d", K, i, s, site[i-1])
			}
			sizes[s]++
		}
		last := site[K-1]
		for s := 0; s <= last; s++ {
			hi := hoSiteMax
			if s == last {
				hi = hoSiteMax + hoSiteMin - 1
			}
			if sizes[s] < hoSiteMin || sizes[s] > hi {
				t.Errorf("K %d: site %d of %d objects, want %d–%d", K, s, sizes[s], hoSiteMin, hi)
			}
		}
	}
}

// TestHeldOutMisses: on a Poisson world of regular visits (independent flags)
// every object with an interval is in exactly one group of hoMisses, each
// group's shares above, below and covered add to 1 (to the 0.1 % of the
// printed percentages), and B̄ (R16) over all objects is 1 within four of
// its standard errors under independent flags (E₀[B̄] = 1 exactly, R16),
// and D_B (R19) over all objects is 1 within the Pearson statistic's noise.
func TestHeldOutMisses(t *testing.T) {
	const K = 600
	cfg := newEstConfig()
	w := hoWorld{"poisson", 0.3, 60, false, false, 1}
	rng := rand.New(rand.NewPCG(5, 31))
	cs := make([]*estimators.Change, K)
	for i := range cs {
		cs[i] = hoObserve(rng, w)
	}
	site := hoSites(rand.New(rand.NewPCG(5, 32)), K)
	pools := sitePools(cs, site, cfg)
	rows, factor := hoMisses(w.name, cs, site, pools, sitePriors(cs, site, cfg), w.r, 1, cfg)
	var n int
	for _, r := range rows {
		var k int
		var above, below, cov float64
		fmt.Sscan(r[2], &k)
		fmt.Sscanf(r[3], "%f", &above)
		fmt.Sscanf(r[4], "%f", &below)
		fmt.Sscanf(r[5], "%f", &cov)
		n += k
		if math.Abs(above+below+cov-100) > 0.11 {
			t.Errorf("%s: %v %v %v do not add to 100 %%", r[1], above, below, cov)
		}
	}
	var withCI int
	var out estimators.Estimates
	for i, c := range cs {
		if e, ok := c.EstimateIn(c.Span(), cfg, &pools[site[i]], &out); ok && e.HasCI {
			withCI++
		}
	}
	if n != withCI {
		t.Errorf("groups hold %d objects, %d have an interval", n, withCI)
	}
	var b, se float64
	fmt.Sscanf(factor[4], "%f", &b)
	fmt.Sscanf(factor[5], "%f", &se)
	t.Logf("B̄ %v ± %v", b, se)
	if !(se > 0) || math.Abs(b-1) > 4*se {
		t.Errorf("B̄ = %v under independent flags, want 1 ± %v", b, 4*se)
	}
	// D_B (R19) over all objects: 1 + e·σ̂²/μ̂ with σ̂²·E/μ̂ the Pearson
	// statistic less its mean N − 1, whose null sd is √(2(N − 1)); at
	// e ≈ E/K, within 4·√(2/K) of 1, or absent where σ̂² ≤ 0.
	if factor[6] != "—" {
		var db float64
		fmt.Sscanf(factor[6], "%f", &db)
		t.Logf("D_B %v", db)
		if tol := 4 * math.Sqrt(2.0/K); !(db >= 1) || db-1 > tol {
			t.Errorf("D_B = %v under independent flags of one rate, want 1 + [0, %.3f]", db, tol)
		}
	}
}
