package estimators

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAccessDirect(t *testing.T) {
	cfg := mustCfg(t)
	var a Access
	for _, tm := range []float64{100, 130, 110, 160} { // out of order is fine
		a.Access(tm)
	}
	a.Access(math.Inf(1))
	var out Estimates
	best, ok := a.Estimate(200, cfg, &out)
	if !ok || best.Key != KeyNaive {
		t.Fatalf("best %+v %v", best, ok)
	}
	// 3 accesses after the first in (100, 200]: 0.03/s; Garwood k = 3:
	// [χ²₆(0.025)/2, χ²₈(0.975)/2] = [0.6186721, 8.7672726].
	near(t, "rate", best.Rate, 0.03, 1e-15)
	near(t, "lo", best.Lo, 0.6186721/100, 1e-8)
	near(t, "hi", best.Hi, 8.7672726/100, 1e-8)
	if a.Accesses() != 4 {
		t.Errorf("accesses %d", a.Accesses())
	}
}

// Garwood coverage for a Poisson process observed directly: seeded
// simulation, coverage within 4 binomial SE of ≥ 95% (the exact interval is
// conservative).
func TestAccessCoverage(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(51, 52))
	const K = 2000
	lambda := 0.05
	cover := 0
	for k := 0; k < K; k++ {
		var a Access
		a.Access(0)
		tm := 0.0
		for {
			tm += rng.ExpFloat64() / lambda
			if tm > 200 {
				break
			}
			a.Access(tm)
		}
		best, _ := a.Estimate(200, cfg, nil)
		var out Estimates
		a.Estimate(200, cfg, &out)
		e, _ := out.Get(KeyNaive)
		if e.Lo <= lambda && lambda <= e.Hi {
			cover++
		}
		_ = best
	}
	c := float64(cover) / K
	t.Logf("Garwood coverage %.4f", c)
	if c < 0.95-4*math.Sqrt(0.95*0.05/K) {
		t.Errorf("coverage %.4f", c)
	}
}

// TestZeroAllocs checks every update, Estimate and NextVisit: 0
// allocations.
func TestZeroAllocs(t *testing.T) {
	cfg := mustCfg(t)
	rng := rand.New(rand.NewPCG(61, 62))
	c := randomChange(rng, 200, 50, true)
	var a Access
	for i := 0; i < 100; i++ {
		a.Access(float64(i))
		a.Snapshot(Snapshot{Time: float64(i), Period: 1, LastEvent: float64(i) - 0.3, HasEvent: true})
	}
	var out Estimates
	var p [MaxClasses]float64
	buf := make([]byte, 0, 256)
	tm := c.latest()
	rates := []float64{1, 2, 3}
	alloc := make([]float64, 3)
	for name, f := range map[string]func(){
		"Change.Visit": func() {
			tm += 100
			c.Visit(Visit{Time: tm, Changed: true, LastModified: tm - 5, HasLastModified: true})
		},
		"Change.Snapshot":       func() { c.Snapshot(Snapshot{Time: tm, Period: 10, LastEvent: tm - 1, HasEvent: true}) },
		"Change.Estimate":       func() { c.Estimate(tm, cfg, &out) },
		"Change.NextVisit":      func() { c.NextVisit(tm, cfg) },
		"Change.ClassPosterior": func() { c.ClassPosterior(cfg, p[:]) },
		"Change.AppendBinary":   func() { buf = c.AppendBinary(buf[:0]) },
		"Change.DecodeBinary":   func() { c.DecodeBinary(buf) },
		"Access.Access":         func() { tm++; a.Access(tm) },
		"Access.Snapshot":       func() { a.Snapshot(Snapshot{Time: tm, Period: 1, LastEvent: tm - 0.5, HasEvent: true}) },
		"Access.Estimate":       func() { a.Estimate(tm, cfg, &out) },
		"Allocate":              func() { Allocate(rates, 10, alloc) },
	} {
		buf = c.AppendBinary(buf[:0])
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocs/op", name, n)
		}
	}
}

func benchChange(b *testing.B) (*Change, *Config) {
	cfg := DefaultConfig()
	rng := rand.New(rand.NewPCG(71, 72))
	c := randomChange(rng, 500, 100, true)
	return &c, &cfg
}

func BenchmarkChangeVisit(b *testing.B) {
	c, _ := benchChange(b)
	tm := c.latest()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tm += 3600 + float64(i&7)*60
		c.Visit(Visit{Time: tm, Changed: i&3 == 0, LastModified: tm - 100, HasLastModified: i&1 == 0})
	}
}

func BenchmarkChangeSnapshot(b *testing.B) {
	var c Change
	tm := 0.0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tm += 3600
		c.Snapshot(Snapshot{Time: tm, Period: 3600, LastEvent: tm - float64(i&1023), HasEvent: i&3 != 0})
	}
}

func BenchmarkChangeEstimate(b *testing.B) {
	c, cfg := benchChange(b)
	var out Estimates
	b.ReportAllocs()
	for b.Loop() {
		c.Estimate(c.latest(), cfg, &out)
	}
}

func BenchmarkChangeNextVisit(b *testing.B) {
	c, cfg := benchChange(b)
	b.ReportAllocs()
	for b.Loop() {
		c.NextVisit(c.latest(), cfg)
	}
}

func BenchmarkChangeEncodeDecode(b *testing.B) {
	c, _ := benchChange(b)
	buf := make([]byte, 0, 256)
	var d Change
	b.ReportAllocs()
	for b.Loop() {
		buf = c.AppendBinary(buf[:0])
		if _, err := d.DecodeBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

func BenchmarkAccessAccess(b *testing.B) {
	var a Access
	tm := 0.0
	b.ReportAllocs()
	for b.Loop() {
		tm += 0.5
		a.Access(tm)
	}
}

func BenchmarkAccessSnapshot(b *testing.B) {
	var a Access
	tm := 0.0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tm += 600
		a.Snapshot(Snapshot{Time: tm, Period: 600, LastEvent: tm - float64(i&511), HasEvent: true})
	}
}

func BenchmarkAccessEstimate(b *testing.B) {
	cfg := DefaultConfig()
	var a Access
	for i := 0; i < 1000; i++ {
		a.Access(float64(i))
		a.Snapshot(Snapshot{Time: float64(i), Period: 1, LastEvent: float64(i) - 0.3, HasEvent: i%3 != 0})
	}
	var out Estimates
	b.ReportAllocs()
	for b.Loop() {
		a.Estimate(1000, &cfg, &out)
	}
}

func ExampleChange_Estimate() {
	// CGM Example 1: daily visits for 10 days, 6 changes detected.
	var c Change
	start := 1.7e9
	c.Visit(Visit{Time: start}) // baseline
	for i, changed := range []bool{true, true, false, true, false, true, true, false, false, true} {
		c.Visit(Visit{Time: start + float64(i+1)*86400, Changed: changed})
	}
	cfg := DefaultConfig()
	var out Estimates
	best, _ := c.Estimate(start+10*86400, &cfg, &out)
	naive, _ := out.Get(KeyNaive)
	fmt.Printf("naive %.2f/day, best %s %.2f/day, 95%% CI [%.2f, %.2f]\n",
		naive.Rate*86400, best.Key, best.Rate*86400, best.Lo*86400, best.Hi*86400)
	// Output: naive 0.60/day, best bayes_beta 0.88/day, 95% CI [0.37, 1.79]
}

func ExampleIrregularMLE() {
	// CGM Example 5: changed intervals 6 h and 3 h, unchanged 4 h and 7 h.
	l, _ := IrregularMLE([]float64{6 * 3600, 3 * 3600}, 11*3600)
	fmt.Printf("%.2f changes per 20 hours\n", l*20*3600)
	// Output: 2.67 changes per 20 hours
}

func ExampleTTL() {
	ttl, _ := TTL(1.0/86400, 0.1) // changes once a day; 10% stale risk
	fmt.Printf("%.0f s\n", ttl)
	// Output: 9103 s
}

func BenchmarkChangeBest(b *testing.B) {
	c, cfg := benchChange(b)
	b.ReportAllocs()
	for b.Loop() {
		c.Estimate(c.latest(), cfg, nil)
	}
}
