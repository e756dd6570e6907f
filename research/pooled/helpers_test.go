package pooled

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// mustCfg is the estimators' default configuration, validated.
func mustCfg(t testing.TB) *estimators.Config {
	t.Helper()
	c := estimators.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// gammaDraw and poissonDraw are the estimators tests' samplers
// (estimators/pooled_test.go), so that these tests draw the same numbers
// as they did there.
func gammaDraw(rng *rand.Rand, shape, rate float64) float64 {
	boost := 1.0
	if shape < 1 {
		boost = math.Pow(rng.Float64(), 1/shape)
		shape++
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		if u := rng.Float64(); math.Log(u) < z*z/2+d-d*v+d*math.Log(v) {
			return boost * d * v / rate
		}
	}
}

func poissonDraw(rng *rand.Rand, m float64) float64 {
	n, t := 0.0, rng.ExpFloat64()
	for t < m {
		n++
		t += rng.ExpFloat64()
	}
	return n
}
