package estimators

import "math"

// Machine names of the estimators; they are the keys of every output.
const (
	KeyNaive            = "naive"
	KeyCGMImproved      = "cgm_improved"
	KeyBayesBeta        = "bayes_beta"
	KeyCGMIrregularMLE  = "cgm_irregular_mle"
	KeyCGMLastMod       = "cgm_lastmod"
	KeyMatloffCount     = "matloff_count"
	KeyMatloffLastMod   = "matloff_lastmod"
	KeyMatloffMax       = "matloff_max"
	KeyMatloffKernel    = "matloff_kernel"
	KeyMalcolmLastMod   = "malcolm_lastmod"
	KeyMalcolmNoLastMod = "malcolm_nolastmod"
	KeyPoissonEvents    = "poisson_events"
)

// Estimate is one estimator's result. Rate is in events per second and is
// always finite and ≥ 0. When HasCI is true, [Lo, Hi] is a two-sided
// confidence (or, for bayes_beta, credible) interval at Config.Level
// (default 95%) with 0 ≤ Lo ≤ Hi < +Inf; the method for each key is
// documented in the package doc. When HasCI is false, Lo and Hi are 0.
type Estimate struct {
	Key    string
	Rate   float64
	Lo, Hi float64
	HasCI  bool
}

// MaxEstimates is the capacity of Estimates: more than the number of keys.
const MaxEstimates = 16

// Estimates is a fixed-capacity list of estimates, filled without
// allocation (after its first use, which allocates the memo of interval
// quantiles that makes a reused Estimates faster). The zero value is empty
// and ready to use. Not safe for concurrent use.
type Estimates struct {
	n int
	e [MaxEstimates]Estimate
	// memo remembers the interval quantiles of recent estimates computed
	// into this list (allocated on first use; shared by copies of the
	// value, which therefore must not be used concurrently either).
	memo *quantileMemo
}

// quantiles returns e's quantile memo, nil for a nil e.
func (e *Estimates) quantiles() *quantileMemo {
	if e == nil {
		return nil
	}
	if e.memo == nil {
		e.memo = new(quantileMemo)
	}
	return e.memo
}

// Reset empties the list.
func (e *Estimates) Reset() { e.n = 0 }

// Len is the number of estimates in the list.
func (e *Estimates) Len() int { return e.n }

// At returns the i-th estimate, 0 ≤ i < Len(); it panics otherwise.
func (e *Estimates) At(i int) Estimate {
	if i < 0 || i >= e.n {
		panic("estimators: Estimates index out of range")
	}
	return e.e[i]
}

// Get returns the estimate with the given key, if present.
func (e *Estimates) Get(key string) (Estimate, bool) {
	for i := 0; i < e.n; i++ {
		if e.e[i].Key == key {
			return e.e[i], true
		}
	}
	return Estimate{}, false
}

// sane enforces the Estimate contract on a computed estimate: a rate that
// is not finite and ≥ 0 makes the estimator undefined; an interval that is
// not finite or does not contain the rate (possible only for states far
// outside the models' range, e.g. decoded from crafted bytes) is dropped.
func sane(x Estimate, ok bool) (Estimate, bool) {
	if !ok || !(x.Rate >= 0) || math.IsInf(x.Rate, 1) {
		return Estimate{}, false
	}
	if x.HasCI && !(x.Lo >= 0 && x.Lo <= x.Rate*(1+1e-12) && x.Rate <= x.Hi*(1+1e-12) && !math.IsInf(x.Hi, 1)) {
		x.Lo, x.Hi, x.HasCI = 0, 0, false
	}
	if !x.HasCI {
		x.Lo, x.Hi = 0, 0
	}
	return x, true
}

// add appends x after sane; estimates beyond the capacity are dropped
// (cannot happen with the keys of this package).
func (e *Estimates) add(x Estimate) {
	x, ok := sane(x, true)
	if e == nil || !ok || e.n >= MaxEstimates {
		return
	}
	e.e[e.n] = x
	e.n++
}
