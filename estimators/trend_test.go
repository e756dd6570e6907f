package estimators

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// trendWorld is a simulated population of complete histories under (T1):
// n objects entering uniformly over the first `spread` years from 2000,
// λ_i ~ Gamma(shape, shape/mean) (mean changes a year at g = 1), g[k] the
// level of year 2000+k. It returns the events in time order (entries and
// changes) and the objects' entry times and rates (per second).
type trendEvent struct {
	t, s  float64
	enter bool
}

func trendWorld(seed uint64, n int, spread, shape, mean float64, g []float64) ([]trendEvent, []float64, []float64) {
	const year = 365.25 * 86400
	r := rand.New(rand.NewPCG(seed, 7))
	t0 := yearStart(2000)
	var evs []trendEvent
	starts, rates := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		s := t0 + r.Float64()*spread*year
		l := gammaDraw(r, shape, shape/mean) / year
		starts[i], rates[i] = s, l
		evs = append(evs, trendEvent{s, s, true})
		for k := range g {
			lo, hi := math.Max(s, yearStart(int32(2000+k))), yearStart(int32(2001+k))
			for x := lo + r.ExpFloat64()/(l*g[k]); x < hi; x += r.ExpFloat64() / (l * g[k]) {
				evs = append(evs, trendEvent{x, s, false})
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	return evs, starts, rates
}

func (tr *Trend) replay(evs []trendEvent) {
	for _, e := range evs {
		if e.enter {
			tr.Enter(e.s, e.t)
		} else {
			tr.Change(e.t, 1)
		}
	}
}

// TestTrendKnownLevels: a population with known levels g (years
// 2000–2007: 4, 3, 2, 1, 1, 0.5, 0.5, 1) and known rates (Gamma(2), mean
// 2 changes a year at g = 1; 3000 objects entering over 2000–2002), as of
// the last second of 2007. Each closed year's level (T3), m̂_k = r_k·m̂_now,
// is g_k·Σ_i λ_i d_ik / D_k (the drawn rates' exposure-weighted mean times
// the year's level) within 4 of its standard errors: given the drawn
// rates, C_k is Poisson with mean g_k Σ_i λ_i d_ik, so SE(log m̂_k) =
// 1/√E[C_k]. The level (T4) and ρ (T8) are their formulas over the
// stored totals with the stored ω, and the exposure of an object present
// from 2000 is Σ_k r_k |P_k| (T5).
func TestTrendKnownLevels(t *testing.T) {
	const year = 365.25 * 86400
	g := []float64{4, 3, 2, 1, 1, 0.5, 0.5, 1}
	evs, starts, rates := trendWorld(1, 3000, 3, 2, 2, g)
	var tr Trend
	tr.replay(evs)
	end := yearStart(2008) - 1
	v := tr.At(end)
	if !v.Ok || v.n != 7 {
		t.Fatalf("view ok %v with %d closed periods, want 7", v.Ok, v.n)
	}
	for k := 0; k < 7; k++ {
		lo, hi := yearStart(int32(2000+k)), yearStart(int32(2001+k))
		var ec, d float64
		for i, s := range starts {
			if x := hi - math.Max(s, lo); x > 0 {
				ec += rates[i] * g[k] * x
				d += x
			}
		}
		got := v.r[k] * v.Level
		if z := math.Log(got/(ec/d)) * math.Sqrt(ec); math.Abs(z) > 4 {
			t.Errorf("year %d: level %.4f a year, want %.4f (z %.2f)", 2000+k, got*year, ec/d*year, z)
		}
	}
	// (T4), (T8) and (T5) over the stored totals.
	omega := tr.Omega
	var cw, dw, num, den float64
	dCur := tr.Objects*end - tr.S
	for k := 0; k <= 7; k++ {
		c, d, mid := tr.C, dCur, (yearStart(2007)+end)/2
		if k < 7 {
			c, d, mid = tr.Periods[k].C, tr.Periods[k].D, (yearStart(int32(2000+k))+yearStart(int32(2001+k)))/2
		}
		w := math.Pow(omega, (end-mid)/(365.2425*86400))
		cw += w * c
		dw += w * d
	}
	level := cw / dw
	wantE := end - yearStart(2007)
	for k := 0; k < 7; k++ {
		r := tr.Periods[k].C / tr.Periods[k].D / level
		num += r * tr.Periods[k].D
		den += tr.Periods[k].D
		wantE += r * (yearStart(int32(2001+k)) - yearStart(int32(2000+k)))
	}
	rho := (num + dCur) / (den + dCur)
	if math.Abs(v.Level/level-1) > 1e-12 || math.Abs(v.Rho/rho-1) > 1e-12 {
		t.Errorf("level %g ρ %g, want %g %g (ω %g)", v.Level, v.Rho, level, rho, omega)
	}
	if got := v.Exposure(yearStart(2000), end-yearStart(2000)); math.Abs(got/wantE-1) > 1e-12 {
		t.Errorf("exposure from 2000: %.6f years, want %.6f", got/year, wantE/year)
	}
}

// TestTrendOmega: the discount of (T4) follows the population's own
// history. Levels that jump and stay (1 for four years, then 4) are best
// predicted by the last years: ω ≤ 0.25, and the level as of the end of
// the last year is the last years' 4 (× the mean rate) within 10 %;
// levels that alternate about a fixed mean (1, 4, 1, 4, …) by the long
// run: ω ≥ 0.75. Known truth: 2000 objects, Gamma(2) rates of mean 2 a
// year at g = 1 (each year's level has a Poisson error under 1 %, far
// below the differences the choice is made on).
func TestTrendOmega(t *testing.T) {
	const year = 365.25 * 86400
	for _, c := range []struct {
		name     string
		g        []float64
		lo, hi   float64
		levelNow float64
	}{
		{"jump", []float64{1, 1, 1, 1, 4, 4, 4, 4, 4, 4}, 0, 0.25, 4},
		{"alternating", []float64{1, 4, 1, 4, 1, 4, 1, 4, 1, 4}, 0.75, 1, 0},
	} {
		evs, _, rates := trendWorld(3, 2000, 0.01, 2, 2, c.g)
		var tr Trend
		tr.replay(evs)
		end := yearStart(int32(2000+len(c.g))) - 1
		v := tr.At(end)
		t.Logf("%s: ω %g, level %.3f a year", c.name, tr.Omega, v.Level*year)
		if !v.Ok || tr.Omega < c.lo || tr.Omega > c.hi {
			t.Errorf("%s: ω %g (trend %v), want in [%g, %g]", c.name, tr.Omega, v.Ok, c.lo, c.hi)
		}
		if c.levelNow > 0 {
			mean := 0.0
			for _, l := range rates {
				mean += l
			}
			want := c.levelNow * mean / float64(len(rates))
			if math.Abs(v.Level/want-1) > 0.1 {
				t.Errorf("%s: level %.3f a year, want %.3f", c.name, v.Level*year, want*year)
			}
		}
	}
}

// TestTrendTotals: the trend's totals are the population's exact ones
// (T2) for any order of entries — an object entering into a closed
// period (a late entry) adds its exposure there — and the fold keeps them:
// with 40 years and K = MaxTrendPeriods, the oldest periods merge, every
// change and every second of exposure is still counted once, and at most
// K closed periods are kept.
func TestTrendTotals(t *testing.T) {
	const year = 365.25 * 86400
	g := make([]float64, 40)
	for k := range g {
		g[k] = 1 + 0.5*math.Sin(float64(k))
	}
	evs, starts, _ := trendWorld(2, 200, 30, 1, 3, g)
	// Move a tenth of the entries after the next change event (still in
	// time order for the others): late entries, some into closed years.
	var late []trendEvent
	var kept []trendEvent
	for i, e := range evs {
		if e.enter && i%10 == 0 {
			late = append(late, e)
			continue
		}
		kept = append(kept, e)
	}
	var tr Trend
	tr.replay(kept)
	for _, e := range late {
		tr.Enter(e.s, evs[len(evs)-1].t)
	}
	end := yearStart(2040) - 1
	wantC, wantD := float64(0), 0.0
	for _, e := range evs {
		if !e.enter {
			wantC++
		}
	}
	for _, s := range starts {
		wantD += end - s
	}
	gotC, gotD := tr.C, tr.Objects*end-tr.S
	for _, p := range tr.Periods[:tr.NClosed] {
		gotC += p.C
		gotD += p.D
	}
	if tr.NClosed > MaxTrendPeriods || tr.NClosed < MaxTrendPeriods-1 {
		t.Errorf("%d closed periods, want %d", tr.NClosed, MaxTrendPeriods)
	}
	if gotC != wantC {
		t.Errorf("changes %g, want %g", gotC, wantC)
	}
	// exposure sums of ~10⁷ s terms: relative rounding far below 1e-12
	if math.Abs(gotD/wantD-1) > 1e-12 {
		t.Errorf("exposure %.6f object-years, want %.6f", gotD/year, wantD/year)
	}
	// The newest closed years are single years with their exact totals.
	for i := tr.NClosed - 1; i > tr.NClosed-5; i-- {
		p := tr.Periods[i]
		lo, hi := yearStart(p.Year), yearStart(p.Year+1)
		c, d := 0.0, 0.0
		for _, e := range evs {
			if !e.enter && e.t >= lo && e.t < hi {
				c++
			}
		}
		for _, s := range starts {
			if x := hi - math.Max(s, lo); x > 0 {
				d += x
			}
		}
		if p.C != c || math.Abs(p.D/d-1) > 1e-12 {
			t.Errorf("year %d: C %g D %.6f, want %g %.6f", p.Year, p.C, p.D/year, c, d/year)
		}
	}
}

// TestTrendThreshold: below MinTrendChanges changes in the window of (T4)
// there is no trend: exposures stay plain and the prior unchanged; at it,
// there is one.
func TestTrendThreshold(t *testing.T) {
	const day = 86400.0
	for _, n := range []int{MinTrendChanges - 1, MinTrendChanges} {
		var tr Trend
		s := yearStart(2020)
		for i := 0; i < 50; i++ {
			tr.Enter(s, s)
		}
		for i := 0; i < n; i++ {
			tr.Change(s+day+float64(i)*day, 1)
		}
		at := s + 200*day
		v := tr.At(at)
		if v.Ok != (n >= MinTrendChanges) {
			t.Errorf("%d changes: trend %v", n, v.Ok)
		}
		if !v.Ok {
			if got := v.Exposure(s, 123); got != 123 {
				t.Errorf("%d changes: exposure %g, want the plain 123", n, got)
			}
			if p := v.Prior(GammaPrior{Shape: 2, Rate: 3}); p != (GammaPrior{Shape: 2, Rate: 3}) {
				t.Errorf("%d changes: prior %v", n, p)
			}
			continue
		}
		// One period only: the level is n/(50·200 days) and ρ = 1.
		if want := float64(n) / (50 * 200 * day); math.Abs(v.Level/want-1) > 1e-12 || math.Abs(v.Rho-1) > 1e-12 {
			t.Errorf("%d changes: level %g (want %g), ρ %g", n, v.Level, want, v.Rho)
		}
	}
}

// BenchmarkTrendAt: the per-estimate cost of the trend (an object's view
// and its exposure) with a full trend of MaxTrendPeriods closed years.
func BenchmarkTrendAt(b *testing.B) {
	var tr Trend
	tr.Enter(yearStart(1990), yearStart(1990))
	for y := int32(1990); y <= 2030; y++ {
		for i := 0; i < 200; i++ {
			tr.Change(yearStart(y)+float64(i)*1e5, 1)
		}
	}
	at := yearStart(2030) + 1e7
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v := tr.At(at)
		if v.Exposure(yearStart(2000), 1) <= 0 {
			b.Fatal("no exposure")
		}
	}
}
