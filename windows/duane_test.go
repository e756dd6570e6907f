package windows

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDuanePlot: the plot of a window that was never cut has the exact
// least-squares line of ln(t_i/i) on ln t_i (001 §3.3–3.4) through the
// points' mean, and its last point, within the float32 state's precision.
func TestDuanePlot(t *testing.T) {
	cfg := DefaultConfig()
	r := rand.New(rand.NewPCG(4, 4))
	var s Segmenter
	origin := 1.7e9
	s.Event(origin, &cfg)
	var x []float64 // local times of the points
	tt := origin
	for len(x) < 40 {
		tt += r.ExpFloat64() * 3600 // homogeneous: no shift expected
		if _, shift := s.Event(tt, &cfg); shift {
			t.Fatal("a homogeneous stream was cut: choose another seed")
		}
		x = append(x, tt-origin)
	}
	p := s.Duane()
	if !p.HasFit || p.Points != int64(len(x)) || p.Origin != origin {
		t.Fatalf("plot %+v for %d points", p, len(x))
	}
	// Exact regression in float64.
	n := float64(len(x))
	var mx, my float64
	for i, v := range x {
		mx += math.Log(v) / n
		my += math.Log(v/float64(i+1)) / n
	}
	var sxx, sxy float64
	for i, v := range x {
		dx := math.Log(v) - mx
		sxx += dx * dx
		sxy += dx * (math.Log(v/float64(i+1)) - my)
	}
	slope := sxy / sxx
	logAlpha := my - slope*mx
	const tol = 1e-3 // the state keeps float32 sums
	if math.Abs(p.Slope-slope) > tol || math.Abs(p.LogAlpha-logAlpha) > tol*math.Abs(logAlpha) {
		t.Errorf("slope %g ln α %g, exact %g %g", p.Slope, p.LogAlpha, slope, logAlpha)
	}
	if math.Abs(p.MeanLogT-mx) > tol || math.Abs((p.MeanLogT-p.MeanLogI)-my) > tol {
		t.Errorf("centroid (%g, %g), exact (%g, %g)", p.MeanLogT, p.MeanLogT-p.MeanLogI, mx, my)
	}
	if sd := math.Sqrt(sxx / n); math.Abs(p.SDLogT-sd) > tol*sd {
		t.Errorf("sd of ln t %g, exact %g", p.SDLogT, sd)
	}
	if last := x[len(x)-1]; math.Abs(p.Last-last) > 1e-6*last {
		t.Errorf("last point %g, exact %g", p.Last, last)
	}
}
