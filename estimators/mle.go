package estimators

import "math"

// Changed visit intervals of the irregular-visit MLE (CGM §4.3) are kept in
// NumBuckets log-spaced buckets: bucket b holds intervals t (seconds) with
// 2^(b/4 − 4) ≤ t < 2^((b+1)/4 − 4), i.e. four buckets per octave from
// 1/16 s to 2^28 s (8.5 years); shorter and longer intervals fall in the
// first and last bucket. A bucket stands for its geometric centre
// 2^((b+½)/4 − 4), at most ±9% (2^{1/8}) from any interval in it. The
// unchanged intervals enter eq. 2 only through their sum, which is kept
// exactly.
const (
	NumBuckets     = 128
	bucketsPerOct  = 4
	bucketMinLog2  = -4
	bucketQuarter1 = 1.189207115002721  // 2^(1/4)
	bucketQuarter2 = 1.4142135623730951 // 2^(1/2)
	bucketQuarter3 = 1.681792830507429  // 2^(3/4)
)

// BucketOf returns the bucket of an interval t > 0 (seconds).
func BucketOf(t float64) int {
	if !(t > 0) {
		return 0
	}
	frac, exp := math.Frexp(t) // t = frac·2^exp, frac in [0.5, 1)
	m := 2 * frac              // in [1, 2)
	q := 0
	switch {
	case m >= bucketQuarter3:
		q = 3
	case m >= bucketQuarter2:
		q = 2
	case m >= bucketQuarter1:
		q = 1
	}
	b := bucketsPerOct*(exp-1-bucketMinLog2) + q
	if b < 0 {
		return 0
	}
	if b >= NumBuckets {
		return NumBuckets - 1
	}
	return b
}

// BucketCentre is the interval (seconds) that bucket b stands for.
func BucketCentre(b int) float64 {
	return math.Exp2((float64(b)+0.5)/bucketsPerOct + bucketMinLog2)
}

// IrregularMLE solves CGM eq. 2 exactly,
//
//	Σ_i t_ci/(e^{λ t_ci} − 1) = Σ_j t_uj,
//
// given every changed interval t_ci (seconds) and the total unchanged time
// Σ t_uj. It returns λ̂ = 0 when no change was seen, and ok=false in the
// singular case of no unchanged time (every interval changed: λ̂ = ∞) or
// when there is no data. It is the reference for the bucketed state of
// Change (O(n) memory; use it for evaluation, not per object).
func IrregularMLE(changed []float64, unchanged float64) (lambda float64, ok bool) {
	l, _, ok := solveIrregular(changed, nil, unchanged)
	return l, ok
}

// solveIrregular solves Σ w_i t_i/(e^{λ t_i}−1) = u (w = nil means all 1)
// and also returns the observed Fisher information at the root,
// I(λ̂) = Σ w_i t_i² e^{λt_i}/(e^{λt_i}−1)² (−d²/dλ² of the log-likelihood
// of App. C).
//
// h(λ) = Σ w t/(e^{λt}−1) − u is decreasing and convex in λ (each term is
// t·g(λt) with g(y) = 1/(e^y−1), g′ < 0 < g″), so Newton's method started
// left of the root climbs to it monotonically without overshooting. The
// start is the root for equal changed intervals of the mean length
// t̄ = S/m (S = Σ w t, m = Σ w): m·t̄/(e^{λt̄}−1) = u, λ₀ = ln(1 + S/u)/t̄.
// It lies left of the root because t ↦ t/(e^{λt}−1) is convex (Jensen:
// Σ w t/(e^{λt}−1) ≥ m·t̄/(e^{λt̄}−1)), and it is the root itself when all
// changed intervals are equal (one bucket). Halley's steps (h″ costs
// nothing more: the same exponentials) reach the root in two or three
// evaluations of h, against about twenty for the bracketed search
// (solveIrregularBracketed, kept as the fallback should the iteration
// not converge).
func solveIrregular(ts, ws []float64, u float64) (lambda, info float64, ok bool) {
	m, s, decided, ok := irregularBase(ts, ws, u)
	if decided {
		return 0, 0, ok
	}
	x := math.Log1p(s/u) * m / s
	for i := 0; i < 100 && x > 0 && !math.IsInf(x, 1); i++ {
		f, d, d2 := irregularH(ts, ws, u, x)
		if !(d < 0) || math.IsInf(d, -1) || math.IsInf(d2, 1) {
			break
		}
		// Halley's step (cubic convergence); once it is below 1e-6·λ the
		// error of the new point is of the order of 1e-18, and the
		// information there is h'(λ) + h''(λ)·step to O(step²).
		q := f / d
		step := q / (1 - 0.5*math.Min(1, q*d2/d))
		nx := x - step
		if math.Abs(step) <= 1e-6*x {
			return nx, -(d - d2*step), true
		}
		x = nx
	}
	return solveIrregularBracketed(ts, ws, u)
}

// irregularH returns h(λ) = Σ w t/(e^{λt}−1) − u and its first two
// derivatives: with g(y) = 1/(e^y−1) and E = e^y − 1,
// g'(y) = −(1+E)/E² and g″(y) = (1+E)(2+E)/E³.
func irregularH(ts, ws []float64, u, l float64) (f, d, d2 float64) {
	f = -u
	for i, t := range ts {
		w := 1.0
		if ws != nil {
			w = ws[i]
		}
		x := l * t
		e := math.Expm1(x)
		if math.IsInf(e, 1) {
			continue
		}
		g1 := (1 + e) / (e * e)
		f += w * t / e
		d -= w * t * t * g1
		d2 += w * t * t * t * g1 * (2 + e) / e
	}
	return f, d, d2
}

// solveIrregularBracketed solves Σ w_i t_i/(e^{λ t_i}−1) = u (w = nil means all 1)
// and also returns the observed Fisher information at the root,
// I(λ̂) = Σ w_i t_i² e^{λt_i}/(e^{λt_i}−1)² (−d²/dλ² of the log-likelihood
// of App. C).
//
// h(λ) = Σ w t/(e^{λt}−1) − u is strictly decreasing from +∞ to −u. At the
// naive rate λ₀ = m/(S+u) (S = Σ w t) h(λ₀) ≥ m/λ₀ − S/2 − u = S/2 > 0, so
// λ₀ is a lower bracket; the upper bracket is found by doubling. Newton
// steps are safeguarded by bisection (geometric mean) inside the bracket.
func solveIrregularBracketed(ts, ws []float64, u float64) (lambda, info float64, ok bool) {
	m, s, decided, ok := irregularBase(ts, ws, u)
	if decided {
		return 0, 0, ok
	}
	h := func(l float64) (f, d float64) {
		f = -u
		for i, t := range ts {
			w := 1.0
			if ws != nil {
				w = ws[i]
			}
			x := l * t
			e := math.Expm1(x)
			if math.IsInf(e, 1) {
				continue
			}
			f += w * t / e
			d -= w * t * t / (e * (e / (1 + e))) // 1 − e^{−x} = e/(1+e)
		}
		return f, d
	}
	lo := m / (s + u)
	hi := lo
	for i := 0; i < 2100; i++ {
		hi *= 2
		if f, _ := h(hi); f < 0 {
			break
		}
	}
	x := lo * 1.5
	if x >= hi {
		x = math.Sqrt(lo * hi)
	}
	for i := 0; i < 300; i++ {
		f, d := h(x)
		if f == 0 {
			break
		}
		if f > 0 {
			lo = x
		} else {
			hi = x
		}
		nx := x - f/d
		if !(nx > lo && nx < hi) || !(d < 0) {
			nx = math.Sqrt(lo * hi)
		}
		if math.Abs(nx-x) <= 1e-13*x {
			x = nx
			break
		}
		x = nx
		if hi-lo <= 1e-15*hi {
			break
		}
	}
	_, d := h(x)
	return x, -d, true
}

// irregularBase returns the weighted count m = Σ w and time sum S = Σ w t of
// the irregular-visit likelihood, and decided when no root needs to be
// sought: λ̂ = 0 (ok) with no change seen in u > 0 of unchanged time, or
// no estimate (not ok) for invalid sums, u = 0 or S ≤ 0.
func irregularBase(ts, ws []float64, u float64) (m, s float64, decided, ok bool) {
	for i, t := range ts {
		w := 1.0
		if ws != nil {
			w = ws[i]
		}
		m += w
		s += w * t
	}
	switch {
	case math.IsNaN(u) || u < 0 || math.IsInf(u, 0) || math.IsInf(s, 0) || math.IsNaN(s):
		return m, s, true, false
	case m == 0:
		return m, s, true, u > 0
	case u == 0 || !(s > 0):
		return m, s, true, false
	}
	return m, s, false, false
}
