package estimators

import "math"

// The site's backward-recurrence factor (issue 31, calibration of bursty
// flags). Beyond the papers.
//
// Why (R4) and (R8) fall short. R̂ reads the spread of the spacings inside
// an object's n intervals. Under bursty flags the count's variance over a
// window of n intervals comes mostly from gaps of the order of n and
// longer (for Weibull gaps of shape ½ at one change per ten intervals,
// 73 % of E[G²] lies in gaps longer than 60 intervals: Q(5, √12), the
// regularized upper incomplete gamma of G = η·E², E ~ Exp(1)), and a
// gap inside the window is seen whole only when it fits: the internal
// spacings are a sample biased toward short gaps, and a site's pooled R̂
// (R8) removes the noise of that sample, not its bias
// (docs/eval/HELDOUT.md, Weibull shape ½, n = 60: the objects' mean R̂
// 1.65 / 1.96 / 2.07 against the finite-window factor Var(X)/(n·p(1−p))
// of 2.81 / 2.81 / 2.40 at r = 0.1 / 0.3 / 1).
//
// The end spacing samples the gaps by their length. In a stationary
// renewal sequence of changed intervals (R1) the number of intervals from
// a fixed point back to the latest changed one, counted as S_X = n + 1 −
// s_X (R2's last spacing: run + 1), has the law of the backward — by
// time reversal of a stationary renewal sequence, also the forward —
// recurrence time,
//
//	P(S = k) = P(G ≥ k)/μ,   k ≥ 1                                       (R13)
//
// (Feller, An Introduction to Probability Theory I, 3rd ed., §XIII.10;
// Cox, Renewal Theory, 1962, §1.3 in discrete time): the point falls in a
// gap with probability proportional to the gap's length, so the long gaps
// that R̂'s internal spacings miss are the ones S samples. Summing (R13),
// E[S] = Σ_k k·P(G ≥ k)/μ = E[G(G + 1)]/(2μ) = (σ² + μ² + μ)/(2μ), and with
// (R1), σ² = D·μ(μ − 1),
//
//	E[S] = μ + (D − 1)(μ − 1)/2,   D = 1 + 2(E[S] − μ)/(μ − 1):           (R14)
//
// the excess of the end spacing over the mean gap measures D through the
// second moment of the gaps (the stationary-renewal identity E[A] =
// E[G²]/(2E[G]) of the forward recurrence time A, Cox 1962 §1.3, in its
// discrete form). Independent flags have E[S] = μ (the geometric gap is
// memoryless) and D = 1.
//
// One object has one end spacing; a site has one per object. Under
// independent flags, given each object's n_i and X_i, its X_i + 1
// spacings are exchangeable (R3: the changed intervals a uniform X-subset
// of n), so E₀[S_X | n, X] = (n + 1)/(X + 1) = μ̂ exactly, and the
// variance of the end spacing is that of one part of the
// Dirichlet-multinomial(M; 1, …, 1) composition of (R3),
//
//	Var₀(S_X | n, X) = M·(K − 1)·(M + K) / (K²·(K + 1)),  M = n − X, K = X + 1.
//
// The site keeps, over the objects of (R7) (regular visits, R̂ defined with
// se₀ > 0), the sums
//
//	B = Σ (S_X,i − μ̂_i),  BD = Σ (μ̂_i − 1),  BV = Σ Var₀(S_X,i | n_i, X_i)   (R15)
//
// (FlagPool; O(1), each object's term replaced at each of its visits as
// R7's are), and its backward-recurrence factor is (R14) with the sums,
//
//	B̄ = 1 + 2·B/BD,   se₀(B̄) = 2·√BV / BD.                              (R16)
//
// Under independent flags B has conditional mean 0 given every n_i, X_i
// and BD is fixed by them, so E₀[B̄] = 1 exactly at any n and X (no
// small-count bias, like R4); and under a renewal B̄ is consistent for
// (R1) as the objects and their windows grow (the end spacings are
// truncated by the window, S_X ≤ n, so for gaps far longer than the
// window B̄ too falls short of D, by less than R̂: its terms sample the
// gaps by length).
//
// The published factor. B̄ enters on the safe side only, and only where
// the site's end spacings exceed their mean beyond their own noise — a
// one-sided test of D ≤ 1 at level 1 − Level (z = Φ⁻¹(Level), 1.645 at
// 95 %; the sum of the site's independent terms, at least MinPoolObjects
// of them, taken as normal):
//
//	D = max(D_R11, B̄)   if B̄ > 1 + z·se₀(B̄),
//	D = D_R11           otherwise,                                       (R17)
//
// bounded to [1/n, n] as (R6). Under independent flags a site widens by
// B̄ with probability about 1 − Level, and a widening that is noise only
// raises the coverage (R6); a nearly periodic site (E[S] < μ) never
// widens by it. Objects without a spacing of their own (X = 0) take it
// with their site's D̄ (R10). A site's sums written before (R15)
// existed (state version 3, FlagPool.Legacy) keep R11 until replayed.

// The object's own burst. (R10) shrinks each object's R̂_i toward its
// site's D̄, the posterior mean of D_i under a normal model of the
// objects' factors. Under bursty flags a window that holds a burst shows
// it in its own spacings (a few long quiet stretches around many adjacent
// changes) and its count is the one most inflated — the windows whose
// interval misses, docs/eval/HELDOUT.md: at r = 0.1 every miss is an
// object with 10–19 changes whose λ_p lies below its interval. Shrinking
// such an R̂_i toward D̄ narrows the interval exactly there. So, as (R6)
// narrows an object only when its own R̂ falls below its null lower
// quantile, an object whose own R̂ lies above its null upper quantile —
// the one-sided test of D_i ≤ 1 at level 1 − Level, with R̂ ~ χ²_ν/ν,
// ν = 2/se₀² (R6) and the cube-root approximation of Wilson & Hilferty,
//
//	q₁ = (1 − se₀²/9 + z·se₀/3)³,
//
// keeps at least its own factor:
//
//	D = max(D_R17, R̂_i)   if R̂_i > q₁,
//	D = D_R17             otherwise,                                     (R18)
//
// bounded to [1/n, n]. Under independent flags about 1 − Level of the
// objects pass the test and are widened by noise (the safe side, R6:
// 5.0 and 5.2 % of 6,000 objects of 60 intervals at p = 0.1 and 0.4,
// TestOwnWidening); the approximation's upper tail is lighter than R̂'s
// where n and X are small (every arrangement of X = 3 / 7 changes among
// 16 intervals: 7.1 / 6.4 % above q₁), so there somewhat more are
// widened, and none narrowed.

// backTerm is one object's term of (R15): S_X − μ̂, μ̂ − 1 and Var₀(S_X).
func (c *Change) backTerm() (b, bd, bv float64, ok bool) {
	n, x := c.Intervals(), c.changes
	if !c.spacingsKept() || x <= 0 || x >= n {
		return 0, 0, 0, false
	}
	M, K := float64(n-x), float64(x+1)
	mu := float64(n+1) / K
	return float64(c.run+1) - mu, mu - 1, M * (K - 1) * (M + K) / (K * K * (K + 1)), true
}

// EndSpacingFactor is B̄ and se₀(B̄) (R16) of the sums b, bd, bv (R15);
// ok=false where bd ≤ 0.
func EndSpacingFactor(b, bd, bv float64) (f, se float64, ok bool) {
	if !(bd > 0) || math.IsInf(bd, 0) || !(bv >= 0) {
		return 0, 0, false
	}
	return 1 + 2*b/bd, 2 * math.Sqrt(bv) / bd, true
}

// backWidening is the site's widening factor of (R17): B̄ where it exceeds
// 1 by more than z·se₀ (R16), 0 otherwise (or for a legacy pool).
func (p *FlagPool) backWidening(z float64) float64 {
	if p.Legacy {
		return 0
	}
	f, se, ok := EndSpacingFactor(p.B, p.BD, p.BV)
	if !ok || !(f > 1+z*se) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
