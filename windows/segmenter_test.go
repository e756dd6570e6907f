package windows

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Config){
		"MinPoints":       func(c *Config) { c.MinPoints = 3 },
		"TrendLevel":      func(c *Config) { c.TrendLevel = 1 },
		"ShiftRatio":      func(c *Config) { c.ShiftRatio = 1 },
		"Threshold":       func(c *Config) { c.Threshold = math.NaN() },
		"FreezePoints":    func(c *Config) { c.FreezePoints = 2 },
		"MinRatio":        func(c *Config) { c.MinRatio = 0.5 },
		"MaxPValue":       func(c *Config) { c.MaxPValue = -0.01 },
		"AlphaDecreasing": func(c *Config) { c.AlphaDecreasing = 1.5 },
		"Alpha":           func(c *Config) { c.Alpha = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestConfigDefaults pins the defaults the zero value means and checks
// that Validate reports every problem at once.
func TestConfigDefaults(t *testing.T) {
	want := Config{MinPoints: 4, TrendLevel: 0.05, ShiftRatio: 2, Threshold: 15, FreezePoints: 100,
		MinRatio: math.Sqrt2, MaxPValue: 0.01, AlphaDecreasing: 0.7, Alpha: 1}
	if got := (Config{}).WithDefaults(); got != want {
		t.Errorf("Config{}.WithDefaults() = %+v; want %+v", got, want)
	}
	if got := DefaultConfig(); got != want {
		t.Errorf("DefaultConfig() = %+v; want %+v", got, want)
	}
	var zero Config
	if err := zero.Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	set := Config{Threshold: 13, Alpha: 0.5}.WithDefaults()
	if set.Threshold != 13 || set.Alpha != 0.5 || set.MinPoints != 4 {
		t.Errorf("WithDefaults changed set fields: %+v", set)
	}
	bad := Config{MinPoints: 3, TrendLevel: 2, Alpha: -1}
	err := bad.Validate()
	for _, field := range []string{"MinPoints", "TrendLevel", "Alpha"} {
		if err == nil || !strings.Contains(err.Error(), "windows: invalid config: "+field) {
			t.Errorf("Validate = %v; want an error naming %s", err, field)
		}
	}
}

// TestFitsMatchBatch checks the O(1) running sums against the direct
// formulas of §3.2 (β̃, η̃, λ̌) and §3.3–3.4 (least-squares Duane slope).
func TestFitsMatchBatch(t *testing.T) {
	xs := []float64{3, 7, 8, 15, 16, 22, 30, 31, 40, 52}
	var w win
	for _, x := range xs {
		w.add(x)
	}
	n := float64(len(xs))
	xn := xs[len(xs)-1]
	sumLn := 0.0
	for _, x := range xs {
		sumLn += math.Log(xn / x)
	}
	beta := (n - 2) / sumLn
	eta := xn / math.Pow(n, 1/beta)
	lam := (n - 3) * n / (n - 2) * beta * math.Pow(20, beta-1) / math.Pow(xn, beta)
	// Duane: regress log(x_i/i) on log x_i
	var sx, sy, sxx, sxy float64
	for i, x := range xs {
		X, Y := math.Log(x), math.Log(x/float64(i+1))
		sx, sy, sxx, sxy = sx+X, sy+Y, sxx+X*X, sxy+X*Y
	}
	gamma := (sxy - sx*sy/n) / (sxx - sx*sx/n)
	logAlpha := sy/n - gamma*sx/n

	gb, ge, ok := w.weibull()
	gl, _ := w.weibullRate(20)
	gg, gla, ok2 := w.duane()
	if !ok || !ok2 {
		t.Fatal("fits undefined")
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"beta", gb, beta}, {"eta", ge, eta}, {"lambda", gl, lam}, {"gamma", gg, gamma}, {"logAlpha", gla, logAlpha}} {
		if math.Abs(c.got-c.want) > 1e-5*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %.8g, want %.8g", c.name, c.got, c.want)
		}
	}
	if r, _ := w.intuitiveRate(52); math.Abs(r-10.0/52) > 1e-12 {
		t.Errorf("intuitive = %v", r)
	}
}

func TestSumLog2(t *testing.T) {
	for _, k := range []uint32{1, 2, 10, 64, 65, 100, 1000, 100000} {
		want := 0.0
		for i := uint32(1); i <= k; i++ {
			l := math.Log(float64(i))
			want += l * l
		}
		if got := sumLog2(k); math.Abs(got-want) > 1e-7*math.Max(1, want) {
			t.Errorf("k=%d: %v want %v", k, got, want)
		}
	}
}

// TestTrendTestLevel checks the Crow-AMSAA classification: on homogeneous
// Poisson windows of 30 points it must call about TrendLevel = 5 % of them
// trending (binomial s.e. with 4000 windows: 0.34 %), and it must call
// power-law windows with β = 2 and β = 0.5 increasing and decreasing.
func TestTrendTestLevel(t *testing.T) {
	cfg := DefaultConfig()
	count := func(beta float64) (inc, dec int) {
		for o := 0; o < 4000; o++ {
			pts, _ := weibullProcess(newRand(uint64(o)), 0, []segment{{beta, 1, 30}})
			var w win
			for _, p := range pts {
				w.add(p)
			}
			switch w.state(&cfg) {
			case Increasing:
				inc++
			case Decreasing:
				dec++
			}
		}
		return
	}
	inc, dec := count(1)
	if f := float64(inc+dec) / 4000; math.Abs(f-0.05) > 0.015 {
		t.Errorf("homogeneous windows called trending: %.2f%%", 100*f)
	}
	if inc, _ := count(2); inc < 3800 {
		t.Errorf("β=2: %d of 4000 increasing", inc)
	}
	if _, dec := count(0.5); dec < 3800 {
		t.Errorf("β=0.5: %d of 4000 decreasing", dec)
	}
}

// TestVisitMidpoint checks §1.2 existence-of-change: a change seen at a visit
// becomes the update point at the middle of the visit interval.
func TestVisitMidpoint(t *testing.T) {
	cfg := DefaultConfig()
	var a, b Segmenter
	a.Visit(1000, false, &cfg) // origin
	b.Event(1000, &cfg)
	visits := []struct {
		t       float64
		changed bool
	}{{1100, true}, {1200, false}, {1300, true}, {1400, true}, {1500, false}, {1600, true}, {1700, true}}
	prev := 1000.0
	for _, v := range visits {
		a.Visit(v.t, v.changed, &cfg)
		if v.changed {
			b.Event((prev+v.t)/2, &cfg)
		}
		prev = v.t
	}
	sa, sb := a.Current(2000, &cfg), b.Current(2000, &cfg)
	if sa != sb || sa.Points != 5 {
		t.Errorf("visit stream %+v\nevent stream %+v", sa, sb)
	}
	// duplicates and time going backwards are ignored
	a.Visit(1650, true, &cfg)
	a.Event(1650, &cfg)
	if got := a.Current(2000, &cfg); got != sa {
		t.Errorf("out-of-order input changed the stream: %+v", got)
	}
}

func TestCurrentEmptyAndForming(t *testing.T) {
	cfg := DefaultConfig()
	var s Segmenter
	if got := s.Current(5, &cfg); got.State != Forming || got.HasRate || got.Points != 0 {
		t.Errorf("empty: %+v", got)
	}
	for _, x := range []float64{0, 10, 20, 30} {
		s.Event(x, &cfg)
	}
	got := s.Current(30, &cfg)
	if got.State != Forming || !got.HasRate || got.Model != "intuitive" || got.Rate != 0.1 || got.HasWeibull {
		t.Errorf("forming: %+v", got)
	}
	if want := 30 + 1/0.1; got.NextUpdate != want {
		t.Errorf("next = %v, want %v", got.NextUpdate, want)
	}
	for _, st := range []State{Forming, Constant, Increasing, Decreasing, 9} {
		if st.String() == "" {
			t.Error("empty state name")
		}
	}
}

// TestNoAllocs checks the 0 allocs/op contract of Event, Visit and Current.
func TestNoAllocs(t *testing.T) {
	cfg := DefaultConfig()
	r := newRand(3)
	var s Segmenter
	tm := 1.7e9
	s.Event(tm, &cfg)
	if n := testing.AllocsPerRun(2000, func() {
		tm += r.ExpFloat64() * 3600
		s.Event(tm, &cfg)
		s.Visit(tm+1, r.IntN(2) == 0, &cfg)
		_ = s.Current(tm+2, &cfg)
	}); n != 0 {
		t.Errorf("%v allocs per update", n)
	}
}

// TestRateBoundedAfterBurst: an increasing window evaluated long after its
// last point does not publish the power-law extrapolation (it grows as
// t^(β−1) without bound) but a rate within MaxRateRatio of N(t)/t.
func TestRateBoundedAfterBurst(t *testing.T) {
	cfg := DefaultConfig()
	var s Segmenter
	// N(t) ∝ t³ over the window: a clearly increasing rate.
	for i := 1; i <= 30; i++ {
		s.Event(1e6+1000*math.Cbrt(float64(i)), &cfg)
	}
	last := 1e6 + 1000*math.Cbrt(30)
	for _, mult := range []float64{1, 2, 10, 100} {
		asOf := 1e6 + (last-1e6)*mult
		sum := s.Current(asOf, &cfg)
		if !sum.HasRate || sum.State != Increasing {
			t.Fatalf("mult %g: %+v", mult, sum)
		}
		intuitive := float64(sum.Points) / (asOf - sum.Start)
		if r := sum.Rate / intuitive; r > 10 || r < 0.1 { // MaxRateRatio
			t.Errorf("mult %g: rate %g (%s) is %g times the intuitive rate", mult, sum.Rate, sum.Model, r)
		}
	}
}
