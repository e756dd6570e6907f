package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// (T2) against Simpson's rule on (1/T)∫₀ᵀ e^{−κs} ds (20,000 intervals of
// h = T/20,000: relative error below (κh)⁴·κT/180 ≈ 1e-11 at κT ≤ 50), and
// its limits.
func TestSpanWeight(t *testing.T) {
	for _, c := range []struct{ kappa, T float64 }{{1e-8, 3e7}, {math.Ln2 / (30 * loopDay), loopYear}, {1e-6, 5e7}, {0.3, 10}} {
		const n = 20000
		h := c.T / n
		sum := 1 + math.Exp(-c.kappa*c.T)
		for k := 1; k < n; k++ {
			w := 2.0
			if k%2 == 1 {
				w = 4
			}
			sum += w * math.Exp(-c.kappa*float64(k)*h)
		}
		want := sum * h / 3 / c.T
		if got := spanWeight(c.kappa, c.T); math.Abs(got-want) > 1e-9*want {
			t.Errorf("spanWeight(%g, %g) = %.12g, Simpson %.12g", c.kappa, c.T, got, want)
		}
	}
	if spanWeight(0, loopYear) != 1 || spanWeight(math.Inf(1), loopYear) != 0 || spanWeight(1e-6, 0) != 1 {
		t.Errorf("limits: κ = 0 → 1, κ = ∞ → 0, T = 0 → 1")
	}
}

// (Q1): uniform predictors give exactly 1; the scored year's own counts
// give the Cauchy–Schwarz value (Σ√y)²/(N·Σy) ≤ 1, the least possible.
func TestStalenessRatio(t *testing.T) {
	y := []float64{0.5, 1, 4, 9, 2}
	if got := stalenessRatio([]float64{3, 3, 3, 3, 3}, y); math.Abs(got-1) > 1e-12 {
		t.Errorf("uniform: %g, want 1", got)
	}
	var s, sy float64
	for _, v := range y {
		s += math.Sqrt(v)
		sy += v
	}
	want := s * s / (5 * sy)
	if got := stalenessRatio(y, y); math.Abs(got-want) > 1e-12 || got > 1 {
		t.Errorf("m = y: %g, want (Σ√y)²/(NΣy) = %g", got, want)
	}
	if got := stalenessRatio([]float64{1, 1, 1, 1, 100}, y); got <= want {
		t.Errorf("a wrong predictor %g beats the scored year's own counts %g", got, want)
	}
}

// (Q2) on simulated two-year worlds of known persistence: rates fixed
// over both years (stationary: ω* = 1) or drawn afresh for the scored
// year (no persistence: ω* = 0). With N = 200,000 pages, λ ~ Gamma(1, 1)
// per year, the relative slope s has a standard error of about
// √(Var(y|x)/(N·Var(x)))/ȳ ≈ √(2/(2·N)) ≈ 0.0022, and ω* = s·α/(1 − s·x̄)
// moves by about 0.0022/(1 − s)² — 0.009 at s = ½ (stationary); the
// tolerance 0.05 is over five standard errors.
func TestPersistenceOmega(t *testing.T) {
	for _, c := range []struct {
		name   string
		redraw bool
		want   float64
	}{{"stationary", false, 1}, {"redrawn", true, 0}} {
		src := rand.New(rand.NewPCG(33, 41))
		g := distuv.Gamma{Alpha: 1, Beta: 1, Src: src}
		w := &loopWorld{T0: 0, S: loopYear, T1: 2 * loopYear}
		const n = 200000
		for range n {
			l1 := g.Rand()
			l2 := l1
			if c.redraw {
				l2 = g.Rand()
			}
			x := distuv.Poisson{Lambda: l1, Src: src}.Rand()
			y := distuv.Poisson{Lambda: l2, Src: src}.Rand()
			var ev []float64
			for k := 0; k < int(x); k++ {
				ev = append(ev, w.T0+float64(k+1))
			}
			for k := 0; k < int(y); k++ {
				ev = append(ev, w.S+float64(k+1))
			}
			w.ev = append(w.ev, ev)
		}
		p, ok := w.persistence()
		if !ok {
			t.Fatalf("%s: no persistence", c.name)
		}
		if math.Abs(p.omega-c.want) > 0.05 {
			t.Errorf("%s: ω* = %.4f, want %g ± 0.05 (shape %.3f, want 1 ± 0.05)", c.name, p.omega, c.want, p.shape)
		}
		if math.Abs(p.shape-1) > 0.05 {
			t.Errorf("%s: prior shape %.4f, want 1 ± 0.05", c.name, p.shape)
		}
	}
}

// permuted keeps every page with its own history, past and truth, in
// another order that depends on the seed alone.
func TestPermutedWorld(t *testing.T) {
	w := &loopWorld{S: 10, T1: 20}
	for i := range 50 {
		w.names = append(w.names, string(rune('A'+i)))
		w.ev = append(w.ev, []float64{float64(i) + 0.5})
		w.truth = append(w.truth, float64(i))
		w.past = append(w.past, float64(2*i))
	}
	p, q := w.permuted(3), w.permuted(3)
	moved := 0
	seen := map[string]bool{}
	for k, n := range p.names {
		i := int(n[0] - 'A')
		if p.ev[k][0] != float64(i)+0.5 || p.truth[k] != float64(i) || p.past[k] != float64(2*i) || q.names[k] != n {
			t.Fatalf("page %s at %d: history %v, truth %g, past %g (other run %s)", n, k, p.ev[k], p.truth[k], p.past[k], q.names[k])
		}
		seen[n] = true
		if k != i {
			moved++
		}
	}
	if len(seen) != 50 || moved == 0 {
		t.Errorf("%d distinct pages of 50, %d moved", len(seen), moved)
	}
}
