package estimators

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// lastModBias is E[r̂]/r of the last-modified estimator with regular visits
// (I = 1, λ = r), App. D eq. 3, computed exactly (up to quadrature):
//
//	E[k'/T | X = k] = k' ∫_0^∞ E[e^{−sT} | X = k] ds,
//	E[e^{−sT} | X = k] = e^{−s(n−k)} φ(s)^k,
//	φ(s) = r(1 − e^{−(r+s)})/((r+s)(1 − e^{−r}))   (eq. 5: truncated exponential t_i)
//
// with k' = k (Fig. 10) or X' (Fig. 13).
func lastModBias(n int, r float64, corrected bool) float64 {
	q := -math.Expm1(-r) // 1 − e^{−r}
	sum := 0.0
	for k := 1; k <= n; k++ {
		kp := float64(k)
		if corrected {
			kp = LastModXPrime(int64(n), int64(k))
		}
		c := r + 1
		f := func(u float64) float64 {
			if u >= 1 {
				return 0
			}
			s := c * u / (1 - u)
			phi := r * -math.Expm1(-(r + s)) / ((r + s) * q)
			return math.Exp(-s*float64(n-k)+float64(k)*math.Log(phi)) * c / ((1 - u) * (1 - u))
		}
		integral := quad.Fixed(f, 0, 1, 600, quad.Legendre{}, 0)
		sum += binom(n, k, q) * kp * integral
	}
	return sum / r
}

// CGM App. D, Theorem D.2: the Fig. 10 estimator has E[r̂]/r → n/(n−1) as
// r → ∞ and → n·log(n/(n−1)) as r → 0.
func TestAppendixDLimits(t *testing.T) {
	for _, n := range []int{2, 3, 5, 10} {
		N := float64(n)
		big := lastModBias(n, 60, false)
		small := lastModBias(n, 1e-4, false)
		t.Logf("n=%d: E/r(r=60)=%.6f (limit %.6f), E/r(r=1e-4)=%.6f (limit %.6f)", n, big, N/(N-1), small, N*math.Log(N/(N-1)))
		near(t, "r→∞ limit", big, N/(N-1), 2e-3)
		near(t, "r→0 limit", small, N*math.Log(N/(N-1)), 2e-3)
	}
}

// CGM Fig. 12: with the Estimate() of Fig. 13 the bias is below 2% for
// every r at n = 2 (and the curves for other n overlap).
func TestFig12BiasAnalytic(t *testing.T) {
	for _, n := range []int{2, 3, 5, 10, 50} {
		worst, at := 0.0, 0.0
		for e := -3.0; e <= 2.0; e += 0.05 {
			r := math.Pow(10, e)
			if b := math.Abs(lastModBias(n, r, true) - 1); b > worst {
				worst, at = b, r
			}
		}
		t.Logf("n=%d: max |E[r̂]/r − 1| = %.4f at r = %.3g", n, worst, at)
		if worst >= 0.02 {
			t.Errorf("n=%d: bias %.4f ≥ 2%% at r=%.3g", n, worst, at)
		}
	}
	// Example 6: weekly changes, monthly visits (r ≈ 30/7), n = 5: < 0.1% bias.
	if b := math.Abs(lastModBias(5, 30.0/7, true) - 1); b > 0.001 {
		t.Errorf("Example 6 bias %.5f", b)
	}
}

// simulateLastMod runs n regular visits (I = 1 s) of a Poisson process of
// rate r and returns the Change state.
func simulateLastMod(rng *rand.Rand, n int, r float64) *Change {
	var c Change
	lastChange := -rng.ExpFloat64() / r // process running before the baseline
	next := 0.0
	for next = lastChange; next <= 0; {
		lastChange = next
		next += rng.ExpFloat64() / r
	}
	c.Visit(Visit{Time: 0, LastModified: lastChange, HasLastModified: true})
	for i := 1; i <= n; i++ {
		tv := float64(i)
		changed := false
		for next <= tv {
			lastChange = next
			changed = true
			next += rng.ExpFloat64() / r
		}
		c.Visit(Visit{Time: tv, Changed: changed, LastModified: lastChange, HasLastModified: true})
	}
	return &c
}

// Fig. 12 by seeded simulation: n = 2, mean of r̂/r over K runs is within
// 2% + 4 standard errors of 1 (the standard error is measured).
func TestFig12BiasMonteCarlo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const K = 200000
	for _, r := range []float64{0.1, 1, 3, 10} {
		var s1, s2 float64
		for k := 0; k < K; k++ {
			c := simulateLastMod(rng, 2, r)
			// the rate of Estimate without its interval (cheaper)
			v := LastModXPrime(c.lmN, c.lmX) / c.lmExposure() / r
			s1 += v
			s2 += v * v
		}
		mean := s1 / K
		se := math.Sqrt((s2/K - mean*mean) / K)
		exact := lastModBias(2, r, true)
		t.Logf("r=%g: simulated E[r̂]/r = %.4f ± %.4f, exact %.4f", r, mean, se, exact)
		near(t, "simulated vs exact", mean, exact, 4*se)
		if math.Abs(mean-1) > 0.02+4*se {
			t.Errorf("r=%g: bias %.4f", r, mean-1)
		}
	}
}

func TestLastModXPrimeLimits(t *testing.T) {
	near(t, "X=0", LastModXPrime(5, 0), 0, 0)
	near(t, "X=N", LastModXPrime(5, 5), 4, 0)
	near(t, "X=1", LastModXPrime(5, 1), 1/(5*math.Log(5.0/4)), 1e-12)
	// continuity towards X = N (X/N → 1): X' → N−1
	near(t, "X=N−1 of 1e6", LastModXPrime(1e6, 1e6-1), 1e6-2+1/(math.Log(1e6)), 1e-3)
}

// cgm_lastmod worked by hand: visits every 10 h; ages 4 h, 12 h (>10: no
// change), 3 h: X = 2, N = 3, T = 4+10+3 = 17 h.
func TestCGMLastModByHand(t *testing.T) {
	cfg := mustCfg(t)
	var c Change
	c.Visit(Visit{Time: 0, LastModified: -2 * hour, HasLastModified: true})
	c.Visit(Visit{Time: 10 * hour, Changed: true, LastModified: 6 * hour, HasLastModified: true})
	c.Visit(Visit{Time: 20 * hour, LastModified: 6 * hour, HasLastModified: true})
	c.Visit(Visit{Time: 30 * hour, Changed: true, LastModified: 27 * hour, HasLastModified: true})
	var out Estimates
	pub, ok := c.Estimate(30*hour, cfg, &out)
	// N = 3 intervals: the risks of best.go (B6) favour bayes_beta's
	// shrinkage over cgm_lastmod's variance.
	if !ok || pub.Key != KeyBayesBeta {
		t.Fatalf("best %+v, want bayes_beta (regular, lowest risk at N = 3)", pub)
	}
	best, _ := out.Get(KeyCGMLastMod)
	xp := (2 - 1) - 2/(3*math.Log(1-2.0/3))
	near(t, "rate per hour", best.Rate*hour, xp/17, 1e-12)
	// Garwood for X = 2: [0.242209, 7.224687] over 17 h.
	near(t, "lo", best.Lo*hour, 0.2422093/17, 1e-7)
	near(t, "hi", best.Hi*hour, 7.2246877/17, 1e-6)
	// Malcolm & Armitage eq. 2: ages 2, 4, 14, 3 h → mean 5.75 h.
	ml, _ := out.Get(KeyMalcolmLastMod)
	near(t, "malcolm_lastmod interval h", 1/(ml.Rate*hour), 23.0/4, 1e-12)
	age, ok := c.MeanAge()
	near(t, "MeanAge h", age/hour, 23.0/4, 1e-12)
	if !ok {
		t.Error("MeanAge undefined")
	}
}
