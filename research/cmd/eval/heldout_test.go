package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIdentifiedRate: (H5)–(H6) against closed forms and a simulation.
// Poisson changes (k = 1): λ_p = λ. Rayleigh intervals (k = 2): ∫_0^1
// exp(−(s/η)²) ds = η·(√π/2)·erf(1/η), η = 1/(λΓ(3/2)). Weibull k = ½
// and 3: the share of unit intervals with a change in hoObserve's
// stationary renewal world is 1 − e^{−λ_p}, within 4 binomial standard
// errors widened for the flags' dependence (objects are independent; the
// share's SE is taken from the spread of the 400 objects' shares).
func TestIdentifiedRate(t *testing.T) {
	if got := identifiedRate(0.7, 1); got != 0.7 {
		t.Errorf("k=1: λ_p = %g, want 0.7", got)
	}
	for _, lambda := range []float64{0.3, 1, 3} {
		eta := 1 / (lambda * math.Gamma(1.5))
		p := lambda * eta * math.Sqrt(math.Pi) / 2 * math.Erf(1/eta)
		if got, want := identifiedRate(lambda, 2), -math.Log1p(-p); math.Abs(got/want-1) > 1e-9 {
			t.Errorf("k=2, λ=%g: λ_p = %.12g, want %.12g", lambda, got, want)
		}
	}
	for _, k := range []float64{0.5, 3} {
		for _, r := range []float64{0.3, 1} {
			rng := rand.New(rand.NewPCG(7, uint64(k*100+r*10)))
			w := hoWorld{r: r, n: 500, shape: k}
			var shares []float64
			for i := 0; i < 400; i++ {
				c := hoObserve(rng, w)
				shares = append(shares, float64(c.Changes())/float64(w.n))
			}
			var m, v float64
			for _, s := range shares {
				m += s / float64(len(shares))
			}
			for _, s := range shares {
				v += (s - m) * (s - m) / float64(len(shares)-1)
			}
			se := math.Sqrt(v / float64(len(shares)))
			want := -math.Expm1(-identifiedRate(r, k))
			if math.Abs(m-want) > 4*se {
				t.Errorf("k=%g r=%g: changed share %.4f, want 1 − e^{−λ_p} = %.4f ± %.4f", k, r, m, want, 4*se)
			}
		}
	}
}
