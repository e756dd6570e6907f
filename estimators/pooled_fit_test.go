package estimators

import (
	"math"
	"testing"
)

// exactChanges is an independent high-precision integration of the
// existence-of-change posterior (P3) of c under prior, by the log form
// with no shortcut: composite Simpson on 2¹⁶ cells in s = log λ over the
// 160-point grid's range (pooledGridRange, whose tails are below 10⁻⁹ of
// the conjugate approximation's and a factor 10 beyond) widened 100 times
// below and 10 times above. Simpson's error on a panel of width 2h is
// h⁵/90·|f⁽⁴⁾|; at h ≤ 60/2¹⁶ ≈ 10⁻³ and a posterior no narrower than
// σ = 0.03 in s, below 10⁻⁸ of the mass in all. A quantile is located on
// the panel sums and then solved by bisection to 10⁻¹³ in s, with the
// partial panel integrated by Simpson on 16 sub-cells of fresh
// evaluations (error ≲ 10⁻¹⁵ of the mass).
func exactChanges(c *Change, prior GammaPrior, cfg *Config) (Estimate, bool) {
	return exactChangesD(c, prior, 1, cfg)
}

// exactChangesD is exactChanges of the tempered posterior prior(λ)·
// L(λ)^{1/D} (dependence_pool.go R12): the counts and the unchanged time
// divided by D.
func exactChangesD(c *Change, prior GammaPrior, D float64, cfg *Config) (Estimate, bool) {
	ev, ok := c.EvidenceAt(0, cfg)
	if !ok {
		return Estimate{}, false
	}
	var ts, ws [NumBuckets]float64
	k := c.changedBuckets(&ts, &ws)
	for i := range ws[:k] {
		ws[i] /= D
	}
	u := c.unchangedTime() / D
	lp := func(s float64) float64 {
		l := math.Exp(s)
		v := prior.Shape*s - (prior.Rate+u)*l
		for i := 0; i < k; i++ {
			v += ws[i] * math.Log(-math.Expm1(-l*ts[i]))
		}
		return v
	}
	glo, ghi, _ := pooledGridRange(prior, ev, nil)
	a, b := math.Log(glo/100), math.Log(ghi*10)
	const n = 1 << 16
	h := (b - a) / n
	top := math.Inf(-1)
	f := make([]float64, n+1)
	for j := range f {
		f[j] = lp(a + float64(j)*h)
		top = math.Max(top, f[j])
	}
	dens := func(s float64) float64 { return math.Exp(lp(s) - top) }
	for j := range f {
		f[j] = math.Exp(f[j] - top)
	}
	cdf := make([]float64, n/2+1) // at the even nodes
	mass, first := 0.0, 0.0
	for j := 0; j < n; j += 2 {
		s0, s1, s2 := a+float64(j)*h, a+float64(j+1)*h, a+float64(j+2)*h
		mass += h / 3 * (f[j] + 4*f[j+1] + f[j+2])
		first += h / 3 * (f[j]*math.Exp(s0) + 4*f[j+1]*math.Exp(s1) + f[j+2]*math.Exp(s2))
		cdf[j/2+1] = mass
	}
	simpson := func(x0, x1 float64) float64 {
		const m = 16
		d := (x1 - x0) / m
		v := dens(x0) + dens(x1)
		for i := 1; i < m; i++ {
			v += float64(2+2*(i%2)) * dens(x0+float64(i)*d)
		}
		return v * d / 3
	}
	quant := func(p float64) float64 {
		target := p * mass
		for j := 1; j <= n/2; j++ {
			if cdf[j] >= target {
				x0 := a + float64(2*(j-1))*h
				lo, hi := x0, x0+2*h
				for hi-lo > 1e-13 {
					mid := (lo + hi) / 2
					if cdf[j-1]+simpson(x0, mid) < target {
						lo = mid
					} else {
						hi = mid
					}
				}
				return math.Exp((lo + hi) / 2)
			}
		}
		return math.Exp(b)
	}
	pLo, pHi := cfg.tails()
	return Estimate{Rate: first / mass, Lo: quant(pLo), Hi: quant(pHi)}, true
}

// TestPooledFitAccuracy: the published existence-of-change posterior
// (the fitted grid, F1–F6) against exactChanges on every prior × object of
// gridPriors × gridObjects (regular, irregular multi-bucket, floored,
// heavy with 250 changes; shapes 0.05 to MaxShape) plus priors of a tiny
// (0.01) and a huge (1000) shape. The tolerance is 10⁻⁴ relative
// for the mean and both ends; (F5, F6) bound the ends' error by ~2·10⁻⁵·σ
// and the mean's by the aliasing error, ~10⁻⁶. Nearly all must be answered
// by the fitted grid (not its 160-point fallback).
func TestPooledFitAccuracy(t *testing.T) {
	cfg := mustCfg(t)
	priors := append(gridPriors(), GammaPrior{Shape: 0.01, Rate: 0.01 * 5 * day}, GammaPrior{Shape: 1000, Rate: 1000 * 3 * day})
	var worst [3]float64
	n, fitted, moved := 0, 0, 0.0
	for _, prior := range priors {
		for i, c := range gridObjects() {
			ev, eok := c.EvidenceAt(0, cfg)
			if !eok || ev.Floor == 0 && ev.X == 0 {
				continue
			}
			got, ok := c.pooledPosterior(prior, 0, cfg, nil)
			if !ok {
				t.Errorf("prior %+v object %d: no estimate", prior, i)
				continue
			}
			var ts, ws [NumBuckets]float64
			k := c.changedBuckets(&ts, &ws)
			if _, ok := fitChanges(prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg); ok {
				fitted++
			}
			n++
			want, _ := exactChanges(c, prior, cfg)
			// The 160-point grid published before: every number that moves
			// by more than the fitted grid's own error moves toward the
			// exact one.
			glo, ghi, _ := pooledGridRange(prior, ev, nil)
			old, _ := gridChanges(glo, ghi, prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg)
			for j, d := range [][3]float64{{got.Rate, want.Rate, old.Rate}, {got.Lo, want.Lo, old.Lo}, {got.Hi, want.Hi, old.Hi}} {
				mv := math.Abs(d[0]/d[2] - 1)
				moved = math.Max(moved, mv)
				if mv > 1e-4 && !(math.Abs(d[0]-d[1]) < math.Abs(d[2]-d[1])) {
					t.Errorf("prior %+v object %d, number %d: %v moved from %v away from the exact %v", prior, i, j, d[0], d[2], d[1])
				}
			}
			for j, d := range [][2]float64{{got.Rate, want.Rate}, {got.Lo, want.Lo}, {got.Hi, want.Hi}} {
				r := math.Abs(d[0]/d[1] - 1)
				worst[j] = math.Max(worst[j], r)
				if r > 1e-4 {
					t.Errorf("prior %+v object %d: %+v, exact %+v; tolerance 1e-4", prior, i, got, want)
					break
				}
			}
		}
	}
	t.Logf("%d posteriors, %d on the fitted grid; largest relative difference: mean %.2g, lower end %.2g, upper end %.2g; largest move from the 160-point grid %.2g", n, fitted, worst[0], worst[1], worst[2], moved)
	if fitted < n*95/100 {
		t.Errorf("%d of %d on the fitted grid", fitted, n)
	}
}

// TestPooledFitFallback: posteriors far outside the site priors' range
// (a shape of 10⁻³ with a prior mean up to 10⁶ times the floored object's
// floor, so the posterior of log λ is nearly flat over ~20 units; a shape
// of 10⁵) still get a finite mean inside its interval, from the fitted
// grid or, where it declines, from the 160-point grid, and the published
// estimate is whichever answered.
func TestPooledFitFallback(t *testing.T) {
	cfg := mustCfg(t)
	all := make([]bool, 120)
	for i := range all {
		all[i] = true
	}
	objs := []*Change{regular(day, all), regular(day, []bool{false, true, false, false, true, true})}
	declined := 0
	for _, prior := range []GammaPrior{{Shape: 1e-3, Rate: 1e-3}, {Shape: 1e-3, Rate: 1e-9}, {Shape: 1e5, Rate: 1e5 * day}, {Shape: 1e5, Rate: 1e5 * 1e4 * day}} {
		for i, c := range objs {
			got, ok := c.PooledEstimate(prior, cfg)
			if !ok || !got.HasCI || !(got.Lo > 0 && got.Lo <= got.Rate && got.Rate <= got.Hi) || math.IsInf(got.Hi, 0) {
				t.Errorf("prior %+v object %d: %+v (%v)", prior, i, got, ok)
				continue
			}
			ev, _ := c.EvidenceAt(0, cfg)
			var ts, ws [NumBuckets]float64
			k := c.changedBuckets(&ts, &ws)
			want, fok := fitChanges(prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg)
			if !fok {
				declined++
				lo, hi, _ := pooledGridRange(prior, ev, nil)
				want, _ = gridChanges(lo, hi, prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg)
			}
			if want != got {
				t.Errorf("prior %+v object %d: published %+v, want %+v (fitted grid %v)", prior, i, got, want, fok)
			}
		}
	}
	t.Logf("%d of 8 declined by the fitted grid", declined)
}
