package estimators

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/internal/cputime"
)

// gammaDraw draws Gamma(shape, rate) (Marsaglia–Tsang, with the shape < 1
// boost).
func gammaDraw(rng *rand.Rand, shape, rate float64) float64 {
	boost := 1.0
	if shape < 1 {
		boost = math.Pow(rng.Float64(), 1/shape)
		shape++
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		if u := rng.Float64(); math.Log(u) < z*z/2+d-d*v+d*math.Log(v) {
			return boost * d * v / rate
		}
	}
}

func poissonDraw(rng *rand.Rand, m float64) float64 {
	n, t := 0.0, rng.ExpFloat64()
	for t < m {
		n++
		t += rng.ExpFloat64()
	}
	return n
}

// The moment fit recovers a known gamma population (exposures vary by a
// factor 30), and with the true prior the posterior intervals cover the
// true rates at the nominal 95 %.
func TestPooledPriorAndCoverage(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(41, 42))
	const shape, rate = 1.5, 3e5 // mean 5e-6/s: about one change in 2.3 days
	var ps PoolStats
	type obj struct{ lam, x, e float64 }
	var objs []obj
	for i := 0; i < 20000; i++ {
		lam := gammaDraw(rng, shape, rate)
		e := 86400 * (3 + 87*rng.Float64()) // 3 to 90 days
		x := poissonDraw(rng, lam*e)
		ps.Add(Evidence{X: x, E: e}, 1)
		objs = append(objs, obj{lam, x, e})
	}
	g, ok := ps.Prior()
	if !ok {
		t.Fatal("no prior")
	}
	// 20000 objects: the moment estimates' relative SE is a few percent.
	if math.Abs(g.Shape/g.Rate/(shape/rate)-1) > 0.03 || math.Abs(g.Shape/shape-1) > 0.1 {
		t.Errorf("fitted Gamma(%.3g, %.3g), want Gamma(%.3g, %.3g)", g.Shape, g.Rate, shape, rate)
	}
	in := 0
	for _, o := range objs {
		e, ok := Pooled(GammaPrior{shape, rate}, Evidence{X: o.x, E: o.e}, cfg)
		if !ok || !(e.Lo <= e.Rate && e.Rate <= e.Hi) {
			t.Fatalf("bad pooled estimate %+v", e)
		}
		if e.Lo <= o.lam && o.lam <= e.Hi {
			in++
		}
	}
	// Exact Bayesian coverage is 95 %; binomial 2·SE with 20000 draws is 0.3 %.
	if c := float64(in) / float64(len(objs)); math.Abs(c-0.95) > 0.005 {
		t.Errorf("coverage %.4f, want 0.95", c)
	}
}

// Conjugacy: the estimate is the mean (P1) of Gamma(α+x, β+e), (2+3)/(1+4)
// = 1, and the interval its 2.5 % and 97.5 % quantiles, checked against the
// Gamma CDF (a series of the regularized incomplete gamma function,
// independent of mathext's inverse).
func TestPooledPosteriorMean(t *testing.T) {
	cfg := mustCfg(t)
	e, ok := Pooled(GammaPrior{Shape: 2, Rate: 1}, Evidence{X: 3, E: 4}, cfg)
	if !ok {
		t.Fatal("no estimate")
	}
	near(t, "mean", e.Rate, 1, 1e-12)
	// P(5, 5λ): for integer shape k, P(k, y) = 1 − e^{−y} Σ_{j<k} y^j/j!.
	cdf := func(l float64) float64 {
		y, s, term := 5*l, 0.0, 1.0
		for j := 0; j < 5; j++ {
			if j > 0 {
				term *= y / float64(j)
			}
			s += term
		}
		return 1 - math.Exp(-y)*s
	}
	near(t, "P(lo)", cdf(e.Lo), 0.025, 1e-9)
	near(t, "P(hi)", cdf(e.Hi), 0.975, 1e-9)
}

// The mean of the prior truncated below Floor (every interval changed) is
// the ratio of the integrals of λ·p(λ) and p(λ) over [Floor, ∞), in closed
// form (by parts) for Gamma(2, 1) (density λe^{−λ}) with Floor 1.5:
// ∫λ²e^{−λ} / ∫λe^{−λ} = (F² + 2F + 2)/(F + 1) = 7.25/2.5 = 2.9.
func TestPooledFlooredMean(t *testing.T) {
	cfg := mustCfg(t)
	e, ok := Pooled(GammaPrior{Shape: 2, Rate: 1}, Evidence{X: 4, E: 1, Floor: 1.5}, cfg)
	if !ok {
		t.Fatal("no estimate")
	}
	near(t, "truncated mean", e.Rate, 2.9, 1e-9)
	if !(e.Lo >= 1.5 && e.Hi > e.Rate) {
		t.Errorf("interval [%g, %g] not above the floor around %g", e.Lo, e.Hi, e.Rate)
	}
}

// A complete history's likelihood is exactly λ^N·e^{−λT} (events.go E1):
// its pooled estimate is the conjugate one, not the existence-of-change
// grid (which would read every event as "a change at every visit").
func TestPooledEstimateComplete(t *testing.T) {
	cfg := mustCfg(t)
	c := completeHistory(1e9, 30*day, 200*day, 300*day)
	prior := GammaPrior{Shape: 0.5, Rate: 0.5 * 365 * day}
	got, ok := c.PooledEstimate(prior, cfg)
	if !ok {
		t.Fatal("no estimate")
	}
	want, _ := Pooled(prior, Evidence{X: 3, E: 300 * day}, cfg)
	if got != want {
		t.Errorf("complete history: %+v, want the conjugate %+v", got, want)
	}
	near(t, "rate·year", got.Rate*365*day, 3.5/(0.5+300.0/365), 1e-9)
}

// Known truth: rates λ ~ Gamma(α, β), a training count x ~ Poisson(λe) and a
// next-period count y ~ Poisson(λe). The posterior mean (P1) is the Bayes
// act for the deviance of y, so over many objects its mean deviance is
// below the posterior median's and, for the objects seen not to change,
// below one global rate's (the population mean α/β) — for α ≪ 1 the
// median is far below the mean. 30000 objects: the differences checked
// are many standard errors wide (printed).
func TestPooledMeanMinimisesDeviance(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(31, 3))
	dev := func(y, mu float64) float64 {
		d := mu - y
		if y > 0 {
			d += y * math.Log(y/mu)
		}
		return 2 * d
	}
	pois := func(mu float64) float64 {
		k, p, u := 0.0, math.Exp(-mu), rng.Float64()
		for s := p; u > s && k < 1e4; s += p {
			k++
			p *= mu / k
		}
		return k
	}
	for _, alpha := range []float64{0.1, 0.3, 1} {
		prior := GammaPrior{Shape: alpha, Rate: alpha} // mean 1 per period
		var dMean, dMed, dGlob, dMean0, dGlob0 float64
		n0 := 0
		const N = 30000
		for i := 0; i < N; i++ {
			lam := gammaDraw(rng, prior.Shape, prior.Rate)
			x, y := pois(lam), pois(lam)
			e, ok := Pooled(prior, Evidence{X: x, E: 1}, cfg)
			if !ok {
				t.Fatalf("no estimate for x=%v", x)
			}
			med := math.Max(mathext.GammaIncRegInv(prior.Shape+x, 0.5)/(prior.Rate+1), 1e-300)
			dMean += dev(y, e.Rate)
			dMed += dev(y, med)
			dGlob += dev(y, 1)
			if x == 0 {
				n0++
				dMean0 += dev(y, e.Rate)
				dGlob0 += dev(y, 1)
			}
		}
		t.Logf("α=%v: mean deviance: posterior mean %.4f, median %.4f, global %.4f; x=0 (%d): mean %.4f, global %.4f",
			alpha, dMean/N, dMed/N, dGlob/N, n0, dMean0/float64(n0), dGlob0/float64(n0))
		if !(dMean < dMed && dMean < dGlob && dMean0 < dGlob0) {
			t.Errorf("α=%v: the posterior mean's deviance is not the lowest", alpha)
		}
	}
}

// Evidence for regular visits without Last-Modified matches the binomial
// likelihood's maximum and curvature (closed form of the regular MLE); with
// no change it is the exact exposure.
func TestPooledEvidence(t *testing.T) {
	cfg := mustCfg(t)
	// regular daily visits, 3 changes in 30: λ̂ = −f ln(1 − 3/30) and, for
	// θ = 1 − e^{−λI}, the information I(λ) = n·I²·e^{−λI}/(1−e^{−λI}).
	ch := make([]bool, 30)
	ch[3], ch[10], ch[20] = true, true, true
	c := regular(day, ch)
	ev, ok := c.Evidence(cfg)
	if !ok {
		t.Fatal("no evidence")
	}
	x, e := ev.X, ev.E
	l := -math.Log(1-3.0/30) / day
	info := 30 * day * day * math.Exp(-l*day) / (1 - math.Exp(-l*day))
	near(t, "x", x, l*l*info, 1e-3*l*l*info)
	near(t, "e", e, l*info, 1e-3*l*info)
	// no change: the likelihood e^{−λU} is exact.
	c0 := regular(day, make([]bool, 30))
	if ev, ok := c0.Evidence(cfg); !ok || ev.X != 0 || ev.E != 30*day || ev.Floor != 0 {
		t.Errorf("no change: %+v ok %v", ev, ok)
	}
	// every interval changed: a floor where (1 − e^{−λ·day})^30 = ½.
	all := make([]bool, 30)
	for i := range all {
		all[i] = true
	}
	ev, ok = regular(day, all).Evidence(cfg)
	if !ok || !(ev.Floor > 0) {
		t.Fatalf("all changed: %+v", ev)
	}
	near(t, "likelihood at the floor", math.Pow(-math.Expm1(-ev.Floor*day), 30), 0.5, 1e-9)
	p, ok := Pooled(GammaPrior{Shape: 2, Rate: day}, ev, cfg)
	if !ok || !(p.Lo >= ev.Floor*(1-1e-9)) {
		t.Errorf("all changed: pooled %+v below the floor %v", p, ev.Floor)
	}
}

// A prior of shape far below 1 (a site whose objects' rates spread over
// decades) still gives the exact posterior of an object with changes: its
// prior's lower quantiles underflow to 0, the posterior's (shape α + X ≥ 1)
// do not. One change in 52 weekly visits has a likelihood close to the
// Poisson λ·e^{−λE}, so the grid posterior is close to the conjugate one.
func TestPooledEstimateSmallShape(t *testing.T) {
	cfg := mustCfg(t)
	const week, year = 7 * day, 365 * day
	for _, shape := range []float64{0.1, 0.25, 0.5, 2} {
		prior := GammaPrior{Shape: shape, Rate: shape * year} // mean 1/year
		for _, x := range []int{1, 2, 4} {
			ch := make([]bool, 52)
			for i := 0; i < x; i++ {
				ch[10+12*i] = true
			}
			c := regular(week, ch)
			got, ok := c.PooledEstimate(prior, cfg)
			if !ok {
				t.Fatalf("shape %v, %d changes: no estimate", shape, x)
			}
			ev, _ := c.Evidence(cfg)
			want, _ := Pooled(prior, ev, cfg)
			if math.Abs(got.Rate/want.Rate-1) > 0.05 || math.Abs(got.Lo/want.Lo-1) > 0.1 || math.Abs(got.Hi/want.Hi-1) > 0.05 {
				t.Errorf("shape %v, %d changes: grid %+v, conjugate %+v", shape, x, got, want)
			}
		}
	}
}

// Remove undoes Add: the sums without one object equal the sums refitted
// without it, floored evidence included.
func TestPoolStatsRemove(t *testing.T) {
	evs := []Evidence{{X: 3, E: 10}, {X: 0, E: 7}, {X: 5, E: 2}, {X: 2, E: 1, Floor: 2}, {X: 1, E: 4}}
	for i := range evs {
		var all, rest PoolStats
		for j, ev := range evs {
			all.Add(ev, 1)
			if j != i {
				rest.Add(ev, 1)
			}
		}
		all.Remove(evs[i], 1)
		for _, d := range [][2]float64{{all.N, rest.N}, {all.X, rest.X}, {all.E, rest.E}, {all.X2E, rest.X2E}, {all.F, rest.F}} {
			if math.Abs(d[0]-d[1]) > 1e-12 {
				t.Errorf("without %d: %+v, refitted %+v", i, all, rest)
				break
			}
		}
	}
}

// PooledEstimateIn gives exactly PooledEstimate's result, bit for bit,
// whatever its memo holds: objects without a change (the conjugate
// posterior, whose Gamma(α) quantiles the memo serves), with some
// changes (the grid, whose range it serves) and with every interval
// changed (the floor), each object estimated against a memo the
// others filled, twice over, under priors that differ in the last bit.
func TestPooledEstimateInExact(t *testing.T) {
	cfg := mustCfg(t)
	objs := pooledObjects()
	var scratch Estimates
	for round := 0; round < 2; round++ {
		for _, shape := range []float64{0.4, 2.5, math.Nextafter(2.5, 3), 10} {
			prior := GammaPrior{Shape: shape, Rate: shape * 20 * day}
			for i, c := range objs {
				want, wok := c.PooledEstimate(prior, cfg)
				got, gok := c.PooledEstimateIn(prior, 0, cfg, &scratch)
				if gok != wok || math.Float64bits(got.Rate) != math.Float64bits(want.Rate) ||
					math.Float64bits(got.Lo) != math.Float64bits(want.Lo) || math.Float64bits(got.Hi) != math.Float64bits(want.Hi) {
					t.Errorf("round %d, shape %v, object %d: memo %+v (%v), without %+v (%v)", round, shape, i, got, gok, want, wok)
				}
			}
		}
	}
	if m := scratch.quantiles(); m == nil {
		t.Fatal("no memo")
	}
}

// pooledObjects are regularly visited objects (5–30 visits, 1–3 days
// apart) seen to change never, once, three times and at every visit: the
// conjugate, grid and floored posteriors.
func pooledObjects() []*Change {
	var objs []*Change
	for n := 5; n <= 30; n += 5 {
		for _, x := range []int{0, 1, 3, n} {
			ch := make([]bool, n)
			for i := 0; i < x; i++ {
				ch[(i*7)%n] = true
			}
			objs = append(objs, regular(day*float64(1+n%3), ch))
		}
	}
	return objs
}

// BenchmarkPooledEstimateIn is the pooled estimate with the quantile memo
// of one scratch, as the aggregator publishes it, over pooledObjects under
// four priors: ns per estimate.
func BenchmarkPooledEstimateIn(b *testing.B) {
	cfg := mustCfg(b)
	objs := pooledObjects()
	var scratch Estimates
	b.ReportAllocs()
	n := 0
	c0 := cputime.Process()
	for b.Loop() {
		for _, shape := range []float64{0.4, 2.5, 4, 10} {
			prior := GammaPrior{Shape: shape, Rate: shape * 20 * day}
			for _, c := range objs {
				c.PooledEstimateIn(prior, 0, cfg, &scratch)
				n++
			}
		}
	}
	b.ReportMetric(float64((cputime.Process()-c0).Nanoseconds())/float64(n), "cpu-ns/estimate")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/estimate")
}

// PooledQuantile reads single quantiles off the posterior PooledEstimate
// summarises: for an object seen not to change (conjugate Gamma(α, β + U))
// the Gamma's own quantiles, and the published interval's ends at 2.5 % and
// 97.5 %.
func TestPooledQuantile(t *testing.T) {
	cfg := mustCfg(t)
	c := regular(day, make([]bool, 30))
	prior := GammaPrior{Shape: 2, Rate: day}
	for _, p := range []float64{0.1, 0.45, 0.5, 0.9} {
		got, ok := c.PooledQuantile(prior, p, cfg)
		want := mathext.GammaIncRegInv(2, p) / (31 * day)
		if !ok || math.Abs(got/want-1) > 1e-12 {
			t.Errorf("p = %g: %g (ok %v), want %g", p, got, ok, want)
		}
	}
	e, _ := c.PooledEstimate(prior, cfg)
	lo, _ := c.PooledQuantile(prior, 0.025, cfg)
	hi, _ := c.PooledQuantile(prior, 0.975, cfg)
	if lo != e.Lo || hi != e.Hi {
		t.Errorf("quantiles %g, %g; interval [%g, %g]", lo, hi, e.Lo, e.Hi)
	}
}

// TestPooledGridRangeTails: the grid's range from gammaTail (Newton on
// log x) against the full-precision inverse (mathext.GammaIncRegInv) it
// replaced. The quantiles: Newton stops after a step below 10⁻¹⁰ in log x
// and converges quadratically, so the relative difference must be below
// 10⁻⁹ (room for the reference's own rounding). The estimates on a grid
// of (α, β, x, e), for the conjugate log posterior and a skewed one (the
// existence-of-change likelihood of x changes in x + 1 intervals of
// e/(x + 1)): the posterior mean, Lo and Hi within a relative 10⁻⁶ of
// those on the old range (the tolerance; a range moved by 10⁻⁹
// moves the interval ends, the most sensitive, by about 0.06 × 10⁻⁹).
func TestPooledGridRangeTails(t *testing.T) {
	for _, a := range []float64{0.3, 0.5, 0.9, 1, 1.7, 3, 10, 55.5, 1e3, 1e5} {
		for _, upper := range []bool{false, true} {
			got, ok := gammaTail(a, upper)
			// Its equation: the tail mass at got is 10⁻⁹. Newton's last
			// step was below 10⁻¹⁰ in log x and the error after it is of
			// its square, times d log P/d log x ≲ 2000 here: 10⁻⁸ is loose.
			tail := mathext.GammaIncReg(a, got)
			if upper {
				tail = mathext.GammaIncRegComp(a, got)
			}
			const tol = 1e-8
			if !ok || math.Abs(math.Log(tail/1e-9)) > tol {
				t.Errorf("a %v, upper %v: gammaTail %v (%v) has tail mass %v; want 1e-9 within a relative %v", a, upper, got, ok, tail, tol)
			}
			// The inverse it replaces, where that one answers: its p = 1 ∓
			// 10⁻⁹ is rounded by up to 1.1·10⁻¹⁶, 1.1·10⁻⁷ of the tail
			// mass, which moves x by at most 1.1·10⁻⁷/a (lower tail, P ∝
			// xᵃ) and less above: 10⁻⁶ for a ≥ 0.9.
			p := 1e-9
			if upper {
				p = 1 - 1e-9
			}
			if want := mathext.GammaIncRegInv(a, p); want > 0 && a >= 0.9 {
				const tolInv = 1e-6
				if math.Abs(got/want-1) > tolInv {
					t.Errorf("a %v, p %v: gammaTail %v, GammaIncRegInv %v; tolerance %v", a, p, got, want, tolInv)
				}
			}
		}
	}
	// A shape whose lower quantile underflows: gammaTail declines.
	if x, ok := gammaTail(0.01, false); ok {
		t.Errorf("gammaTail(0.01) = %v; want no answer (the quantile is below 1e-900)", x)
	}

	cfg := mustCfg(t)
	n := 0
	for _, alpha := range []float64{0.2, 0.6, 2.5, 10} {
		for _, beta := range []float64{alpha * 3 * day, alpha * 100 * day} {
			for _, x := range []float64{0.3, 1, 2.7, 12, 80} {
				for _, e := range []float64{day, 30 * day, 700 * day} {
					prior, ev := GammaPrior{Shape: alpha, Rate: beta}, Evidence{X: x, E: e}
					a, b := alpha+x, beta+e
					// The range as it was (pooledGridRange before gammaTail).
					oldLo := mathext.GammaIncRegInv(a, 1e-9) / b / 10
					oldHi := mathext.GammaIncRegInv(a, 1-1e-9) / b * 10
					if !(oldLo > 0) {
						oldLo = oldHi * 1e-12
					}
					for name, logPost := range map[string]func(float64) float64{
						"conjugate": func(l float64) float64 { return a*math.Log(l) - b*l },
						"changes": func(l float64) float64 {
							k := math.Ceil(x)
							return alpha*math.Log(l) - beta*l + k*math.Log(-math.Expm1(-l*e/(k+1))) - l*e/(k+1)
						},
					} {
						want, wok := gridOn(oldLo, oldHi, logPost, cfg)
						got, gok := gridLogPosterior(prior, ev, 0, logPost, cfg, nil)
						if !wok || !gok {
							t.Fatalf("α %v β %v x %v e %v %s: ok %v %v", alpha, beta, x, e, name, wok, gok)
						}
						const tol = 1e-6
						for _, d := range [][2]float64{{got.Rate, want.Rate}, {got.Lo, want.Lo}, {got.Hi, want.Hi}} {
							if math.Abs(d[0]/d[1]-1) > tol {
								t.Errorf("α %v β %v x %v e %v %s: %+v, on the old range %+v; tolerance %v", alpha, beta, x, e, name, got, want, tol)
								break
							}
						}
						n++
					}
				}
			}
		}
	}
	if n != 4*2*5*3*2 {
		t.Fatalf("%d cases", n)
	}
}

// BenchmarkPooledEstimateInMiss is BenchmarkPooledEstimateIn with a prior
// that moves every round, as a site's prior does with each of its
// objects' updates: the memo misses, and the grid's range is solved anew.
func BenchmarkPooledEstimateInMiss(b *testing.B) {
	cfg := mustCfg(b)
	objs := pooledObjects()
	var scratch Estimates
	n := 0
	c0 := cputime.Process()
	for b.Loop() {
		for _, shape := range []float64{0.4, 2.5, 4, 10} {
			shape *= 1 + 1e-9*float64(n%1000003)
			prior := GammaPrior{Shape: shape, Rate: shape * 20 * day}
			for _, c := range objs {
				c.PooledEstimateIn(prior, 0, cfg, &scratch)
				n++
			}
		}
	}
	b.ReportMetric(float64((cputime.Process()-c0).Nanoseconds())/float64(n), "cpu-ns/estimate")
}

// BenchmarkPooledDependentIn is the pooled interval on the flags' factor
// (dependence_pool.go R12) at D = 1.7, over pooledObjects under the
// priors of BenchmarkPooledEstimateInMiss: CPU ns per estimate, beside the
// pooled estimate itself (BenchmarkPooledEstimateInMiss).
func BenchmarkPooledDependentIn(b *testing.B) {
	cfg := mustCfg(b)
	objs := pooledObjects()
	var scratch Estimates
	type pe struct {
		e     Estimate
		prior GammaPrior
		c     *Change
	}
	var es []pe
	for _, shape := range []float64{0.4, 2.5, 4, 10} {
		prior := GammaPrior{Shape: shape, Rate: shape * 20 * day}
		for _, c := range objs {
			if e, ok := c.PooledEstimateIn(prior, 0, cfg, nil); ok && e.HasCI {
				es = append(es, pe{e, prior, c})
			}
		}
	}
	n := 0
	c0 := cputime.Process()
	for b.Loop() {
		for _, x := range es {
			p := x.prior
			p.Shape *= 1 + 1e-9*float64(n%1000003)
			x.c.PooledDependentIn(x.e, p, 1.7, cfg, &scratch)
			n++
		}
	}
	b.ReportMetric(float64((cputime.Process()-c0).Nanoseconds())/float64(n), "cpu-ns/estimate")
}
