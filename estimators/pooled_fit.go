package estimators

import "math"

// The fitted grid of the existence-of-change posterior (PooledEstimate).
//
// In s = log λ the posterior density per unit of s is e^{ℓ(s)} with (P3)
//
//	ℓ(s) = α·s − b·λ + Σ_i w_i·g(λ t_i),   g(y) = log(1 − e^{−y}),    b = β + U.
//
// With y = λt, q = 1 − e^{−y}, p = e^{−y}, v = p/q = 1/(e^y − 1) and dy/ds = y:
//
//	ℓ′(s)   = α − bλ + Σ w_i·r(y_i),                 r = y·v,                        (F1)
//	ℓ″(s)   = −bλ + Σ w_i·y_i·r′(y_i),               r′ = v·(1 − y/q),               (F2)
//	ℓ‴(s)   = −bλ + Σ w_i·(y_i·r′ + y_i²·r″),        r″ = −(v/q)·(2 − y/q − y·p/q).  (F3)
//
// r(y) = y/(e^y − 1) decreases in y and y increases in s, so each g is
// concave in s, and so is −bλ: ℓ is concave (the posterior of log λ is
// log-concave). Three consequences fit the grid to it:
//
//  1. its mode m is the one root of ℓ′, found by Newton's method from the
//     conjugate approximation's mode log((α + X)/(β + E)) (Evidence), with
//     steps clipped to ±2; σ = (−ℓ″(m))^{−1/2} is the Laplace
//     approximation's standard deviation;
//  2. the grid s_j = m + j·h grows outward from m until each tail is
//     bounded (below). Its spacing is h = fitStep/√κ, κ the largest
//     curvature −ℓ″ where the mass is, weighted by w^{1/3} (w = f/f(m) ≤ 1,
//     over nodes with w ≥ fitBulk): the errors (F5, F6) are of order
//     h⁶·|f⁽⁵⁾| ~ w·(h²κ)³ locally, so a skewed posterior whose curvature
//     grows away from m (the upper tail of a Gamma in log λ, the sharp
//     lower edge of a floored object's) is spaced by its curvature there.
//     κ is taken first from ℓ″ at m and m ± σ, m ± 2σ, and then checked
//     on the walked grid's slope differences (ℓ′_j − ℓ′_{j+1})/h; a grid
//     more than 1.2 times too coarse is walked again (at most 3 times).
//     The tails: ℓ lies below its tangent at any node s_J, so
//     beyond the last node on the right (ℓ′_J < −1)
//
//     ∫_{s_J}^∞ e^{ℓ} ds ≤ e^{ℓ_J}/|ℓ′_J|,  ∫_{s_J}^∞ λ·e^{ℓ} ds ≤ λ_J·e^{ℓ_J}/(|ℓ′_J| − 1),   (F4)
//
//     and on the left (ℓ′_J > 0) e^{ℓ_J}/ℓ′_J bounds both (λ < λ_J there);
//     the walk stops when these are below fitTail·h·e^{ℓ(m)} (·λ_m for the
//     mean's), fitTail of the grid's mass, which is at least h·e^{ℓ(m)}
//     (the node at m): the truncation moves the mean by at most 2·fitTail
//     and F by fitTail, a quantile by fitTail/f ≲ 10⁻⁶. Heavy tails (a small shape: ℓ′ → α + Σw as s → −∞)
//     only lengthen the walk; a walk past fitSide nodes on a side hands
//     the posterior to the 160-point grid (gridChanges);
//  3. the posterior is smooth and decays at both ends, so the trapezoid
//     sums h·Σ f_j and h·Σ λ_j·f_j (f_j = e^{ℓ_j − ℓ(m)}) are the
//     integrals up to the tails (F4) and an aliasing error of the order
//     of the density's Fourier transform at 2π/h: for a Gaussian
//     2·e^{−2π²/fitStep²} ≈ 10⁻³⁴, for the most skewed posterior here,
//     Gamma(1) in log λ (shape α + Σw ≥ 1 when an interval changed),
//     |Γ(1 + iω)| = (πω/sinh πω)^{1/2} at ω = 2π/h ≈ 10⁻⁶.
//     The mean (P1) is their ratio.
//
// The equal-tailed interval needs the CDF F at interior points, where the
// trapezoid rule is only of order h². The Euler–Maclaurin formula with the
// grid's left end, where f and its derivatives are below fitTail, gives
// it at a node s_J from the partial sum and derivatives at s_J alone:
//
//	F(s_J) = h·(Σ_{j<J} f_j + f_J/2) − h²/12·f′_J + h⁴/720·f‴_J + R,            (F5)
//	f′ = ℓ′·f,   f‴ = (ℓ‴ + 3ℓ′ℓ″ + ℓ′³)·f,
//
// with R ≈ h⁶/30240·f⁽⁵⁾ (Bernoulli B₆/6!) plus the trapezoid sum's
// aliasing error (item 3): for a Gaussian of unit σ
// |f⁽⁵⁾| ≤ 1 near its 2.5 % quantile, R ≲ 5·10⁻⁷ at h = σ/2, which moves
// the quantile by R/f ≈ 10⁻⁵·σ in s, a relative 10⁻⁵·σ in λ. Between the
// nodes s_J and s_{J+1}, F is the quintic Hermite interpolant of F, F′ =
// f and F″ = f′ at both ends, θ = (s − s_J)/h:
//
//	F(θ) = H₀F_J + H₁h f_J + H₂h² f′_J + H₃h² f′_{J+1} + H₄h f_{J+1} + H₅F_{J+1},   (F6)
//	H₀ = 1 − 10θ³ + 15θ⁴ − 6θ⁵,  H₁ = θ − 6θ³ + 8θ⁴ − 3θ⁵,  H₂ = (θ² − 3θ³ + 3θ⁴ − θ⁵)/2,
//	H₃ = (θ³ − 2θ⁴ + θ⁵)/2,  H₄ = −4θ³ + 7θ⁴ − 3θ⁵,  H₅ = 10θ³ − 15θ⁴ + 6θ⁵,
//
// whose error is at most |f⁽⁵⁾|/6!·(h/2)⁶ ≈ 3·10⁻⁷ (same Gaussian); the
// quantile is its root for p·F(∞), by Newton's method with F′ from (F6)
// safeguarded by bisection. Together: the interval ends within a relative
// ~2·10⁻⁵·σ of the exact posterior's, the mean within ~10⁻⁶
// (TestPooledFitAccuracy measures both against an independent fine
// integration: at most 1.4·10⁻⁵ and 2.2·10⁻⁹ on its 595 posteriors;
// fitStep = 0.6 gave 4.7·10⁻⁵ for 5 % less CPU). The weights f_j are (P4)'s product where e^{c_j} cannot
// overflow (c_j ≤ 600; where the product underflows, f_j < e^{−108}) and
// the log form (P3) otherwise.

// fitStep is the fitted grid's spacing h in Laplace standard deviations σ.
const fitStep = 0.5

// fitTail bounds each tail's mass beyond the grid (F4), relative to the
// grid's.
const fitTail = 1e-8

// fitSide is the most nodes on each side of the mode.
const fitSide = 160

// fitBulk is the least weight f_j (relative to the mode's) of the nodes
// whose curvature sets the spacing.
const fitBulk = 1e-4

// fitDerivs returns ℓ′, ℓ″ and ℓ‴ (F1–F3) at s, and, when withLog,
// Σ w_i·log q_i (the likelihood's log at λ = e^s; else 0); ok is false
// where q underflows.
func fitDerivs(s, a, b float64, ts, ws []float64, withLog bool) (d1, d2, d3, ll float64, ok bool) {
	lam := math.Exp(s)
	d1, d2, d3 = a-b*lam, -b*lam, -b*lam
	for i, t := range ts {
		y := lam * t
		q := -math.Expm1(-y)
		if !(q > 0) {
			return 0, 0, 0, 0, false
		}
		if withLog {
			ll += ws[i] * math.Log(q)
		}
		p := 1 - q
		v := p / q
		r1 := v * (1 - y/q)
		r2 := -v / q * (2 - y/q - y*p/q)
		d1 += ws[i] * y * v
		d2 += ws[i] * y * r1
		d3 += ws[i] * (y*r1 + y*y*r2)
	}
	return d1, d2, d3, ll, !math.IsNaN(d1+d2+d3+ll) && !math.IsInf(d1+d2+d3+ll, 0)
}

// fitGrid holds the fitted grid: nodes s_j = m + (j − fitSide)·h for j in
// [lo, hi], their λ_j, weights f_j = e^{ℓ_j − ℓ(m)} and ℓ′_j.
type fitGrid struct {
	m, h        float64
	lo, hi      int
	lam, f, d   [2*fitSide + 1]float64
	a, b        float64
	ts, ws      []float64
	total, mean float64
	integral    bool // every count an integer below 2³²: the product form applies
}

// fitChanges is the existence-of-change posterior's estimate on the fitted
// grid (F1–F6); ok is false where it declines (Newton does not converge,
// a tail is longer than fitSide nodes, a count is negative or not finite,
// or a value is not finite) and the caller falls back to gridChanges.
// Counts that are not integers below 2³² (the tempered likelihood of
// dependence_pool.go R12 divides them by D) take the log form at every
// node.
func fitChanges(prior GammaPrior, ev Evidence, ts, ws []float64, u float64, cfg *Config) (Estimate, bool) {
	integral := true
	for _, c := range ws {
		if !(c >= 0) || math.IsInf(c, 0) {
			return Estimate{}, false
		}
		integral = integral && c < 1<<32 && c == math.Trunc(c)
	}
	g := fitGrid{a: prior.Shape, b: prior.Rate + u, ts: ts, ws: ws[:len(ts)], integral: integral}
	if !g.fit(math.Log((prior.Shape + ev.X) / (prior.Rate + ev.E))) {
		return Estimate{}, false
	}
	pLo, pHi := cfg.tails()
	lo, ok1 := g.quantile(pLo)
	hi, ok2 := g.quantile(pHi)
	if !ok1 || !ok2 {
		return Estimate{}, false
	}
	return Estimate{Key: KeyPooled, Rate: g.mean, Lo: lo, Hi: hi, HasCI: true}, true
}

// fit finds the mode from s0, walks the grid out to both tails (F4) and
// sums the mass and the mean.
func (g *fitGrid) fit(s0 float64) bool {
	s := s0
	var d1, d2, ll float64
	ok := false
	for it := 0; it < 40; it++ {
		var good bool
		d1, d2, _, _, good = fitDerivs(s, g.a, g.b, g.ts, g.ws, false)
		if !good || !(d2 < 0) {
			return false
		}
		if math.Abs(d1) < 0.05*math.Sqrt(-d2) { // within 0.05σ: ℓ within 0.002 of its top
			ok = true
			break
		}
		s -= math.Max(-2, math.Min(2, d1/d2))
	}
	if !ok {
		return false
	}
	g.m = s
	lm := math.Exp(s)
	for i, t := range g.ts { // the log likelihood at the mode
		ll += g.ws[i] * math.Log(-math.Expm1(-lm*t))
	}
	if math.IsInf(ll, 0) || math.IsNaN(ll) {
		return false
	}
	// The first spacing from the curvature at m and at m ± σ, m ± 2σ,
	// weighted as below; the walk's own slopes then check it.
	k3, sd := -d2*d2*d2, 1/math.Sqrt(-d2) // max κ³·w
	for _, z := range [4]float64{-2, -1, 1, 2} {
		_, c2, _, l, good := fitDerivs(s+z*sd, g.a, g.b, g.ts, g.ws, true)
		lf := g.a*z*sd - g.b*lm*(math.Exp(z*sd)-1) + l - ll
		if !good || !(c2 < 0) || !(lf > math.Log(fitBulk)) {
			continue
		}
		w := 1.0
		if lf < 0 {
			w = math.Exp(lf)
		}
		if k := -c2 * c2 * c2 * w; k > k3 {
			k3 = k
		}
	}
	h := fitStep / math.Sqrt(math.Cbrt(k3))
	for pass := 0; ; pass++ {
		if !g.walk(h, d1, ll) {
			return false
		}
		// The largest curvature where the mass is, from the slopes'
		// differences (ℓ″ between two nodes, by concavity ≥ 0 here).
		k3 := 0.0 // max κ³·w
		for j := g.lo; j < g.hi; j++ {
			w := g.f[j]
			if g.f[j+1] > w {
				w = g.f[j+1]
			}
			if w > 1 {
				w = 1
			}
			if k := g.d[j] - g.d[j+1]; w >= fitBulk && k*k*k*w > k3 {
				k3 = k * k * k * w
			}
		}
		next := fitStep / math.Sqrt(math.Cbrt(k3)/g.h)
		if !(next < g.h/1.2) || pass == 3 {
			break
		}
		h = next
	}
	var t, mt float64
	for j := g.lo; j <= g.hi; j++ {
		t += g.f[j]
		mt += g.f[j] * g.lam[j]
	}
	g.total, g.mean = g.h*t, mt/t
	return t > 0 && !math.IsInf(t, 0) && !math.IsInf(mt, 0) && !math.IsNaN(mt)
}

// walk lays the grid of spacing h out from the mode to both tails (F4).
func (g *fitGrid) walk(h, d1, ll float64) bool {
	g.h = h
	lm := math.Exp(g.m)
	c := fitSide
	g.lam[c], g.f[c], g.d[c] = lm, 1, d1
	rho := math.Exp(g.h)
	tail := fitTail * g.h
	// right
	g.hi = c
	for j, l := c+1, lm; ; j++ {
		if j > 2*fitSide {
			return false
		}
		l *= rho
		if !g.node(j, l, ll) {
			return false
		}
		g.hi = j
		if d := g.d[j]; d < -1 && g.f[j] <= tail*-d && g.f[j]*l/lm <= tail*(-d-1) {
			break
		}
	}
	g.lo = c
	for j, l := c-1, lm; ; j-- {
		if j < 0 {
			return false
		}
		l /= rho
		if !g.node(j, l, ll) {
			return false
		}
		g.lo = j
		if d := g.d[j]; d > 0 && g.f[j] <= tail*d {
			break
		}
	}
	return true
}

// node evaluates f_j and ℓ′_j at λ (node j), llm the log likelihood at
// the mode: f_j = e^{c_j}·Π q_i^{w_i} with c_j = α(s_j − m) − b(λ − λ_m)
// − llm, or by the log form where c_j > 600 or a count is no integer.
func (g *fitGrid) node(j int, lam, llm float64) bool {
	k := float64(j - fitSide)
	c := g.a*k*g.h - g.b*(lam-g.lam[fitSide]) - llm
	d := g.a - g.b*lam
	prod := c <= 600 && g.integral
	v, lv := 1.0, c
	for i, t := range g.ts {
		y := lam * t
		if y > 37 { // q rounds to 1; r = y/(e^y − 1) < 4·10⁻¹⁵
			continue
		}
		q := -math.Expm1(-y)
		if !(q > 0) {
			return false
		}
		d += g.ws[i] * y * (1 - q) / q
		if prod {
			v *= powInt(q, uint32(g.ws[i]))
		} else {
			lv += g.ws[i] * math.Log(q)
		}
	}
	if prod {
		v *= math.Exp(c)
	} else {
		v = math.Exp(lv)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(d) {
		return false
	}
	g.lam[j], g.f[j], g.d[j] = lam, v, d
	return true
}

// cdf is F at node j by (F5).
func (g *fitGrid) cdf(j int, partial float64) (float64, bool) {
	s := g.m + float64(j-fitSide)*g.h
	d1, d2, d3, _, ok := fitDerivs(s, g.a, g.b, g.ts, g.ws, false)
	if !ok {
		return 0, false
	}
	f := g.f[j]
	h2 := g.h * g.h
	f1 := g.d[j] * f
	f3 := (d3 + 3*d1*d2 + d1*d1*d1) * f
	return g.h*(partial+f/2) - h2/12*f1 + h2*h2/720*f3, true
}

// quantile is the p quantile (F5, F6).
func (g *fitGrid) quantile(p float64) (float64, bool) {
	target := p * g.total
	// The cell: the first node whose trapezoid CDF reaches the target,
	// then moved to where (F5) brackets it.
	partial := 0.0 // Σ_{i<j} f_i
	j := g.lo
	for ; j < g.hi; j++ {
		if g.h*(partial+g.f[j]/2) >= target {
			break
		}
		partial += g.f[j]
	}
	// cell [j−1, j]
	if j == g.lo {
		j++
		partial += g.f[g.lo]
	}
	var f0, f1 float64
	for tries := 0; ; tries++ {
		var ok0, ok1 bool
		f0, ok0 = g.cdf(j-1, partial-g.f[j-1])
		f1, ok1 = g.cdf(j, partial)
		if !ok0 || !ok1 {
			return 0, false
		}
		if tries < 3 && target < f0 && j-1 > g.lo {
			partial -= g.f[j-1]
			j--
			continue
		}
		if tries < 3 && target > f1 && j < g.hi {
			partial += g.f[j]
			j++
			continue
		}
		break
	}
	// (F6) on the cell [j−1, j].
	h := g.h
	d0, d1 := h*g.f[j-1], h*g.f[j]
	s0, s1 := h*h*g.d[j-1]*g.f[j-1], h*h*g.d[j]*g.f[j]
	herm := func(t float64) (float64, float64) {
		t2 := t * t
		t3 := t2 * t
		t4, t5 := t3*t, t3*t2
		v := (1-10*t3+15*t4-6*t5)*f0 + (t-6*t3+8*t4-3*t5)*d0 + (t2-3*t3+3*t4-t5)/2*s0 +
			(t3-2*t4+t5)/2*s1 + (-4*t3+7*t4-3*t5)*d1 + (10*t3-15*t4+6*t5)*f1
		dv := (-30*t2+60*t3-30*t4)*f0 + (1-18*t2+32*t3-15*t4)*d0 + (2*t-9*t2+12*t3-5*t4)/2*s0 +
			(3*t2-8*t3+5*t4)/2*s1 + (-12*t2+28*t3-15*t4)*d1 + (30*t2-60*t3+30*t4)*f1
		return v, dv
	}
	a, b := 0.0, 1.0
	t := 0.5
	if f1 > f0 {
		t = math.Max(0, math.Min(1, (target-f0)/(f1-f0)))
	}
	for it := 0; it < 50; it++ {
		v, dv := herm(t)
		if v < target {
			a = t
		} else {
			b = t
		}
		next := t - (v-target)/dv
		if !(next > a && next < b) {
			next = (a + b) / 2
		}
		if math.Abs(next-t) < 1e-10 {
			t = next
			break
		}
		t = next
	}
	return math.Exp(g.m + (float64(j-1-fitSide)+t)*g.h), true
}
