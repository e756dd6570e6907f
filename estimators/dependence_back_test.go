package estimators

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestEndSpacingNull: under independent flags, given n and X, the last
// spacing S_X has mean (n + 1)/(X + 1) and variance M(K − 1)(M + K)/(K²(K
// + 1)) (R15), by enumeration of every X-subset of n = 12 intervals (the
// changed intervals are a uniform X-subset given X), to 1e-12 relative.
func TestEndSpacingNull(t *testing.T) {
	const n = 12
	for x := int64(1); x < n; x++ {
		var s, ss, cnt float64
		for mask := 0; mask < 1<<n; mask++ {
			if int64(bits.OnesCount(uint(mask))) != x {
				continue
			}
			var c Change
			c.Visit(Visit{Time: 0})
			for i := 0; i < n; i++ {
				c.Visit(Visit{Time: float64(i + 1), Changed: mask&(1<<i) != 0})
			}
			b, bd, bv, ok := c.backTerm()
			if !ok {
				t.Fatalf("X = %d: no term", x)
			}
			sx := b + bd + 1 // S_X = (S_X − μ̂) + (μ̂ − 1) + 1
			s += sx
			ss += sx * sx
			cnt++
			if got := bv; math.Abs(got-varEnd(n, x)) > 1e-12*got {
				t.Fatalf("X = %d: Var₀ %v", x, got)
			}
		}
		mean, v := s/cnt, ss/cnt-(s/cnt)*(s/cnt)
		if want := float64(n+1) / float64(x+1); math.Abs(mean-want) > 1e-12*want {
			t.Errorf("X = %d: E₀[S_X] = %v by enumeration, want %v", x, mean, want)
		}
		if want := varEnd(n, x); math.Abs(v-want) > 1e-12*math.Max(want, 1) {
			t.Errorf("X = %d: Var₀(S_X) = %v by enumeration, want %v", x, v, want)
		}
	}
}

// varEnd is Var₀(S_X | n, X) of (R15), written out again.
func varEnd(n, x int64) float64 {
	M, K := float64(n-x), float64(x+1)
	return M * (K - 1) * (M + K) / (K * K * (K + 1))
}

// TestEndSpacingRenewal: B̄ (R16) over 300 objects of n = 2,000 intervals
// is D (R1) for every law of flagWorlds — independent, Markov (D2),
// bursty (D = 3) and nearly periodic (D = 0.1) renewal sequences, all
// stationary, where the end spacing has the recurrence law (R13) exactly.
// Tolerance: four standard errors of the ratio B/BD from the objects' own
// terms (delta method, 2·√Σ(b_i − r·bd_i)²/BD), plus the truncation of the
// end spacing at the window, below e^{−20} here (gaps of mean 5, window
// 2,000).
func TestEndSpacingRenewal(t *testing.T) {
	const n, m = 2000, 300
	for wi, w := range flagWorlds() {
		rng := rand.New(rand.NewPCG(uint64(wi)+77, 5))
		var bs, bds []float64
		var B, BD float64
		for k := 0; k < m; k++ {
			var c Change
			c.Visit(Visit{Time: 0})
			w.draw(rng, n, func(i int, x bool) { c.Visit(Visit{Time: float64(i + 1), Changed: x}) })
			b, bd, _, ok := c.backTerm()
			if !ok {
				continue
			}
			bs, bds = append(bs, b), append(bds, bd)
			B += b
			BD += bd
		}
		f, _, ok := EndSpacingFactor(B, BD, 0)
		if !ok {
			t.Fatalf("%s: no factor", w.name)
		}
		r := B / BD
		var e2 float64
		for i := range bs {
			e := bs[i] - r*bds[i]
			e2 += e * e
		}
		se := 2 * math.Sqrt(e2) / BD
		t.Logf("%s: B̄ %.3f ± %.3f, D %.3f", w.name, f, se, w.D)
		if math.Abs(f-w.D) > 4*se {
			t.Errorf("%s: B̄ = %.3f, want D = %.3f ± %.3f", w.name, f, w.D, 4*se)
		}
	}
}

// TestSiteBackWidening: (R17). Under independent flags (p = 0.1, 0.4;
// 400 sites of 30 objects, n = 60) at most 1 − Level of the sites widen
// by B̄, plus three binomial standard errors; in sites of the bursty
// renewal (D = 3) most do (more than half: B̄'s noise at 30 objects of 60
// intervals, se₀ ≈ 0.3, against D − 1 = 2), and every object of such a
// site publishes at least B̄. A legacy pool (version 3 sums) keeps its B
// sums at zero through Add and never widens by them.
func TestSiteBackWidening(t *testing.T) {
	const n, m, sites = 60, 30, 400
	cfg := DefaultConfig()
	z := cfg.zOneSided()
	count := func(w flagWorld, seed uint64) (widened, total int) {
		rng := rand.New(rand.NewPCG(43, seed))
		var last *FlagPool
		siteWorld(rng, w, sites, m, n, &cfg, func(c *Change, p *FlagPool) {
			if p != last {
				last = p
				total++
				if p.backWidening(z) > 0 {
					widened++
				}
			}
			if b := p.backWidening(z); b > 0 && c.Regular(&cfg) {
				if got := c.SiteFlagDependence(p, &cfg); got < min(b, float64(n))*(1-1e-12) {
					t.Errorf("published D %v below the site's B̄ %v", got, b)
				}
			}
		})
		return widened, total
	}
	for _, p := range []float64{0.1, 0.4} {
		w := flagWorld{draw: func(rng *rand.Rand, n int, f func(int, bool)) {
			for i := 0; i < n; i++ {
				f(i, rng.Float64() < p)
			}
		}}
		wid, tot := count(w, uint64(p*10))
		share := float64(wid) / float64(tot)
		se := math.Sqrt((1 - cfg.Level) * cfg.Level / float64(tot))
		t.Logf("independent p %.1f: %d of %d sites widen by B̄", p, wid, tot)
		if share > 1-cfg.Level+3*se {
			t.Errorf("independent p %.1f: %.3f of sites widen, want ≤ %.3f + %.3f", p, share, 1-cfg.Level, 3*se)
		}
	}
	for _, w := range flagWorlds() {
		if w.name != "bursty renewal" {
			continue
		}
		wid, tot := count(w, 9)
		t.Logf("%s: %d of %d sites widen by B̄", w.name, wid, tot)
		if 2*wid <= tot {
			t.Errorf("%s: %d of %d sites widen", w.name, wid, tot)
		}
	}
	// A legacy pool: the R7 sums move, the R15 sums stay zero.
	legacy := FlagPool{Legacy: true}
	for i := 0; i < 2*MinPoolObjects; i++ {
		legacy.Add(FlagTerm{R: 3, U: 10, B: 40, BD: 4, BV: 9}, 1)
	}
	if legacy.B != 0 || legacy.BD != 0 || legacy.BV != 0 || legacy.N == 0 || legacy.backWidening(z) != 0 {
		t.Errorf("legacy pool %+v", legacy)
	}
	fresh := legacy
	fresh.Legacy, fresh.B, fresh.BD, fresh.BV = false, 2*MinPoolObjects*40, 2*MinPoolObjects*4, 2*MinPoolObjects*9
	if got := fresh.backWidening(z); math.Abs(got-21) > 1e-12 {
		t.Errorf("B̄ = %v, want 1 + 2·40/4 = 21", got)
	}
}

// TestOwnWidening: (R18). Under independent flags (p = 0.1, 0.4; 200
// sites of 30 objects, n = 60) the share of objects whose own R̂ passes the
// one-sided test is its level 1 − Level within three binomial standard
// errors (the cube-root approximation of q₁, R6); and a published factor
// is never below the object's own R̂ where that passes the test. The exact
// share above q₁ at small n (every arrangement of X changes among 16
// intervals) is logged: the approximation's tail is lighter there.
func TestOwnWidening(t *testing.T) {
	cfg := DefaultConfig()
	z := cfg.zOneSided()
	const ne = 16
	for x := int64(3); x < ne; x += 4 {
		var above, cnt float64
		for mask := 0; mask < 1<<ne; mask++ {
			if int64(bits.OnesCount(uint(mask))) != x {
				continue
			}
			r, se, _ := SpacingDispersion(ne, x, maskSpacingSq(mask, ne))
			cnt++
			if r > nullQuantile(se, z) {
				above++
			}
		}
		t.Logf("n = %d, X = %d: exact share above q₁ %.4f", ne, x, above/cnt)
	}
	const n, m, sites = 60, 30, 200
	for _, p := range []float64{0.1, 0.4} {
		rng := rand.New(rand.NewPCG(47, uint64(p*10)))
		w := flagWorld{draw: func(rng *rand.Rand, n int, f func(int, bool)) {
			for i := 0; i < n; i++ {
				f(i, rng.Float64() < p)
			}
		}}
		var passed, total int
		siteWorld(rng, w, sites, m, n, &cfg, func(c *Change, pool *FlagPool) {
			tm, ok := c.FlagTerm(&cfg)
			if !ok {
				return
			}
			total++
			if tm.R > nullQuantile(1/math.Sqrt(tm.U), z) {
				passed++
				if got := c.SiteFlagDependence(pool, &cfg); got < min(tm.R, n)*(1-1e-12) {
					t.Errorf("published D %v below the object's own R̂ %v", got, tm.R)
				}
			}
		})
		share, level := float64(passed)/float64(total), 1-cfg.Level
		se := math.Sqrt(level * (1 - level) / float64(total))
		t.Logf("independent p %.1f: %.4f of %d objects widened by their own R̂", p, share, total)
		if math.Abs(share-level) > 3*se {
			t.Errorf("independent p %.1f: %.4f of objects widened, want %.2f ± %.4f", p, share, level, 3*se)
		}
	}
}
