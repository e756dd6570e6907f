package windows

import (
	"math"
	"math/rand/v2"
)

// Simulation helpers of the tests (the evaluation, research/windowseval, has
// a copy). All randomness comes from
// PCG generators with fixed seeds, so every number is reproducible.

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x77bb3ad485b7ef83)) }

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
