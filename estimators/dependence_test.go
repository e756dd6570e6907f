package estimators

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// markovFlags draws n flags of the stationary two-state Markov chain with
// P(x=1) = p and lag-1 correlation ρ: P(1|1) = p + ρ(1−p), P(1|0) = p(1−ρ)
// (so that P(1|1) − P(1|0) = ρ and p = P(1|0)/(1 − ρ)).
func markovFlags(rng *rand.Rand, n int, p, rho float64, f func(i int, x bool)) {
	p11, p01 := p+rho*(1-p), p*(1-rho)
	x := rng.Float64() < p
	for i := 0; i < n; i++ {
		if i > 0 {
			if x {
				x = rng.Float64() < p11
			} else {
				x = rng.Float64() < p01
			}
		}
		f(i, x)
	}
}

// finiteFactor is (D1) for ρ_h = ρ^h: 1 + 2·Σ_{h<n} (1 − h/n)·ρ^h.
func finiteFactor(n int, rho float64) float64 {
	s, r := 1.0, 1.0
	for h := 1; h < n; h++ {
		r *= rho
		s += 2 * (1 - float64(h)/float64(n)) * r
	}
	return s
}

// renewalFlags draws n flags whose changed intervals form a stationary
// discrete renewal sequence with gaps from gap (≥ 1): the sequence starts
// 50 mean gaps before the window, so the window's phase is stationary to
// within e^{−50}-small terms for the gap laws below.
func renewalFlags(rng *rand.Rand, n int, mean float64, gap func(*rand.Rand) int, f func(i int, x bool)) {
	next := -int(50 * mean)
	for next < 0 {
		next += gap(rng)
	}
	for i := 0; i < n; i++ {
		x := false
		if i == next {
			x = true
			next += gap(rng)
		}
		f(i, x)
	}
}

// geometric draws a Geometric(b) variate on {1, 2, …}.
func geometric(rng *rand.Rand, b float64) int {
	return 1 + int(math.Floor(math.Log(1-rng.Float64())/math.Log1p(-b)))
}

// flagWorld is a law of change flags with its variance factor D (R1).
type flagWorld struct {
	name string
	p, D float64
	draw func(rng *rand.Rand, n int, f func(i int, x bool))
}

// flagWorlds: independent flags; the two-state Markov chain (D2); a bursty
// renewal, G = 1 + B·Y with B ~ Bernoulli(0.4), Y ~ Geometric(0.1) (μ =
// 5, σ² = 0.4·(90 + 100) − 4² = 60, D = 60/(5·4) = 3); and a nearly
// periodic one, G uniform on {3, …, 7} (μ = 5, σ² = 2, D = 2/20 = 0.1).
func flagWorlds() []flagWorld {
	markov := func(p, rho float64) func(*rand.Rand, int, func(int, bool)) {
		return func(rng *rand.Rand, n int, f func(int, bool)) { markovFlags(rng, n, p, rho, f) }
	}
	return []flagWorld{
		{"independent p=0.2", 0.2, 1, markov(0.2, 0)},
		{"independent p=0.5", 0.5, 1, markov(0.5, 0)},
		{"Markov p=0.2 ρ=0.3", 0.2, VarianceFactor(0.3), markov(0.2, 0.3)},
		{"Markov p=0.5 ρ=0.6", 0.5, VarianceFactor(0.6), markov(0.5, 0.6)},
		{"Markov p=0.3 ρ=−0.3", 0.3, VarianceFactor(-0.3), markov(0.3, -0.3)},
		{"bursty renewal", 0.2, 3, func(rng *rand.Rand, n int, f func(int, bool)) {
			renewalFlags(rng, n, 5, func(r *rand.Rand) int {
				if r.Float64() < 0.4 {
					return 1 + geometric(r, 0.1)
				}
				return 1
			}, f)
		}},
		{"periodic renewal", 0.2, 0.1, func(rng *rand.Rand, n int, f func(int, bool)) {
			renewalFlags(rng, n, 5, func(r *rand.Rand) int { return 3 + r.IntN(5) }, f)
		}},
	}
}

// TestVarianceFactorRenewal: for flags with a known factor D (R1; D2 for
// the Markov chain), the simulated variance of the count over the
// binomial variance n·p(1−p) is D, and the mean of R̂ (R4) over the
// objects is D. Tolerances: the sample variance of K counts has relative
// standard error √(2/(K−1)) (near-normal counts), three of them; the
// renewal CLT's variance n·σ²/μ³ has an O(1) remainder (Cox 1962, §4.5:
// 1/12 + 5σ⁴/(4μ⁴) − 2μ₃/(3μ³) for continuous gaps), allowed as 3/(n·p(1−p))
// (for the Markov chain |D1 − D2| from finiteFactor is added);
// the mean of R̂ has its standard error (sample sd/√K), three of them,
// plus the bias of its two end spacings (censored gaps) among K̄ = n·p + 1,
// allowed as 4·max(D, 1)/K̄ (each end spacing's squared size is at most
// about twice a gap's, E[S_end²] ≈ E[G³]/(3μ) against E[G²]).
func TestVarianceFactorRenewal(t *testing.T) {
	const n, K = 400, 4000
	for wi, w := range flagWorlds() {
		rng := rand.New(rand.NewPCG(uint64(wi)+11, 5))
		var sx, sxx, sr, srr float64
		nr := 0
		for k := 0; k < K; k++ {
			var c Change
			c.Visit(Visit{Time: 0})
			X := 0
			w.draw(rng, n, func(i int, x bool) {
				c.Visit(Visit{Time: float64(i + 1), Changed: x})
				if x {
					X++
				}
			})
			sx += float64(X)
			sxx += float64(X) * float64(X)
			if r, _, ok := c.FlagDispersion(); ok {
				sr += r
				srr += r * r
				nr++
			}
		}
		mean := sx / K
		v := (sxx - K*mean*mean) / (K - 1)
		got := v / (n * w.p * (1 - w.p))
		tol := 3*math.Sqrt(2.0/(K-1))*w.D + 3/(n*w.p*(1-w.p))
		if strings.HasPrefix(w.name, "Markov") || strings.HasPrefix(w.name, "independent") {
			rho := (w.D - 1) / (w.D + 1)
			tol += math.Abs(finiteFactor(n, rho) - w.D)
		}
		if math.Abs(got-w.D) > tol {
			t.Errorf("%s: Var(X)/(np(1−p)) = %.4f, D = %.4f ± %.4f", w.name, got, w.D, tol)
		}
		mr := sr / float64(nr)
		sd := math.Sqrt((srr/float64(nr) - mr*mr))
		rtol := 3*sd/math.Sqrt(float64(nr)) + 4*max(w.D, 1)/(n*w.p+1)
		if math.Abs(mr-w.D) > rtol {
			t.Errorf("%s: mean R̂ = %.4f, D = %.4f ± %.4f", w.name, mr, w.D, rtol)
		}
		t.Logf("%s: variance ratio %.3f, D %.3f ± %.3f; mean R̂ %.4f ± %.4f (sd %.3f)", w.name, got, w.D, tol, mr, rtol, sd)
	}
}

// TestSpacingNullMoments: E₀[V] (R3) and Var₀(Q) (R5) equal the mean and
// variance of Q over every X-subset of n = 12 intervals (the changed
// intervals of independent flags given X are a uniform subset), to
// rounding.
func TestSpacingNullMoments(t *testing.T) {
	const n = 12
	for x := int64(1); x < n; x++ {
		var s, ss, cnt float64
		for mask := 0; mask < 1<<n; mask++ {
			if int64(bits.OnesCount(uint(mask))) != x {
				continue
			}
			q := maskSpacingSq(mask, n)
			s += float64(q)
			ss += float64(q) * float64(q)
			cnt++
		}
		mq := s / cnt
		vq := ss/cnt - mq*mq
		ev, sdq := spacingNull(n, x)
		if wantEV := mq - float64((n+1)*(n+1))/float64(x+1); math.Abs(ev-wantEV) > 1e-9*mq {
			t.Errorf("X = %d: E₀[V] = %v, enumeration %v", x, ev, wantEV)
		}
		if math.Abs(sdq*sdq-vq) > 1e-9*mq*mq {
			t.Errorf("X = %d: Var₀(Q) = %v, enumeration %v", x, sdq*sdq, vq)
		}
	}
	// se₀² → 4/K (R5) for large n and X.
	ev, sdq := spacingNull(1_000_000, 200_000)
	if got := (sdq / ev) * (sdq / ev) * 200_001; math.Abs(got-4) > 0.01 {
		t.Errorf("K·se₀² = %v, want → 4", got)
	}
}

// TestFlagDispersionCases: (R4) and (R6) on hand-counted sequences.
// "0110": spacings 2, 1, 2, Q = 9, V = 9 − 25/3 = 2/3, E₀[V] = 2·5·2/(3·4)
// = 5/3 (FlagSpread), R̂ = 0.4; "1001": spacings 1, 3, 1, Q = 11, R̂ = 1.6. At n = 4,
// X = 2 the six subsets give Q ∈ {9, 11} equally: Var₀(Q) = 1, se₀ =
// 0.6, so 0.4 is within noise (1 − 1.645·0.6 < 0.4): D = 1.
func TestFlagDispersionCases(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		flags    string
		r, se, D float64
		ok       bool
	}{
		{"0110", 0.4, 0.6, 1, true},
		{"1001", 1.6, 0.6, 1.6, true},
		{"0000", 0, 0, 1, false},
		{"1111", 0, 0, 1, false},
		{"1", 0, 0, 1, false},
	} {
		var c Change
		c.Visit(Visit{Time: 0})
		for i, ch := range tc.flags {
			c.Visit(Visit{Time: float64(i + 1), Changed: ch == '1'})
		}
		r, se, ok := c.FlagDispersion()
		if ok != tc.ok || math.Abs(r-tc.r) > 1e-12 || math.Abs(se-tc.se) > 1e-12 {
			t.Errorf("%s: R̂ = %v ± %v %v, want %v ± %v %v", tc.flags, r, se, ok, tc.r, tc.se, tc.ok)
		}
		if D := c.FlagDependence(&cfg); math.Abs(D-tc.D) > 1e-12 {
			t.Errorf("%s: D = %v, want %v", tc.flags, D, tc.D)
		}
		if v, ev, ok := c.FlagSpread(); ok != tc.ok || (ok && math.Abs(v/ev-tc.r) > 1e-12) {
			t.Errorf("%s: V/E₀[V] = %v/%v %v, want R̂ %v", tc.flags, v, ev, ok, tc.r)
		}
	}
	// A long periodic sequence narrows: gaps of exactly 5, n = 200.
	var c Change
	c.Visit(Visit{Time: 0})
	for i := 1; i <= 200; i++ {
		c.Visit(Visit{Time: float64(i), Changed: i%5 == 3})
	}
	r, se, _ := c.FlagDispersion()
	if D := c.FlagDependence(&cfg); !(r < 1-1.645*se) || D != r {
		t.Errorf("periodic: R̂ %v ± %v, D %v: want D = R̂ < 1", r, se, D)
	}
}

// TestDependentCoverage: on regular visits whose change flags follow a law
// of flagWorlds with P(change) = p, the identified rate is λ_p = −ln(1 −
// p) per interval (CGM §4: every visit estimator reads p), known here.
// The published 95 % interval covers it in 93–97 % of the objects — for
// independent flags, the Markov chain (ρ 0.3, 0.6, −0.3), and the bursty
// and nearly periodic renewals — widened by 2·√(0.95·0.05/K), the
// binomial sampling error of a coverage on K objects; the estimator's
// own (independent-flag) interval, listed in Estimates, covers it in less
// than 90 % where D ≥ 1.8 and more than 99 % where D ≤ 0.2, so the check
// can fail without the factor. n = 200 intervals (about 40 changes at p =
// 0.2: K ≈ 41 spacings, se₀ ≈ 0.3).
func TestDependentCoverage(t *testing.T) {
	const n, K = 200, 1500
	cfg := DefaultConfig()
	lo, hi := 0.93-2*math.Sqrt(0.95*0.05/K), 0.97+2*math.Sqrt(0.95*0.05/K)
	for wi, w := range flagWorlds() {
		rng := rand.New(rand.NewPCG(uint64(wi)+7, 31))
		truth := -math.Log1p(-w.p)
		var covered, own, total int
		var out Estimates
		for k := 0; k < K; k++ {
			var c Change
			c.Visit(Visit{Time: 0})
			w.draw(rng, n, func(i int, x bool) { c.Visit(Visit{Time: float64(i + 1), Changed: x}) })
			best, ok := c.Estimate(n, &cfg, &out)
			if !ok || !best.HasCI {
				continue
			}
			total++
			if best.Lo <= truth && truth <= best.Hi {
				covered++
			}
			if e, _ := out.Get(best.Key); e.Lo <= truth && truth <= e.Hi {
				own++
			}
		}
		cov, ownCov := float64(covered)/float64(total), float64(own)/float64(total)
		t.Logf("%s: published coverage %.3f, independent-flag interval %.3f (%d objects)", w.name, cov, ownCov, total)
		if cov < lo || cov > hi {
			t.Errorf("%s: coverage %.3f ∉ [%.3f, %.3f]", w.name, cov, lo, hi)
		}
		if (w.D >= 1.8 && ownCov >= 0.90) || (w.D <= 0.2 && ownCov <= 0.99) {
			t.Errorf("%s: the independent-flag interval covers %.3f: the check cannot tell the factor", w.name, ownCov)
		}
	}
}

// TestDependenceEncoding: run and Q_c round-trip, a corrupt Q_c or run is
// rejected (Q_c above its greatest value for the spacings; run above the
// unchanged intervals), and a version-2 state continues from its imported
// statistics (TestEncodingGoldenV1: run 1, Q_c 2) exactly as a live one.
func TestDependenceEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var c Change
	c.Visit(Visit{Time: 1e9})
	markovFlags(rng, 300, 0.4, 0.5, func(i int, x bool) { c.Visit(Visit{Time: 1e9 + float64(i+1)*3600, Changed: x}) })
	ref := c.latest()
	b := c.AppendBinaryAt(nil, ref)
	var d Change
	if _, err := d.DecodeBinaryAt(b, ref); err != nil || d != c {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, d, c)
	}
	_, hi := spacingBounds(c.Intervals()-c.run, c.changes)
	for _, bad := range []func(*Change){
		func(s *Change) { s.sq = hi + 1 },
		func(s *Change) { s.run = s.Intervals() - s.changes + 1 },
	} {
		x := c
		bad(&x)
		if _, err := d.DecodeBinaryAt(x.AppendBinaryAt(nil, ref), ref); err == nil {
			t.Errorf("corrupt state decoded: run %d, Q_c %d", x.run, x.sq)
		}
	}

	v2 := goldenFile(t, "encoding_v2.golden")[0]
	var o Change
	if _, err := o.DecodeBinaryAt(v2.b, goldenRef); err != nil {
		t.Fatal(err)
	}
	live := o
	for i, x := range []bool{true, true, false, true, true, true, false} {
		o.Visit(Visit{Time: goldenRef + float64(i+1)*86400, Changed: x})
	}
	// From run 1: spacings 2, 1, 2, 1, 1 close, then run 1 again.
	if want := live.sq + 4 + 1 + 4 + 1 + 1; o.sq != want || o.run != 1 {
		t.Errorf("after a v2 state: Q_c %d, run %d; want %d, 1", o.sq, o.run, want)
	}
	var p Change
	if _, err := p.DecodeBinaryAt(o.AppendBinaryAt(nil, o.latest()), o.latest()); err != nil || p != o {
		t.Errorf("continued v2 state round trip: %v", err)
	}
}

// TestNarrowingNull: under independent flags, given X, every arrangement
// of the changes among n intervals is equally likely, so the probability
// that (R6) narrows (R̂ < q₀) is the share of the C(n, X) arrangements
// with R̂ < q₀, enumerated here for n = 20 and every X. It is at most
// 1 − Level = 5 % for each X (the test's level); the scaled chi-square
// (Satterthwaite) quantile is an approximation, so each X is allowed 1 %
// above, and the share over X weighted as Binomial(n, p) at p = 0.1–0.9
// must stay at most 5 %.
func TestNarrowingNull(t *testing.T) {
	const n = 20
	cfg := DefaultConfig()
	z := cfg.zOneSided()
	share := make([]float64, n+1)
	counts := make([]float64, n+1)
	for mask := 0; mask < 1<<n; mask++ {
		x := int64(bits.OnesCount(uint(mask)))
		if x == 0 || x == n {
			continue
		}
		q := maskSpacingSq(mask, n)
		r, se, _ := SpacingDispersion(n, x, q)
		counts[x]++
		if r < narrowingQuantile(x, se, z) {
			share[x]++
		}
	}
	for x := 1; x < n; x++ {
		share[x] /= counts[x]
		if share[x] > 0.06 {
			t.Errorf("X = %d: narrowed in %.4f of the arrangements", x, share[x])
		}
	}
	t.Logf("share narrowed by X: %.3f", share[1:n])
	for _, p := range []float64{0.1, 0.3, 0.5, 0.7, 0.9} {
		tot := 0.0
		for x := 1; x < n; x++ {
			tot += share[x] * math.Exp(lgammaInt(n)-lgammaInt(x)-lgammaInt(n-x)+float64(x)*math.Log(p)+float64(n-x)*math.Log1p(-p))
		}
		if tot > 0.05 {
			t.Errorf("p %.1f: narrowed in %.4f of the objects", p, tot)
		}
		t.Logf("p %.1f: narrowed in %.4f of the objects", p, tot)
	}
}

// TestNarrowingNullSampled: as TestNarrowingNull for n = 60 and 200 (the
// held-out worlds' and TestDependentCoverage's lengths), with 20,000
// uniformly random arrangements of X changes each: the share narrowed is
// at most 5 % plus three binomial standard errors (√(0.05·0.95/20000)).
func TestNarrowingNullSampled(t *testing.T) {
	cfg := DefaultConfig()
	z := cfg.zOneSided()
	rng := rand.New(rand.NewPCG(8, 9))
	const trials = 20000
	for _, n := range []int{60, 200} {
		for _, x := range []int{3, 6, 12, n / 3, n / 2, n * 9 / 10} {
			narrowed := 0
			perm := make([]bool, n)
			for k := 0; k < trials; k++ {
				for i := range perm {
					perm[i] = i < x
				}
				rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
				var q, prev int64
				for i := 1; i <= n; i++ {
					if perm[i-1] {
						q += int64(i-int(prev)) * int64(i-int(prev))
						prev = int64(i)
					}
				}
				q += (int64(n) + 1 - prev) * (int64(n) + 1 - prev)
				r, se, _ := SpacingDispersion(int64(n), int64(x), q)
				if r < narrowingQuantile(int64(x), se, z) {
					narrowed++
				}
			}
			share := float64(narrowed) / trials
			if share > 0.05+3*math.Sqrt(0.05*0.95/trials) {
				t.Errorf("n %d X %d: narrowed in %.4f", n, x, share)
			}
			t.Logf("n %d X %d: narrowed in %.4f", n, x, share)
		}
	}
}

func lgammaInt(k int) float64 { v, _ := math.Lgamma(float64(k + 1)); return v }

// TestSpacingLimits: the integer arithmetic of the spacing statistics at
// the largest kept n (2³¹ − 1 intervals) stays in range, and past it run
// and Q_c are zero, encode as such, and leave D = 1.
func TestSpacingLimits(t *testing.T) {
	const l = maxSpacingIntervals
	for _, x := range []int64{1, 2, 1000, l - 1, l} {
		lo, hi := spacingBounds(l, x)
		e := expectedSpacingSq(l, x)
		if !(0 < lo && lo <= e && e <= hi) {
			t.Errorf("l = 2³¹−1, X = %d: bounds %d, %d, expectation %d", x, lo, hi, e)
		}
	}
	var c Change
	c.Visit(Visit{Time: 0})
	c.visits, c.run = maxSpacingIntervals+1, maxSpacingIntervals // n = 2³¹−1 unchanged intervals
	c.Visit(Visit{Time: 1, Changed: true})
	if c.run != 0 || c.sq != 0 || c.spacingsKept() {
		t.Fatalf("past the limit: run %d, Q_c %d", c.run, c.sq)
	}
	var d Change
	if _, err := d.DecodeBinaryAt(c.AppendBinaryAt(nil, 1), 1); err != nil || d != c {
		t.Errorf("past the limit: round trip %v\n%+v\n%+v", err, d, c)
	}
	cfg := DefaultConfig()
	if _, _, ok := c.FlagDispersion(); ok || c.FlagDependence(&cfg) != 1 {
		t.Error("past the limit: R̂ defined")
	}
}

// maskSpacingSq is Σ S_j² of the spacings of the flags set in mask over n
// intervals: from 0 to the first set flag, between set flags, and from
// the last to n + 1.
func maskSpacingSq(mask int, n int64) int64 {
	var q, prev int64
	for i := int64(1); i <= n; i++ {
		if mask>>(i-1)&1 == 1 {
			q += (i - prev) * (i - prev)
			prev = i
		}
	}
	return q + (n+1-prev)*(n+1-prev)
}
