package estimators

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// TestQuantilesAgainstGonum checks the direct Gamma and Beta quantiles of
// the intervals against gonum's general inverses over the shapes the
// estimators meet: within 1e-9 relative (the published numbers may move by
// at most 1e-6). gonum's
// inverses are themselves accurate to about 4e-10 in the tails (e.g.
// InvRegIncBeta(501, 1, 1e-6) against the closed form p^{1/a}; mpmath at 40
// digits agrees with the direct solution where they differ).
func TestQuantilesAgainstGonum(t *testing.T) {
	const tol = 1e-9
	ps := []float64{0.025, 0.975, 0.005, 0.995, 0.05, 0.5, 0.9, 1e-6}
	var shapes []float64
	for a := 1.0; a < 3000; a = math.Ceil(a * 1.3) {
		shapes = append(shapes, a)
	}
	shapes = append(shapes, 2, 3, 4, 5, 100000)
	worst := 0.0
	for _, a := range shapes {
		for _, p := range ps {
			got := gammaQuantile(a, p, 1-p)
			want := mathext.GammaIncRegCompInv(a, 1-p)
			if d := math.Abs(got-want) / want; d > tol || math.IsNaN(d) {
				t.Errorf("gammaQuantile(%g, %g) = %.17g, gonum %.17g (relative %.3g)", a, p, got, want, d)
			} else if d > worst {
				worst = d
			}
		}
	}
	for _, n := range []float64{1, 2, 3, 5, 10, 30, 100, 500, 2000, 20000} {
		for _, x := range []float64{0, 1, 2, 3, n / 10, n / 3, n / 2, n - 3, n - 2, n - 1, n} {
			x = math.Floor(x)
			if x < 0 || x > n {
				continue
			}
			for _, ab := range [][2]float64{{x, n - x + 1}, {x + 1, n - x}, {x + 1, n - x + 1}} {
				a, b := ab[0], ab[1]
				if a < 1 || b < 1 {
					continue
				}
				for _, p := range ps {
					got := betaQuantile(a, b, p)
					want := mathext.InvRegIncBeta(a, b, p)
					// Compare θ and 1−θ (the rate is −log(1−θ)).
					d := math.Max(math.Abs(got-want)/want, math.Abs(got-want)/(1-want))
					if d > tol || math.IsNaN(d) {
						t.Errorf("betaQuantile(%g, %g, %g) = %.17g, gonum %.17g (relative %.3g)", a, b, p, got, want, d)
					} else if d > worst {
						worst = d
					}
				}
			}
		}
	}
	t.Logf("largest relative difference %.3g", worst)
}

func BenchmarkGarwood(b *testing.B) {
	for b.Loop() {
		garwood(100, 0.025, 0.975, nil)
	}
}

func BenchmarkClopperPearson(b *testing.B) {
	for b.Loop() {
		clopperPearson(500, 100, 0.025, 0.975, nil)
	}
}

// TestNextVisitFrom checks that NextVisitFrom with Estimate's best gives
// NextVisit's result exactly, under both schedules, on random states.
func TestNextVisitFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 13))
	for _, sched := range []string{ScheduleMalcolm, ScheduleCGM} {
		cfg := DefaultConfig()
		cfg.Schedule = sched
		var out Estimates
		for i := 0; i < 300; i++ {
			c := randomChange(rng, 1+rng.IntN(400), 1+rng.IntN(150), i%2 == 0)
			best, ok := c.Estimate(c.latest(), &cfg, &out)
			want, wok := c.NextVisit(c.latest(), &cfg)
			got, gok := c.NextVisitFrom(c.latest(), &cfg, best, ok)
			if got != want || gok != wok {
				t.Fatalf("%s state %d: NextVisitFrom %v %v, NextVisit %v %v", sched, i, got, gok, want, wok)
			}
		}
	}
}

// BenchmarkChangeEstimateNoMemo is BenchmarkChangeEstimate without the
// quantile memo: every interval solved again (the cost of an estimate whose
// counts the memo has not seen).
func BenchmarkChangeEstimateNoMemo(b *testing.B) {
	c, cfg := benchChange(b)
	var out Estimates
	b.ReportAllocs()
	for b.Loop() {
		c.estimate(cfg, c.latest(), &out, nil, nil)
	}
}

// TestEstimateBestReusesCandidates checks that the best estimate Estimate
// picks from the estimators it published (the memo's results, reused by the
// best-estimate rule) is the one the rule computes on its own (out == nil,
// no memo), interval included, on random states with and without
// Last-Modified.
func TestEstimateBestReusesCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 29))
	cfg := DefaultConfig()
	var out Estimates
	for i := 0; i < 1200; i++ {
		c := randomChange(rng, 1+rng.IntN(400), 1+rng.IntN(150), i%2 == 0)
		if i%4 >= 2 {
			c = regularChange(rng, 1+rng.IntN(60), i%4 == 3)
		}
		got, gok := c.Estimate(c.latest(), &cfg, &out)
		want, wok := c.Estimate(c.latest(), &cfg, nil)
		if got != want || gok != wok {
			t.Fatalf("state %d: Estimate with the list %+v %v, without %+v %v", i, got, gok, want, wok)
		}
	}
}

// regularChange is an object visited daily (the small-count rule's
// regime) that changed at about one visit in eight, with Last-Modified if
// lm.
func regularChange(rng *rand.Rand, visits int, lm bool) Change {
	var c Change
	tm := 1.7e9
	for i := 0; i < visits; i++ {
		tm += 86400
		v := Visit{Time: tm, Changed: rng.IntN(8) == 0}
		if lm {
			v.LastModified, v.HasLastModified = tm-rng.Float64()*86400*float64(1+rng.IntN(20)), true
		}
		c.Visit(v)
	}
	return c
}
