package estimators

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// TestTemperedEnds checks (T1) at its ends: ω = 1 is the conjugate
// posterior Gamma(α₀ + X, β₀ + E), ω = 0 the prior, and ω between them
// the linear interpolation of the parameters (exact arithmetic on these
// binary fractions: tolerance 0).
func TestTemperedEnds(t *testing.T) {
	prior := GammaPrior{Shape: 0.75, Rate: 2.5e5}
	ev := Evidence{X: 3, E: 4e6}
	for _, tc := range []struct {
		omega float64
		want  GammaPrior
	}{
		{1, GammaPrior{0.75 + 3, 2.5e5 + 4e6}},
		{0, prior},
		{0.5, GammaPrior{0.75 + 1.5, 2.5e5 + 2e6}},
		{2, GammaPrior{0.75 + 3, 2.5e5 + 4e6}}, // clamped to 1
		{-1, prior},                            // clamped to 0
	} {
		if got := Tempered(prior, ev, tc.omega); got != tc.want {
			t.Errorf("Tempered(ω=%v) = %+v, want %+v", tc.omega, got, tc.want)
		}
	}
	if got := Tempered(prior, Evidence{X: math.NaN(), E: 1}, 1); got != prior {
		t.Errorf("NaN evidence: %+v, want the prior", got)
	}
}

// TestLogPredictiveIntegral checks (T2) against direct numerical
// integration of e^{−λd} (and 1 − e^{−λd}) over the Gamma density
// (Gauss–Legendre, 2000 nodes, on λ in [0, 60·(a+5)/b], beyond which the
// density of these shapes is below 10⁻²⁰: relative tolerance 1e-9).
func TestLogPredictiveIntegral(t *testing.T) {
	for _, tc := range []struct{ a, b, d float64 }{
		{0.5, 1e5, 3600},
		{1, 86400, 86400},
		{3.5, 2e6, 7 * 86400},
		{12, 3e5, 30 * 86400},
	} {
		// For a < 1, on u = λ^a the density's λ^{a−1} singularity at 0
		// cancels: dλ = (1/a)·u^{1/a−1}du, so the integrand is
		// (1/a)·b^a/Γ(a)·e^{−bλ}·p(λ), smooth in u; for a ≥ 1 the
		// density is smooth in λ (p = 1).
		lg, _ := math.Lgamma(tc.a)
		p := math.Min(tc.a, 1)
		hi := math.Pow(60*(tc.a+5)/tc.b, p)
		f := func(changed bool) float64 {
			return quad.Fixed(func(u float64) float64 {
				l := math.Pow(u, 1/p)
				q := math.Exp(-l * tc.d)
				if changed {
					q = -math.Expm1(-l * tc.d)
				}
				return q * math.Exp(tc.a*math.Log(tc.b)+(tc.a-p)*math.Log(l)-lg-tc.b*l) / p
			}, 0, hi, 2000, nil, 0)
		}
		gp := GammaPrior{Shape: tc.a, Rate: tc.b}
		for _, changed := range []bool{false, true} {
			want := f(changed)
			got := math.Exp(LogPredictive(gp, tc.d, changed))
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("a=%v b=%v d=%v changed=%v: %.12g, integral %.12g", tc.a, tc.b, tc.d, changed, got, want)
			}
		}
		// Closed form (b/(b+d))^a, tolerance 1e-14 relative.
		if got, want := math.Exp(LogPredictive(gp, tc.d, false)), math.Pow(tc.b/(tc.b+tc.d), tc.a); math.Abs(got-want) > 1e-14*want {
			t.Errorf("closed form: %v, want %v", got, want)
		}
	}
	if got := LogPredictive(GammaPrior{Shape: 1, Rate: 1}, 0, true); got != 0 {
		t.Errorf("d = 0: %v, want 0", got)
	}
}

// TestTemperScoreChoose scores visits drawn with known outcomes and checks
// that the sums are (T3) term by term and that the choice follows the
// largest sum, ties toward the larger ω.
func TestTemperScoreChoose(t *testing.T) {
	var s [TemperPoints]float64
	if w, k := TemperChoose(&s); w != 1 || k != TemperPoints-1 {
		t.Fatalf("no visit: ω %v (k %d), want 1", w, k)
	}
	prior := GammaPrior{Shape: 1, Rate: 10 * 86400} // mean: a change every 10 days
	// A page whose evidence says "never changes" (no change in a year)
	// changes at its next daily visit: the smaller ω predicted it better.
	ev := Evidence{X: 0, E: 365 * 86400}
	TemperScore(&s, prior, ev, 86400, true)
	for k, w := range TemperGrid {
		want := math.Log(1 - math.Pow(1+86400/(10*86400+w*365*86400), -1))
		if math.Abs(s[k]-want) > 1e-12*math.Abs(want) {
			t.Errorf("score[%d] (ω %v) = %v, want %v", k, w, s[k], want)
		}
	}
	if w, _ := TemperChoose(&s); w != 0 {
		t.Errorf("change on a quiet page: ω %v, want 0", w)
	}
	// The same page unchanged at many later visits: the evidence was right
	// after all and the larger ω predicts the quiet better.
	var q [TemperPoints]float64
	for i := 0; i < 50; i++ {
		TemperScore(&q, prior, ev, 86400, false)
	}
	if w, _ := TemperChoose(&q); w != 1 {
		t.Errorf("quiet page stays quiet: ω %v, want 1", w)
	}
	// Equal sums: the larger ω.
	var tie [TemperPoints]float64
	tie[2], tie[5] = 1, 1
	if w, k := TemperChoose(&tie); k != 5 || w != TemperGrid[5] {
		t.Errorf("tie: ω %v (k %d), want %v", w, k, TemperGrid[5])
	}
}
