package estimators

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// randomTerms draws k terms (R7) with R̂ in (0, 4) and u in (0.5, 50).
func randomTerms(rng *rand.Rand, k int) []FlagTerm {
	ts := make([]FlagTerm, k)
	for i := range ts {
		ts[i] = FlagTerm{R: 4 * rng.Float64(), U: 0.5 + 49.5*rng.Float64()}
	}
	return ts
}

// TestFlagPoolSite: D̄ (R8) and τ̂² (R9) from the sums equal the same
// quantities computed term by term (Q = Σ u_i(R̂_i − D̄)², τ̂² = max(0,
// (Q − D̄²(N − 1))/(U − Σu_i²/U))), to 1e-12 relative (roundings of sums
// of 40 terms); Remove undoes Add to 1e-9 relative; fewer than
// MinPoolObjects terms give no site.
func TestFlagPoolSite(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	positive := 0
	for rep := 0; rep < 50; rep++ {
		ts := randomTerms(rng, 40)
		if rep%2 == 0 { // a site of one law: R̂_i = 1 + noise of its own se₀ (τ̂² = 0 often)
			for i := range ts {
				ts[i].R = 1 + 0.5*rng.NormFloat64()/math.Sqrt(ts[i].U)
			}
		}
		var p FlagPool
		var U, UR, U2 float64
		for _, x := range ts {
			p.Add(x, 1)
			U += x.U
			UR += x.U * x.R
			U2 += x.U * x.U
		}
		D := UR / U
		var Q float64
		for _, x := range ts {
			Q += x.U * (x.R - D) * (x.R - D)
		}
		tau2 := math.Max(0, (Q-D*D*float64(len(ts)-1))/(U-U2/U))
		if tau2 > 0 {
			positive++
		}
		s, ok := p.Site()
		if !ok || math.Abs(s.D/D-1) > 1e-12 || math.Abs(s.Tau2-tau2) > 1e-12*math.Max(tau2, D*D) {
			t.Fatalf("rep %d: site %+v %v, want D̄ %g τ̂² %g", rep, s, ok, D, tau2)
		}
		extra := FlagTerm{R: 3, U: 7}
		q := p
		q.Add(extra, 1)
		q.Remove(extra, 1)
		for i, pair := range [][2]float64{{q.N, p.N}, {q.U, p.U}, {q.UR, p.UR}, {q.UR2, p.UR2}, {q.U2, p.U2}} {
			if math.Abs(pair[0]-pair[1]) > 1e-9*math.Abs(pair[1]) {
				t.Errorf("rep %d: sum %d after Add and Remove %g, was %g", rep, i, pair[0], pair[1])
			}
		}
	}
	if positive == 0 || positive == 50 {
		t.Errorf("τ̂² > 0 in %d of 50 sites: the check does not see both cases", positive)
	}
	var few FlagPool
	for _, x := range randomTerms(rng, MinPoolObjects-1) {
		few.Add(x, 1)
	}
	if _, ok := few.Site(); ok {
		t.Errorf("a site of %d objects has a factor", MinPoolObjects-1)
	}
}

// TestShrink: (R10) at its limits — τ̂² = 0 or no term of its own: D̄
// with w = 0; τ̂² → ∞: the object's own R̂ (w = 1) — and in between, w =
// τ̂²/(τ̂² + D̄²/u) (2/3 at τ̂² = 0.5, D̄ = 1, u = 4) and D̃ the
// weighted mean (exact in binary: 1 + (2/3)·(3 − 1) to 1e-15).
func TestShrink(t *testing.T) {
	term := FlagTerm{R: 3, U: 4}
	for _, tc := range []struct {
		s     FlagSite
		own   bool
		D, w  float64
		label string
	}{
		{FlagSite{D: 2, Tau2: 0}, true, 2, 0, "τ̂² = 0"},
		{FlagSite{D: 2, Tau2: 1}, false, 2, 0, "no term"},
		{FlagSite{D: 2, Tau2: 1e300}, true, 3, 1, "τ̂² → ∞"},
		{FlagSite{D: 1, Tau2: 0.5}, true, 1 + 2.0/3*2, 2.0 / 3, "between"},
	} {
		D, w := tc.s.shrink(term, tc.own)
		if math.Abs(D-tc.D) > 1e-15*tc.D || math.Abs(w-tc.w) > 1e-15 {
			t.Errorf("%s: D̃ %g w %g, want %g %g", tc.label, D, w, tc.D, tc.w)
		}
	}
}

// siteWorld simulates sites of m objects of n regular visits with flags
// from w and calls f with each object and its site's sums (excessWorld's
// sums without the excess).
func siteWorld(rng *rand.Rand, w flagWorld, sites, m, n int, cfg *Config, f func(c *Change, p *FlagPool)) {
	excessWorld(rng, w, sites, m, n, cfg, func(c *Change, _, bare *FlagPool) { f(c, bare) })
}

// TestSiteFlagCoverage: in sites of 100 objects of one law of flags
// (flagWorlds) seen over n = 60 regular intervals — short windows, where
// one object's R̂ rests on a few spacings — the interval published with
// the site's factor (R11) covers λ_p = −ln(1 − p) in 93–97 % of objects
// (1,500 per world, widened by two binomial standard errors), and for the
// bursty and the Markov ρ = 0.6 worlds (D ≥ 1.8) more often than with the
// object's own factor (R6): the check can tell the site's factor.
func TestSiteFlagCoverage(t *testing.T) {
	const n, m, sites = 60, 100, 15
	K := float64(m * sites)
	cfg := DefaultConfig()
	lo, hi := 0.93-2*math.Sqrt(0.95*0.05/K), 0.97+2*math.Sqrt(0.95*0.05/K)
	for wi, w := range flagWorlds() {
		rng := rand.New(rand.NewPCG(uint64(wi)+41, 3))
		truth := -math.Log1p(-w.p)
		var covered, own, exact, total int
		var out Estimates
		siteWorld(rng, w, sites, m, n, &cfg, func(c *Change, p *FlagPool) {
			best, ok := c.EstimateIn(n, &cfg, p, &out)
			if !ok || !best.HasCI {
				return
			}
			total++
			if best.Lo <= truth && truth <= best.Hi {
				covered++
			}
			e, _ := out.Get(best.Key)
			if o := c.EffectiveInterval(e, c.FlagDependence(&cfg), &cfg); o.Lo <= truth && truth <= o.Hi {
				own++
			}
			if o := c.EffectiveInterval(e, w.D, &cfg); o.Lo <= truth && truth <= o.Hi {
				exact++
			}
		})
		cov, ownCov := float64(covered)/float64(total), float64(own)/float64(total)
		t.Logf("%s: coverage with the site's factor %.3f, the object's own %.3f, the true D %.3f (%d objects)", w.name, cov, ownCov, float64(exact)/float64(total), total)
		if cov < lo || cov > hi {
			t.Errorf("%s: coverage %.3f ∉ [%.3f, %.3f]", w.name, cov, lo, hi)
		}
		if w.D >= 1.8 && !(cov > ownCov) {
			t.Errorf("%s: the site's factor covers %.3f, the object's own %.3f", w.name, cov, ownCov)
		}
	}
}

// TestSiteNarrowingNull: under independent flags, sites of 30 objects
// narrow (publish D < 1) in at most 1 − Level of their objects (R11
// narrows only by R6's test), plus three standard errors of that share
// (its spread over the 400 sites: the objects of one site share D̄).
func TestSiteNarrowingNull(t *testing.T) {
	const n, m, sites = 60, 30, 400
	cfg := DefaultConfig()
	for _, p := range []float64{0.1, 0.4} {
		rng := rand.New(rand.NewPCG(41, uint64(p*10)))
		w := flagWorld{draw: func(rng *rand.Rand, n int, f func(int, bool)) {
			for i := 0; i < n; i++ {
				f(i, rng.Float64() < p)
			}
		}}
		var shares []float64
		var narrowed, inSite int
		siteWorld(rng, w, sites, m, n, &cfg, func(c *Change, pool *FlagPool) {
			if c.SiteFlagDependence(pool, &cfg) < 1 {
				narrowed++
			}
			if inSite++; inSite == m {
				shares = append(shares, float64(narrowed)/m)
				narrowed, inSite = 0, 0
			}
		})
		var mean, v float64
		for _, s := range shares {
			mean += s / sites
		}
		for _, s := range shares {
			v += (s - mean) * (s - mean) / (sites - 1)
		}
		se := math.Sqrt(v / sites)
		t.Logf("p %.1f: %.4f of objects narrowed (se %.4f)", p, mean, se)
		if mean > 1-cfg.Level+3*se {
			t.Errorf("p %.1f: %.4f of objects narrowed, want ≤ %.2f + %.4f", p, mean, 1-cfg.Level, 3*se)
		}
	}
}

// TestPooledDependent: the pooled interval on the effective sample (R12).
// Regular daily visits, 60 intervals, under a Gamma(0.8, 0.8·20 days)
// prior: without a change the interval is the conjugate Gamma(α, β +
// U/D)'s quantiles (1e-9 relative, the inverse incomplete gamma's
// accuracy); with changes it is the tempered posterior's against an
// independent Simpson integration (exactChangesD) within 1e-4 relative,
// the fitted grid's tolerance (TestPooledFitAccuracy). The point
// is the pooled estimate's own; D = 1 changes nothing; D = 2 widens and
// D = 0.5 narrows (D = 1.7 makes every count a non-integer: the fitted
// grid's log form).
func TestPooledDependent(t *testing.T) {
	const day = 86400.0
	cfg := DefaultConfig()
	prior := GammaPrior{Shape: 0.8, Rate: 0.8 * 20 * day}
	pLo, pHi := cfg.tails()
	for _, changed := range [][]int{nil, {10}, {3, 4, 5, 40}} {
		var c Change
		c.Visit(Visit{Time: 1e9})
		for i := 1; i <= 60; i++ {
			ch := false
			for _, j := range changed {
				ch = ch || j == i
			}
			c.Visit(Visit{Time: 1e9 + float64(i)*day, Changed: ch})
		}
		e, ok := c.PooledEstimateIn(prior, 0, &cfg, nil)
		if !ok || !e.HasCI {
			t.Fatalf("%v: no pooled estimate", changed)
		}
		if got := c.PooledDependentIn(e, prior, 1, &cfg, nil); got != e {
			t.Errorf("%v: D = 1 moved the estimate %+v → %+v", changed, e, got)
		}
		var width [4]float64
		for k, D := range []float64{0.5, 1, 2, 1.7} { // 1.7: no count an integer
			got := c.PooledDependentIn(e, prior, D, &cfg, nil)
			width[k] = got.Hi - got.Lo
			if got.Rate != e.Rate || got.Key != e.Key {
				t.Errorf("%v D %g: point %g, want the pooled %g", changed, D, got.Rate, e.Rate)
			}
			if D == 1 {
				continue
			}
			var want Estimate
			tol := 1e-4
			if len(changed) == 0 {
				b := prior.Rate + c.unchangedTime()/D
				want = Estimate{Lo: mathext.GammaIncRegInv(prior.Shape, pLo) / b, Hi: mathext.GammaIncRegInv(prior.Shape, pHi) / b}
				tol = 1e-9
			} else if want, ok = exactChangesD(&c, prior, D, &cfg); !ok {
				t.Fatalf("%v D %g: no exact posterior", changed, D)
			}
			if math.Abs(got.Lo/want.Lo-1) > tol || math.Abs(got.Hi/want.Hi-1) > tol {
				t.Errorf("%v D %g: interval [%g, %g], tempered posterior's [%g, %g]", changed, D, got.Lo, got.Hi, want.Lo, want.Hi)
			}
		}
		if !(width[0] < width[1] && width[1] < width[2]) {
			t.Errorf("%v: widths at D = 0.5, 1, 2: %v", changed, width)
		}
	}
}
