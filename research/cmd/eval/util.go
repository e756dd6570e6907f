package main

import (
	"math"
	"sort"
	"sync"

	"github.com/changerate/changerate/estimators"
)

// parallel runs f(i) for i in [0, n) on procs goroutines.
func parallel(n, procs int, f func(i int)) {
	if procs < 1 {
		procs = 1
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// regularEstimate feeds the project's Change estimator a baseline visit and
// n regular visits one time unit apart, the first x of them changed, and
// returns the estimate of key (a rate per unit = the frequency ratio r̂).
func regularEstimate(cfg *estimators.Config, n, x int, key string) (float64, bool) {
	var c estimators.Change
	c.Visit(estimators.Visit{Time: 1000})
	for i := 1; i <= n; i++ {
		c.Visit(estimators.Visit{Time: 1000 + float64(i), Changed: i <= x})
	}
	var out estimators.Estimates
	c.Estimate(1000+float64(n), cfg, &out)
	e, ok := out.Get(key)
	return e.Rate, ok
}

// binomPMF returns P(X = k) for X ~ Bin(n, p), k = 0..n.
func binomPMF(n int, p float64) []float64 {
	out := make([]float64, n+1)
	for k := 0; k <= n; k++ {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
		lp := lg(n) - lg(k) - lg(n-k)
		if p > 0 {
			lp += float64(k) * math.Log(p)
		} else if k > 0 {
			continue
		}
		if p < 1 {
			lp += float64(n-k) * math.Log1p(-p)
		} else if k < n {
			continue
		}
		out[k] = math.Exp(lp)
	}
	return out
}

// exactMoments returns E[r̂]/r and σ[r̂]/r of an estimator that depends
// only on the count X ~ Bin(n, 1−e^{−r}), given its values est[k].
func exactMoments(est []float64, n int, r float64) (bias, sd float64) {
	pmf := binomPMF(n, -math.Expm1(-r))
	var m, m2 float64
	for k, p := range pmf {
		m += p * est[k]
		m2 += p * est[k] * est[k]
	}
	v := math.Max(0, m2-m*m)
	return m / r, math.Sqrt(v) / r
}

// moments accumulates a sample mean and variance.
type moments struct{ n, s, s2 float64 }

func (m *moments) add(x float64) { m.n++; m.s += x; m.s2 += x * x }
func (m *moments) mean() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return m.s / m.n
}
func (m *moments) sd() float64 {
	if m.n < 2 {
		return math.NaN()
	}
	mu := m.mean()
	return math.Sqrt(math.Max(0, (m.s2-m.n*mu*mu)/(m.n-1)))
}
func (m *moments) rms(truth float64) float64 {
	// sqrt(E[(x−truth)²])
	if m.n == 0 {
		return math.NaN()
	}
	return math.Sqrt(math.Max(0, m.s2/m.n-2*truth*m.s/m.n+truth*truth))
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if s[lo] == s[hi] || math.IsInf(s[lo], 0) || math.IsInf(s[hi], 0) && pos == float64(lo) {
		return s[lo] // also ±Inf (an estimate of 0 scores ∞)
	}
	if math.IsInf(s[hi], 0) {
		return s[hi]
	}
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func newEstConfig() *estimators.Config {
	c := estimators.DefaultConfig()
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return &c
}

func mathExp(x float64) float64 { return math.Exp(x) }
