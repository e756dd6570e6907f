package estimators

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gridObjects are the objects of the grid posterior's tests: pooledObjects
// (regular visits, one changed-interval bucket, floored when every visit
// changed), the small-shape test's weekly visits, irregular visits (0.2 to
// 6 days apart, several buckets) seen to change with probability 0.1 to
// 0.9, and heavy ones: 400 daily visits with 250 changes, 120 all changed.
func gridObjects() []*Change {
	objs := pooledObjects()
	for _, x := range []int{1, 2, 4} {
		ch := make([]bool, 52)
		for i := 0; i < x; i++ {
			ch[10+12*i] = true
		}
		objs = append(objs, regular(7*day, ch))
	}
	rng := rand.New(rand.NewPCG(35, 2))
	for _, p := range []float64{0.1, 0.3, 0.6, 0.9} {
		for _, n := range []int{6, 25, 90} {
			var c Change
			tm := 1e9
			c.Visit(Visit{Time: tm})
			for i := 0; i < n; i++ {
				tm += day * (0.2 + 5.8*rng.Float64())
				c.Visit(Visit{Time: tm, Changed: rng.Float64() < p})
			}
			objs = append(objs, &c)
		}
	}
	heavy := make([]bool, 400)
	for i := range heavy {
		heavy[i] = i%8 < 5
	}
	all := make([]bool, 120)
	for i := range all {
		all[i] = true
	}
	return append(objs, regular(day, heavy), regular(day, all))
}

// gridPriors are site priors from a quiet site (shape 0.05) to a uniform
// one (MaxShape), with prior means from a change a day to one in 300 days.
func gridPriors() []GammaPrior {
	var ps []GammaPrior
	for _, a := range []float64{0.05, 0.2, 0.6, 2.5, MaxShape} {
		for _, days := range []float64{1, 20, 300} {
			ps = append(ps, GammaPrior{Shape: a, Rate: a * days * day})
		}
	}
	return ps
}

// gridOnChanges is PooledEstimate's grid posterior as it was computed
// before gridChanges: gridOn with the log posterior (P3) as a closure.
func gridOnChanges(c *Change, prior GammaPrior, cfg *Config) (Estimate, bool, bool) {
	ev, ok := c.EvidenceAt(0, cfg)
	if !ok || ev.Floor == 0 && ev.X == 0 {
		return Estimate{}, false, false
	}
	var ts, ws [NumBuckets]float64
	k := c.changedBuckets(&ts, &ws)
	u := c.unchangedTime()
	e, ok := gridLogPosterior(prior, ev, 0, func(l float64) float64 {
		v := prior.Shape*math.Log(l) - prior.Rate*l - l*u
		for i := 0; i < k; i++ {
			v += ws[i] * math.Log(-math.Expm1(-l*ts[i]))
		}
		return v
	}, cfg, nil)
	return e, ok, true
}

// TestGridChangesMatchesGridOn: PooledEstimate's 160-point grid posterior
// (the fitted grid's fallback, pooled_fit.go) by the product (P4) and, where that declines, by the log form (P3) against
// gridOn with the closure it replaced, on every prior × object of the
// tables above. The weights differ by rounding alone (λ_j by repeated
// multiplication, ≤ 2·10⁻¹⁴; the powers w_i·2⁻⁵² with w_i ≤ 250; log λ_j
// by an addition instead of a logarithm, ≲ 10⁻¹⁵·|α log λ| ≲ 10⁻¹³): the
// mean and both interval ends must agree to a relative 10⁻¹¹. The
// product must answer for all but the rare extreme cases, or the speed-up
// is gone: at least 90 % of them.
func TestGridChangesMatchesGridOn(t *testing.T) {
	cfg := mustCfg(t)
	const tol = 1e-11
	n, product := 0, 0
	for _, prior := range gridPriors() {
		for i, c := range gridObjects() {
			want, wok, grid := gridOnChanges(c, prior, cfg)
			if !grid {
				continue
			}
			// The 160-point grid, the fitted grid's fallback (pooledPosterior
			// publishes fitChanges where it answers: TestPooledFitAccuracy).
			ev, _ := c.EvidenceAt(0, cfg)
			var ts, ws [NumBuckets]float64
			k := c.changedBuckets(&ts, &ws)
			lo, hi, _ := pooledGridRange(prior, ev, nil)
			got, gok := gridChanges(lo, hi, prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg)
			if gok != wok {
				t.Fatalf("prior %+v object %d: ok %v, gridOn ok %v", prior, i, gok, wok)
			}
			if !wok {
				continue
			}
			n++
			for _, d := range [][2]float64{{got.Rate, want.Rate}, {got.Lo, want.Lo}, {got.Hi, want.Hi}} {
				if math.Abs(d[0]/d[1]-1) > tol {
					t.Errorf("prior %+v object %d: %+v, gridOn %+v; tolerance %v", prior, i, got, want, tol)
					break
				}
			}
			// Each path on its own: the product where it answers, and
			// the log form.
			var w, ex [pooledGrid]float64
			rho := math.Exp(math.Log(hi/lo) / (pooledGrid - 1))
			for j, e := 0, 1.0; j < pooledGrid; j, e = j+1, e*rho {
				ex[j] = e
			}
			if p, ok := gridChangesProduct(&w, &ex, lo, hi, prior, ev, ts[:k], ws[:k], c.unchangedTime(), cfg); ok {
				product++
				if p != got {
					t.Errorf("prior %+v object %d: product %+v, published %+v", prior, i, p, got)
				}
			}
			l, ok := gridChangesLog(&w, &ex, lo, hi, prior, ts[:k], ws[:k], c.unchangedTime(), cfg)
			for _, d := range [][2]float64{{l.Rate, want.Rate}, {l.Lo, want.Lo}, {l.Hi, want.Hi}} {
				if !ok || math.Abs(d[0]/d[1]-1) > tol {
					t.Errorf("prior %+v object %d: log form %+v (%v), gridOn %+v; tolerance %v", prior, i, l, ok, want, tol)
					break
				}
			}
		}
	}
	t.Logf("%d grid posteriors, %d by the product (P4)", n, product)
	if n < 500 || product < n*9/10 {
		t.Fatalf("%d grid posteriors, %d by the product", n, product)
	}
}

// powInt against math.Pow on exact cases and a relative 2·n·2⁻⁵³ bound.
func TestPowInt(t *testing.T) {
	for _, c := range []struct {
		x float64
		n uint32
	}{{0.5, 0}, {0.5, 1}, {0.5, 10}, {0.9, 7}, {0.999, 250}, {1e-3, 30}, {0.3, 1 << 20}} {
		got, want := powInt(c.x, c.n), math.Pow(c.x, float64(c.n))
		if want == 0 && got == 0 {
			continue
		}
		if tol := 2 * float64(c.n+1) * 0x1p-53; math.Abs(got/want-1) > tol {
			t.Errorf("powInt(%v, %d) = %v, math.Pow %v; tolerance %v", c.x, c.n, got, want, tol)
		}
	}
}
