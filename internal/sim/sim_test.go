package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// countStats simulates reps realisations and returns the mean and variance
// of N(horizon).
func countStats(t *testing.T, p Process, horizon float64, reps int) (mean, variance float64) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := NewRand(1, 2)
	var buf []float64
	var s, s2 float64
	for i := 0; i < reps; i++ {
		buf = p.Events(rng, horizon, buf[:0])
		for k := 1; k < len(buf); k++ {
			if buf[k] < buf[k-1] || buf[k] <= 0 || buf[k] > horizon {
				t.Fatalf("events not ascending in (0,%v]: %v", horizon, buf[k-1:k+1])
			}
		}
		n := float64(len(buf))
		s += n
		s2 += n * n
	}
	mean = s / float64(reps)
	variance = s2/float64(reps) - mean*mean
	return
}

func TestCountsMatchMean(t *testing.T) {
	const reps = 4000
	tests := []struct {
		name    string
		p       Process
		horizon float64
		// poissonVar: the count is Poisson, so Var = mean.
		poissonVar bool
	}{
		{"poisson", Poisson{Rate: 2}, 10, true},
		{"periodic", Periodic{Period: 1, Levels: []float64{0, 5, 1, 0}}, 7.3, true},
		{"matloff-spike", Periodic{Period: 1, Levels: []float64{0, 0, 0, 0, 20, 0, 0, 0, 0, 0}}, 20, true},
		{"weibull-incr", Piecewise{Segments: []WeibullSegment{{Duration: 10, Beta: 2, Eta: 2}}}, 10, true},
		{"weibull-decr", Piecewise{Segments: []WeibullSegment{{Duration: 10, Beta: 0.5, Eta: 0.1}}}, 7, true},
		{"weibull-pieces", Piecewise{Segments: []WeibullSegment{{5, 1, 0.5}, {5, 1.5, 1}, {5, 0.7, 0.3}}}, 12, true},
		{"gamma-1", GammaRenewal{Shape: 1, Rate: 3}, 10, true},
		{"gamma-0.5", GammaRenewal{Shape: 0.5, Rate: 3}, 10, false},
		{"gamma-4", GammaRenewal{Shape: 4, Rate: 3}, 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.p.Mean(tc.horizon)
			mean, v := countStats(t, tc.p, tc.horizon, reps)
			// 5 standard errors of the mean; the variance of N is at most a
			// few times the mean for these processes (gamma 0.5: 2×).
			se := math.Sqrt(3 * want / reps)
			if math.Abs(mean-want) > 5*se {
				t.Errorf("mean N = %.4f, want %.4f ± %.4f", mean, want, 5*se)
			}
			if tc.poissonVar {
				// Var of the sample variance of a Poisson(m) is ≈ (m+2m²)/reps.
				sev := math.Sqrt((want + 2*want*want) / reps)
				if math.Abs(v-want) > 5*sev {
					t.Errorf("var N = %.4f, want %.4f ± %.4f", v, want, 5*sev)
				}
			}
		})
	}
}

func TestWeibullMeanFormula(t *testing.T) {
	p := Piecewise{Segments: []WeibullSegment{{Duration: 100, Beta: 1.7, Eta: 3}}}
	for _, u := range []float64{1, 3, 10, 50} {
		if got, want := p.Mean(u), math.Pow(u/3, 1.7); math.Abs(got-want) > 1e-12*want {
			t.Errorf("Mean(%v) = %v, want (t/η)^β = %v", u, got, want)
		}
	}
	if got := p.RateAt(3); math.Abs(got-1.7/3) > 1e-12 {
		t.Errorf("RateAt(η) = %v, want β/η", got)
	}
}

func TestPeriodicIntegral(t *testing.T) {
	p := Periodic{Period: 24, Levels: []float64{1, 2, 3}}
	// ∫₀^30: one full period (8+16+24=48) plus 6h of level 1.
	if got := p.Mean(30); math.Abs(got-54) > 1e-12 {
		t.Errorf("Mean(30) = %v, want 54", got)
	}
	if got := p.AverageRate(); got != 2 {
		t.Errorf("AverageRate = %v, want 2", got)
	}
}

func TestGammaIntervals(t *testing.T) {
	rng := NewRand(7, 7)
	for _, shape := range []float64{0.3, 1, 2.5, 9} {
		const n = 200000
		var s, s2 float64
		for i := 0; i < n; i++ {
			x := Gamma(rng, shape)
			s += x
			s2 += x * x
		}
		m := s / n
		v := s2/n - m*m
		// Gamma(α,1): mean α, variance α; SE of mean √(α/n).
		if math.Abs(m-shape) > 5*math.Sqrt(shape/n) {
			t.Errorf("shape %v: mean %v", shape, m)
		}
		// SE of the variance ≈ √((μ4−σ⁴)/n), μ4 = 3α²+6α.
		sev := math.Sqrt((3*shape*shape + 6*shape - shape*shape) / n)
		if math.Abs(v-shape) > 5*sev {
			t.Errorf("shape %v: variance %v", shape, v)
		}
	}
	// Renewal mean interval 1/rate.
	g := GammaRenewal{Shape: 2, Rate: 0.5}
	ev := g.Events(NewRand(3, 3), 200000, nil)
	gap := (ev[len(ev)-1] - ev[0]) / float64(len(ev)-1)
	// interval sd = mean/√α = 2/√2; SE over ~1e5 intervals.
	if se := math.Sqrt(2) / math.Sqrt(float64(len(ev))); math.Abs(gap-2) > 5*se {
		t.Errorf("mean interval %v, want 2 ± %v", gap, 5*se)
	}
}

func TestReproducible(t *testing.T) {
	p := GammaRenewal{Shape: 0.7, Rate: 1}
	a := p.Events(NewRand(42, 1), 100, nil)
	b := p.Events(NewRand(42, 1), 100, nil)
	c := p.Events(NewRand(43, 1), 100, nil)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("same seed gave different events")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds gave the same events")
	}
}

func TestObserve(t *testing.T) {
	events := []float64{0.5, 1.5, 1.7, 4.2}
	visits := Regular{Interval: 1}.Times(nil, 1, 5, nil)
	if fmt.Sprint(visits) != "[1 2 3 4 5]" {
		t.Fatalf("visits %v", visits)
	}
	got := Observe(events, visits, true, nil)
	want := []Visit{
		{Time: 1, First: true, HasLastModified: true, LastModified: 0.5},
		{Time: 2, Interval: 1, Changed: true, HasLastModified: true, LastModified: 1.7},
		{Time: 3, Interval: 1, HasLastModified: true, LastModified: 1.7},
		{Time: 4, Interval: 1, HasLastModified: true, LastModified: 1.7},
		{Time: 5, Interval: 1, Changed: true, HasLastModified: true, LastModified: 4.2},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Observe =\n%v\nwant\n%v", got, want)
	}
	if a := got[1].Age(); math.Abs(a-0.3) > 1e-12 {
		t.Errorf("age %v", a)
	}
	noLM := Observe(events, []float64{0.1, 3}, false, nil)
	if noLM[1].HasLastModified || !noLM[1].Changed || !math.IsNaN(noLM[1].Age()) {
		t.Errorf("no-LM visit %+v", noLM[1])
	}
	if lm0 := Observe(events, []float64{0.1}, true, nil); !lm0[0].HasLastModified || lm0[0].LastModified != 0 {
		t.Errorf("LM before any event %+v, want creation time 0", lm0[0])
	}
}

func TestSnapshots(t *testing.T) {
	events := []float64{0.5, 1.5, 1.7, 4.2}
	got := Snapshots(events, 1, 5, nil)
	want := []Snapshot{{1, true, 0.5}, {2, true, 1.7}, {3, true, 1.7}, {4, true, 1.7}, {5, true, 4.2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Snapshots = %v, want %v", got, want)
	}
	if got := Snapshots([]float64{2.5}, 1, 2, nil); got[0].HasLast || got[1].HasLast {
		t.Errorf("empty snapshots %v", got)
	}
	if c := Count(events, 1.5, 4.2); c != 2 {
		t.Errorf("Count = %d, want 2", c)
	}
}

func TestPoissonVisits(t *testing.T) {
	v := PoissonVisits{Rate: 2}.Times(NewRand(5, 5), 10, 10010, nil)
	if v[0] != 10 {
		t.Fatalf("first visit %v", v[0])
	}
	// count-1 ~ Poisson(20000): 5 SDs.
	if n := float64(len(v) - 1); math.Abs(n-20000) > 5*math.Sqrt(20000) {
		t.Errorf("visits %v", n)
	}
}

func TestValidate(t *testing.T) {
	bad := []interface{ Validate() error }{
		Poisson{}, Poisson{Rate: math.Inf(1)}, GammaRenewal{Shape: 0, Rate: 1}, GammaRenewal{Shape: 1},
		Periodic{Period: 1}, Periodic{Period: 1, Levels: []float64{0}}, Periodic{Levels: []float64{1}},
		Piecewise{}, Piecewise{Segments: []WeibullSegment{{1, 0, 1}}},
		Regular{}, PoissonVisits{Rate: -1},
	}
	for _, b := range bad {
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%#v: Validate = %v, want ErrInvalid", b, err)
		}
	}
}
