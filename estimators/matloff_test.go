package estimators

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Matloff §3.2.3: r(0) = τ/2, r(∞) = τ, r strictly increasing; eq. 15's
// bracket equals r'(λ)·τ²-scaled variance (Var W = r'(λ)).
// matloffR is eq. 6, r(λ) = τ/(1 − e^{−λτ}) − 1/λ, with r(0) = τ/2: the
// function MatloffSolve inverts.
func matloffR(lambda, tau float64) float64 { return tau * matloffR1(lambda*tau) }

func TestMatloffR(t *testing.T) {
	for _, tau := range []float64{1, 60, 3600} {
		near(t, "r(0)", matloffR(0, tau), tau/2, 1e-15*tau)
		near(t, "r(1e-9)", matloffR(1e-9/tau, tau), tau/2, 1e-9*tau)
		near(t, "r(∞)", matloffR(1e6/tau, tau), tau, 2e-6*tau)
		prev := matloffR(0, tau)
		for x := 1e-4; x < 800; x *= 1.01 {
			r := matloffR(x/tau, tau)
			if !(r > prev) && r < tau {
				t.Fatalf("τ=%g: r not increasing at λτ=%g: %v ≤ %v", tau, x, r, prev)
			}
			prev = r
		}
	}
	// Series and closed form agree across the switch at x = 1e-3.
	for _, x := range []float64{0.999e-3, 1.001e-3} {
		closed := 1/(-math.Expm1(-x)) - 1/x
		near(t, "r1 series/closed", matloffR1(x), closed, 1e-12)
		s := math.Sinh(x / 2)
		near(t, "r1' series/closed", matloffR1Prime(x), 1/(x*x)-1/(4*s*s), 1e-9)
	}
	// r1' is the derivative of r1 and equals eq. 15's variance bracket.
	for _, x := range []float64{0.01, 0.5, 1, 3, 10, 40} {
		h := 1e-4 * x
		near(t, "r1' numeric", matloffR1Prime(x), (matloffR1(x+h)-matloffR1(x-h))/(2*h), 1e-6)
		tau, l := 2.0, x/2.0
		r := matloffR(l, tau)
		bracket := tau*tau/(-math.Expm1(-l*tau)) - 2/l*r - r*r // eq. 15 under the root
		near(t, "eq. 15 bracket = r'(λ)", bracket, tau*tau*matloffR1Prime(x), 1e-9*tau*tau)
		m := int64(37)
		se := math.Sqrt(bracket) / (math.Sqrt(float64(m)) * tau * tau * matloffR1Prime(x))
		near(t, "eq. 15 SE", MatloffLastModSE(l, tau, m), se, 1e-9*se)
	}
}

func TestMatloffSolve(t *testing.T) {
	tau := 3600.0
	for _, x := range []float64{1e-6, 1e-3, 0.01, 0.3, 1, 5, 30, 200} {
		l := x / tau
		got, ok := MatloffSolve(matloffR(l, tau), tau)
		if !ok {
			t.Fatalf("x=%g: not ok", x)
		}
		near(t, "solve(r(λ))·τ", got*tau, x, 1e-9*math.Max(1, x)*math.Max(1, x))
	}
	if l, ok := MatloffSolve(0.4*tau, tau); !ok || l != 0 {
		t.Errorf("W̄ < τ/2: %v %v, want 0 true", l, ok)
	}
	if l, ok := MatloffSolve(0.5*tau, tau); !ok || l != 0 {
		t.Errorf("W̄ = τ/2: %v %v, want 0 true", l, ok)
	}
	if _, ok := MatloffSolve(tau, tau); ok {
		t.Error("W̄ = τ: want undefined")
	}
	if _, ok := MatloffSolve(math.NaN(), tau); ok {
		t.Error("NaN: want undefined")
	}
}

// simulateMatloff polls a Poisson process of rate λ at the ends of n
// periods of length τ and feeds the snapshots.
func simulateMatloff(rng *rand.Rand, lambda, tau float64, n int, add func(Snapshot)) {
	next := rng.ExpFloat64() / lambda
	last := math.Inf(-1)
	for i := 1; i <= n; i++ {
		end := float64(i) * tau
		has := false
		for next <= end {
			last, has = next, true
			next += rng.ExpFloat64() / lambda
		}
		add(Snapshot{Time: end, Period: tau, LastEvent: last, HasEvent: has})
	}
}

// Seeded Monte Carlo: λ̂ and λ̌ are consistent, their 95% intervals cover
// about 95% (tolerance from the binomial SE of the coverage), and the
// kernel estimator's mean is within its O(h) bias (1−e^{−λh})/h.
func TestMatloffMonteCarlo(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(11, 12))
	const K = 400
	for _, c := range []struct {
		lambda float64
		n      int
	}{{0.5, 200}, {2, 200}, {3.5, 200}, {2, 2000}} {
		tau := 1.0
		var sumHat, sumChk, sumKer float64
		var covHat, covChk, nChk int
		var ssHat float64
		for k := 0; k < K; k++ {
			var a Access
			simulateMatloff(rng, c.lambda, tau, c.n, a.Snapshot)
			var out Estimates
			a.Estimate(float64(c.n), cfg, &out)
			h, okH := out.Get(KeyMatloffLastMod)
			ck, okC := out.Get(KeyMatloffCount)
			kr, _ := out.Get(KeyMatloffKernel)
			if !okH {
				t.Fatalf("λ=%g: missing λ̂", c.lambda)
			}
			if !okC { // M = n (probability (1−e^{−λτ})^n, 0.24% at λ = 3.5)
				ck.Rate = h.Rate
			} else {
				nChk++
			}
			sumHat += h.Rate
			ssHat += (h.Rate - c.lambda) * (h.Rate - c.lambda)
			sumChk += ck.Rate
			sumKer += kr.Rate
			if h.Lo <= c.lambda && c.lambda <= h.Hi {
				covHat++
			}
			if okC && ck.Lo <= c.lambda && c.lambda <= ck.Hi {
				covChk++
			}
			mx, _ := out.Get(KeyMatloffMax)
			if okC && mx.Rate != math.Max(h.Rate, ck.Rate) || !okC && mx.Rate != h.Rate {
				t.Fatalf("matloff_max %v ≠ max(%v, %v)", mx.Rate, h.Rate, ck.Rate)
			}
		}
		mHat, mChk, mKer := sumHat/K, sumChk/K, sumKer/K
		if nChk < K-3 {
			t.Fatalf("λ̌ undefined in %d of %d runs", K-nChk, K)
		}
		rmseHat := math.Sqrt(ssHat / K)
		// tolerance: 4 standard errors of the mean, using the asymptotic
		// SE of eq. 15 / eq. 14 at the true λ, plus the O(1/n) bias.
		m := float64(c.n) * (1 - math.Exp(-c.lambda*tau))
		seHat := 1 / math.Sqrt(m*matloffR1Prime(c.lambda*tau)) / tau
		p := 1 - math.Exp(-c.lambda*tau)
		seChk := math.Sqrt(p/((1-p)*float64(c.n))) / tau
		t.Logf("λ=%g n=%d: mean λ̂=%.4f (rmse %.4f, SE %.4f, cover %.3f), λ̌=%.4f (SE %.4f, cover %.3f), kernel %.4f",
			c.lambda, c.n, mHat, rmseHat, seHat, float64(covHat)/K, mChk, seChk, float64(covChk)/K, mKer)
		near(t, "mean λ̂", mHat, c.lambda, 4*seHat/math.Sqrt(K)+2*seHat*seHat/c.lambda)
		near(t, "mean λ̌", mChk, c.lambda, 4*seChk/math.Sqrt(K)+2*seChk*seChk/c.lambda)
		near(t, "rmse λ̂ vs eq. 15", rmseHat, seHat, 0.15*seHat)
		covSE := math.Sqrt(0.95 * 0.05 / K)
		near(t, "coverage λ̂", float64(covHat)/K, 0.95, 4*covSE+0.01)
		near(t, "coverage λ̌", float64(covChk)/float64(nChk), 0.95, 4*covSE+0.01)
		hk := KernelFraction * tau
		kerMean := -math.Expm1(-c.lambda*hk) / hk // E[#(0,h)]/(nh) exactly
		kerSE := math.Sqrt(kerMean / (float64(c.n) * hk) / K)
		near(t, "kernel mean", mKer, kerMean, 4*kerSE)
	}
}

// Matloff §6.1: λ̌ beats λ̂ in MSE for small λτ and loses for large λτ
// (crossover ≈ 3.7 at n = 50 with τ = 1); checked at λ = 1 and λ = 8.
func TestMatloffCrossover(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(13, 14))
	const K = 3000
	mse := func(lambda float64) (hat, chk float64) {
		for k := 0; k < K; k++ {
			var a Access
			simulateMatloff(rng, lambda, 1, 50, a.Snapshot)
			var out Estimates
			a.Estimate(50, cfg, &out)
			h, _ := out.Get(KeyMatloffLastMod)
			c, ok := out.Get(KeyMatloffCount)
			cr := math.Inf(1) // M = n: λ̌ undefined, counts as a total miss
			if ok {
				cr = c.Rate
			}
			hat += (h.Rate - lambda) * (h.Rate - lambda)
			chk += math.Min((cr-lambda)*(cr-lambda), 1e6)
		}
		return hat / K, chk / K
	}
	h1, c1 := mse(1)
	h8, c8 := mse(8)
	t.Logf("λ=1: √MSE/λ λ̂ %.4f λ̌ %.4f; λ=8: λ̂ %.4f λ̌ %.4f", math.Sqrt(h1), math.Sqrt(c1), math.Sqrt(h8)/8, math.Sqrt(c8)/8)
	if !(c1 < h1) {
		t.Errorf("λ=1: want MSE(λ̌) < MSE(λ̂), got %g ≥ %g", c1, h1)
	}
	if !(h8 < c8) {
		t.Errorf("λ=8: want MSE(λ̂) < MSE(λ̌), got %g ≥ %g", h8, c8)
	}
}

func TestMatloffEdgeCases(t *testing.T) {
	cfg := mustCfg(t)
	var a Access
	// All periods empty: λ̌ = 0 (no CI), λ̂ undefined, kernel 0.
	for i := 1; i <= 5; i++ {
		a.Snapshot(Snapshot{Time: float64(i) * 10, Period: 10})
	}
	var out Estimates
	best, ok := a.Estimate(50, cfg, &out)
	if !ok || best.Key != KeyMatloffCount || best.Rate != 0 || best.HasCI {
		t.Errorf("all empty: best %+v %v", best, ok)
	}
	if _, ok := out.Get(KeyMatloffLastMod); ok {
		t.Error("λ̂ defined without events")
	}
	// All periods non-empty: λ̌ undefined, best = max = λ̂.
	var b Access
	for i := 1; i <= 5; i++ {
		b.Snapshot(Snapshot{Time: float64(i) * 10, Period: 10, LastEvent: float64(i)*10 - 1, HasEvent: true})
	}
	best, ok = b.Estimate(50, cfg, &out)
	if _, has := out.Get(KeyMatloffCount); has {
		t.Error("λ̌ defined with M = n")
	}
	// W = 9 of 10 each time: solve r(λ)·10 = 9.
	want, _ := MatloffSolve(9, 10)
	if !ok || best.Key != KeyMatloffLastMod || math.Abs(best.Rate-want) > 1e-15 {
		t.Errorf("all non-empty: best %+v, want %v", best, want)
	}
	if mx, ok := out.Get(KeyMatloffMax); !ok || mx.Rate != best.Rate {
		t.Errorf("matloff_max %+v, want λ̂ %v", mx, want)
	}
	// A LastEvent before the period means an empty period.
	var c Access
	c.Snapshot(Snapshot{Time: 100, Period: 10, LastEvent: 50, HasEvent: true})
	if c.mat.m != 0 || c.mat.n != 1 {
		t.Errorf("stale LastEvent counted: %+v", c.mat)
	}
}
