package windows

import "math"

// win holds the O(1) sufficient statistics of one window (001 §3–§4). Times
// inside a window are local: x = t − origin, where the origin t(0) is the
// update point just before the window's first point (§4: "W_i(k) starts just
// after j-th update"), so the window is a process on (0, x_n] with t(0) = 0
// as in §1.2. All stored values are float32 (or integer) so that the binary
// encoding is lossless; arithmetic is done in float64 and rounded on store.
type win struct {
	origin float64 // absolute time t(0) of the window, seconds since epoch
	n      uint32  // update points in the window
	x      float32 // x_n: local time of the last point
	a      float32 // A = Σ_{i≤n} ln(x_n/x_i), the Weibull statistic of eq. (5)
	mx     float32 // Duane: mean of X_i = ln x_i
	m2     float32 // Duane: Σ (X_i − X̄)²
	c      float32 // Duane: Σ (X_i − X̄)(L_i − L̄), L_i = ln i
}

// meanLogIndex returns L̄_n = (1/n) Σ_{i≤n} ln i = ln n!/n.
func meanLogIndex(n uint32) float64 {
	if n == 0 {
		return 0
	}
	lg, _ := math.Lgamma(float64(n) + 1)
	return lg / float64(n)
}

// add appends the update point at local time x ≥ w.x, x > 0. O(1): the
// Weibull statistic is updated as A' = A + n·ln(x/x_n) (the new point adds
// ln(x/x) = 0), the Duane co-moments by Welford's recurrences.
func (w *win) add(x float64) {
	n := float64(w.n)
	if w.n > 0 {
		w.a = float32(float64(w.a) + n*math.Log(x/float64(w.x)))
	}
	X := math.Log(x)
	mx := float64(w.mx)
	dx := X - mx
	mx += dx / (n + 1)
	w.m2 = float32(float64(w.m2) + dx*(X-mx))
	w.c = float32(float64(w.c) + dx*(math.Log(n+1)-meanLogIndex(w.n+1)))
	w.mx = float32(mx)
	w.n++
	w.x = float32(x)
}

// weibull returns the unbiased Weibull estimates of §3.2:
//
//	β̃ = (n−2)/Σ ln(t_n/t_i),  η̃ = t_n/n^{1/β̃},
//
// defined for n ≥ 4 (λ̌ needs n > 3) and A > 0.
func (w *win) weibull() (beta, eta float64, ok bool) {
	if w.n < 4 || !(w.a > 0) || !(w.x > 0) {
		return 0, 0, false
	}
	n := float64(w.n)
	beta = (n - 2) / float64(w.a)
	eta = float64(w.x) * math.Exp(-math.Log(n)/beta)
	return beta, eta, true
}

// weibullRate is λ̌(x) = ((n−3)n/(n−2))·β̃·x^{β̃−1}/x_n^{β̃} (§3.2), the
// estimator the paper uses, evaluated at local time x > 0.
func (w *win) weibullRate(x float64) (float64, bool) {
	if w.n < 4 || !(w.a > 0) || !(w.x > 0) || !(x > 0) {
		return 0, false
	}
	n := float64(w.n)
	beta := (n - 2) / float64(w.a)
	r := (n - 3) * n / (n - 2) * beta / float64(w.x) // λ̌(x_n)
	if x != float64(w.x) {
		r *= math.Exp((beta - 1) * math.Log(x/float64(w.x)))
	}
	return r, r > 0 && !math.IsInf(r, 0)
}

// duane returns the Duane-plot regression of §3.3–3.4: least squares of
// y = log MTBU_c(t_i) = log(t_i/i) on x = log t_i, MTBU_c(t) = α·t^γ. Since
// y_i = X_i − L_i, the slope is γ = 1 − C/M2 and log α = (X̄ − L̄) − γ·X̄.
// Defined for n ≥ 3 with distinct points.
func (w *win) duane() (gamma, logAlpha float64, ok bool) {
	if w.n < 3 || !(w.m2 > 0) {
		return 0, 0, false
	}
	gamma = 1 - float64(w.c)/float64(w.m2)
	mx := float64(w.mx)
	logAlpha = mx - meanLogIndex(w.n) - gamma*mx
	return gamma, logAlpha, !math.IsNaN(gamma) && !math.IsInf(gamma, 0)
}

// duaneRate is the Duane (cumulative) rate λ(t) = t^{−γ}/α of §3.3 at x > 0.
func (w *win) duaneRate(x float64) (float64, bool) {
	g, la, ok := w.duane()
	if !ok || !(x > 0) {
		return 0, false
	}
	r := math.Exp(-la - g*math.Log(x))
	return r, r > 0 && !math.IsInf(r, 0)
}

// intuitiveRate is N(t)/t of §3.1 at local time x > 0.
func (w *win) intuitiveRate(x float64) (float64, bool) {
	if w.n == 0 || !(x > 0) {
		return 0, false
	}
	return float64(w.n) / x, true
}

// Model indices.
const (
	modelIntuitive = iota
	modelWeibull
	modelDuane
	numModels
)

var modelNames = [numModels]string{"intuitive", "weibull", "duane"}

// rate evaluates model m at local time x.
func (w *win) rate(m int, x float64) (float64, bool) {
	switch m {
	case modelIntuitive:
		return w.intuitiveRate(x)
	case modelWeibull:
		return w.weibullRate(x)
	default:
		return w.duaneRate(x)
	}
}

// state classifies the window by the Crow-AMSAA trend test (Definition 1):
// under a homogeneous process the n−1 points before x_n are uniform on
// (0, x_n), so 2A = 2·Σ ln(x_n/x_i) ~ χ²_{2(n−1)}; small values mean the points
// crowd towards x_n (increasing rate, β̂ > 1), large values the opposite.
// The quantiles are the Wilson–Hilferty approximation
// q_p(k) = k·(1 − 2/(9k) + z_p·√(2/(9k)))³, accurate to < 1 % for k ≥ 6.
func (w *win) state(cfg *Config) State {
	if int(w.n) < cfg.MinPoints || !(w.x > 0) {
		return Forming
	}
	k := 2 * float64(w.n-1)
	z := math.Sqrt2 * math.Erfinv(1-cfg.TrendLevel)
	s := 2 / (9 * k)
	lo := k * math.Pow(1-s-z*math.Sqrt(s), 3)
	hi := k * math.Pow(1-s+z*math.Sqrt(s), 3)
	stat := 2 * float64(w.a)
	switch {
	case stat < lo:
		return Increasing
	case stat > hi:
		return Decreasing
	}
	return Constant
}

// RetrospectiveMSE computes the error measure of 001 §3.5 for one window
// after the fact, as in the paper's evaluation (§5): each estimator is fitted
// on all points of the window, MTBU(t) ≈ 1/λ(t), and
//
//	MSE = (1/n) Σ_{i=1}^{n} ∇(i)²,  ∇(i) = MTBU(t(i)) − (t(i) − t(i−1)),
//
// with t(0) = origin. points are the absolute update times of the window,
// strictly increasing and > origin. ok is false when an estimator is
// undefined (fewer than 4 points). The result is indexed like Models.
// It does not allocate.
func RetrospectiveMSE(origin float64, points []float64) (mse [3]float64, ok bool) {
	var w win
	for _, p := range points {
		if !(p-origin > float64(w.x)) && w.n > 0 || !(p > origin) {
			return mse, false
		}
		w.add(p - origin)
	}
	if w.n < 4 {
		return mse, false
	}
	prev := 0.0
	for _, p := range points {
		x := p - origin
		for m := 0; m < numModels; m++ {
			r, ok := w.rate(m, x)
			if !ok {
				return mse, false
			}
			d := 1/r - (x - prev)
			mse[m] += d * d
		}
		prev = x
	}
	for m := range mse {
		mse[m] /= float64(len(points))
	}
	return mse, true
}

// Models lists the estimator names in the order used by RetrospectiveMSE and
// Summary.Model: "intuitive" (§3.1), "weibull" (§3.2), "duane" (§3.3–3.4).
func Models() [3]string { return modelNames }
