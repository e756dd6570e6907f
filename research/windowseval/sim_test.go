package windowseval

import (
	"math"
	"math/rand/v2"

	"github.com/changerate/changerate/windows"
)

// Simulation helpers of the evaluation tests, as windows' own tests have
// them (windows/sim_test.go): PCG generators with fixed seeds, so every
// number is reproducible and the same as when these tests were in
// windows.

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x77bb3ad485b7ef83)) }

// poissonTimes returns n arrival times of a homogeneous Poisson process of
// rate lambda starting after t0.
func poissonTimes(r *rand.Rand, t0, lambda float64, n int) []float64 {
	ts := make([]float64, n)
	t := t0
	for i := range ts {
		t += r.ExpFloat64() / lambda
		ts[i] = t
	}
	return ts
}

// segment is one piece of a piecewise Weibull (power-law) process: n points
// with cumulative intensity Λ(x) = (x/eta)^beta in local time x from the
// segment's origin (the last point of the previous segment).
type segment struct {
	beta, eta float64
	n         int
}

// weibullProcess generates the points of consecutive power-law segments
// starting at t0: x_i = eta·E_i^{1/beta}, E_i the arrival times of a unit
// Poisson process. It returns the points and the index of each segment's
// first point.
func weibullProcess(r *rand.Rand, t0 float64, segs []segment) (pts []float64, starts []int) {
	origin := t0
	for _, sg := range segs {
		starts = append(starts, len(pts))
		e := 0.0
		var x float64
		for i := 0; i < sg.n; i++ {
			e += r.ExpFloat64()
			x = sg.eta * math.Pow(e, 1/sg.beta)
			pts = append(pts, origin+x)
		}
		origin += x
	}
	return pts, starts
}

// modelNames are the window estimators in the order of
// windows.RetrospectiveMSE's errors (windows.Models), and the model*
// indices into it.
var (
	modelNames                               = windows.Models()
	modelIntuitive, modelWeibull, modelDuane = modelIndex("intuitive"), modelIndex("weibull"), modelIndex("duane")
)

func modelIndex(name string) int {
	for i, n := range modelNames {
		if n == name {
			return i
		}
	}
	panic("windows.Models() lacks " + name)
}
