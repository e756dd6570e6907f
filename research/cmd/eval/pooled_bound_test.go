package main

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/research/pooled"
)

// The truth fit's variance is the truths' sample variance less their
// Poisson variance mean(k/T)/T, never below the floor and never above the
// sample variance; leaving a truth out is the fit of the others.
func TestTruthFit(t *testing.T) {
	const T = 4.0
	cases := []struct {
		name    string
		counts  []float64
		floored bool
	}{
		{"spread beyond Poisson", []float64{0, 1, 2, 8, 12, 20, 3, 5}, false},
		{"counts alike (under-dispersed)", []float64{4, 4, 5, 4, 4, 5, 4, 4}, true},
		{"Poisson-like at one rate", []float64{3, 5, 4, 6, 2, 4, 5, 3}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f truthFit
			var m moments
			for _, k := range tc.counts {
				f.add(k/T, T)
				m.add(k / T)
			}
			raw := m.sd() * m.sd()
			if math.Abs(f.rawVar()-raw) > 1e-12 {
				t.Fatalf("rawVar %g, want %g", f.rawVar(), raw)
			}
			v, fl := f.lambdaVar(truthMinCV)
			floor := truthMinCV * truthMinCV * m.mean() * m.mean()
			if fl != tc.floored {
				t.Errorf("floored = %v, want %v (raw %g, noise %g)", fl, tc.floored, raw, m.mean()/T)
			}
			if want := raw - m.mean()/T; !fl && math.Abs(v-want) > 1e-12 {
				t.Errorf("var_λ %g, want var − mean/T = %g", v, want)
			}
			if !(v >= floor) || !(v <= math.Max(raw, floor)) {
				t.Errorf("var_λ %g outside [floor %g, max(raw %g, floor)]: the correction must remove variance, not add it", v, floor, raw)
			}
			p, ok := f.prior(truthMinCV)
			if !ok || math.Abs(pooled.Mean(p)/m.mean()-1) > 1e-12 || math.Abs(p.Shape/p.Rate/p.Rate/v-1) > 1e-12 {
				t.Errorf("prior %+v (ok %v): want mean %g, variance %g", p, ok, m.mean(), v)
			}
			var rest truthFit
			for _, k := range tc.counts[1:] {
				rest.add(k/T, T)
			}
			w := f.without(tc.counts[0]/T, T)
			if math.Abs(w.n-rest.n) > 0 || math.Abs(w.s-rest.s) > 1e-12 || math.Abs(w.s2-rest.s2) > 1e-12 || math.Abs(w.noise-rest.noise) > 1e-12 {
				t.Errorf("without: %+v, want %+v", w, rest)
			}
		})
	}
}

// posteriorQuantile reads the q quantile off the published posterior:
// increasing in q, at the published interval's ends at q = 0.025 and 0.975,
// and for a silent object (the conjugate Gamma(α, β + U)) the gamma's own
// quantile.
func TestPosteriorQuantile(t *testing.T) {
	cfg := newEstConfig()
	const day = 86400.0
	prior := estimators.GammaPrior{Shape: 2, Rate: 2 * 30 * day} // mean one in 30 days
	for _, tc := range []struct {
		name string
		ev   []float64
	}{{"silent", nil}, {"changes", []float64{10 * day, 50 * day, 51 * day, 200 * day}}} {
		t.Run(tc.name, func(t *testing.T) {
			vt := sim.Regular{Interval: 7 * day}.Times(nil, 0, 365*day, nil)
			o := observeObject(tc.ev, vt, false, cfg)
			med, ok := o.ch.PooledEstimate(prior, cfg)
			if !ok {
				t.Fatal("no pooled estimate")
			}
			for i, q := range []float64{0.025, 0.975} {
				x, ok := posteriorQuantile(o.ch, prior, q, cfg)
				if want := [2]float64{med.Lo, med.Hi}[i]; !ok || math.Abs(x/want-1) > 1e-12 {
					t.Errorf("q = %g: %g (ok %v), want the published interval's end %g", q, x, ok, want)
				}
			}
			last := 0.0
			for _, q := range boundQuantiles {
				x, ok := posteriorQuantile(o.ch, prior, q, cfg)
				if !ok || !(x > last) {
					t.Fatalf("q = %g: %g (ok %v), not above q − 0.05's %g", q, x, ok, last)
				}
				last = x

				if tc.ev == nil {
					want := mathext.GammaIncRegInv(prior.Shape, q) / (prior.Rate + o.ev.E)
					if math.Abs(x/want-1) > 1e-9 {
						t.Errorf("q = %g: %g, want Gamma(α, β + U)'s %g", q, x, want)
					}
				}
			}
		})
	}
}

// boundSites simulates nSites sites of weekly-crawled pages (one observed
// year) whose rates are log-normal around a site median; each page's truth
// is its count in truth windows of T years, at its rate times shift (1:
// stationary).
func boundSites(seed uint64, nSites int, shift float64) [][]pooledObj {
	const day = 86400.0
	const y = 365 * day
	const T = 4 * y
	cfg := newEstConfig()
	var sets [][]pooledObj
	for si := 0; si < nSites; si++ {
		rng := sim.NewRand(seed, uint64(si))
		med := math.Exp(math.Log(0.3)+rng.Float64()*math.Log(10)) / y // 0.3 to 3 a year
		var objs []pooledObj
		for i := 0; i < 40; i++ {
			lam := med * math.Exp(0.5*rng.NormFloat64())
			ev := sim.Poisson{Rate: lam}.Events(rng, y, nil)
			o := observeObject(ev, sim.Regular{Interval: 7 * day}.Times(nil, 0, y, nil), false, cfg)
			k := sim.Count(sim.Poisson{Rate: lam * shift}.Events(rng, T, nil), 0, T)
			o.truth, o.tcount, o.tspan, o.scored, o.f = float64(k)/T, k, T, true, 1/(7*day)
			o.ocount, o.ospan = len(ev), y
			objs = append(objs, o)
		}
		sets = append(sets, objs)
	}
	return sets
}

// On synthetic sites the truth-fitted site prior scores no worse than the
// published (observed-year) prior on the same pages, and far better when
// every site's truth years are twice as active as its observed year (the
// level shift it knows and the observed year does not); the best quantile
// is no worse than the median (the median is on the grid).
func TestOracleBoundSynthetic(t *testing.T) {
	cfg := newEstConfig()
	for _, tc := range []struct {
		name   string
		shift  float64
		margin float64 // truth-fitted ratio ≤ published ratio − margin
	}{{"stationary", 1, 0}, {"truth years twice as active", 2, 0.2}} {
		t.Run(tc.name, func(t *testing.T) {
			sets := boundSites(7, 30, tc.shift)
			pub := boundScore(sets, cfg, nil, 0.5)
			b := oracleBound(sets, cfg)
			if b.site.n[0] != pub.n[0] || b.site.n[0] < 300 {
				t.Fatalf("pages: oracle %d, published %d (same pages wanted, at least 300)", b.site.n[0], pub.n[0])
			}
			t.Logf("ratio < 5 changes: truth-fitted site prior %.3f, best quantile %.3f (q %g), published %.3f", ratio0(b.site), ratio0(b.bestQ), b.q, ratio0(pub))
			if r, p := ratio0(b.site), ratio0(pub); !(r <= p-tc.margin) {
				t.Errorf("truth-fitted site prior ratio %.3f, published %.3f: want at most %.3f", r, p, p-tc.margin)
			}
			if !(ratio0(b.bestQ) <= ratio0(b.site)) {
				t.Errorf("best quantile %.3f (q %g) above the median's %.3f", ratio0(b.bestQ), b.q, ratio0(b.site))
			}
			if c := b.site.predCoverage(0); tc.shift == 1 && !(c >= 0.9 && c <= 0.99) {
				t.Errorf("stationary predictive coverage %s, want about 95 %%", pct(c))
			}
		})
	}
}
