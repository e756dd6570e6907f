package estimators

// Access is the O(1) state of the access-rate estimators of one object:
// direct data (every access time) and Matloff's indirect data (snapshots
// of the last access time). The zero value is ready to use. Updates never
// allocate. Not safe for concurrent use.
type Access struct {
	n     int64 // accesses
	first int64 // earliest access time, ms
	last  int64 // latest access time, ms
	mat   matloffState
}

// Access records one access at time t (seconds, rounded to whole
// milliseconds). Accesses may arrive out of order; only the count and the
// earliest and latest times are kept. Times outside ±MaxTime (or NaN) are
// ignored.
func (a *Access) Access(ts float64) {
	if !validTime(ts) {
		return
	}
	t := millis(ts)
	if a.n == 0 {
		a.n, a.first, a.last = 1, t, t
		return
	}
	a.n++
	if t < a.first {
		a.first = t
	}
	if t > a.last {
		a.last = t
	}
}

// Snapshot records a last-access-time snapshot (Matloff indirect data).
func (a *Access) Snapshot(s Snapshot) { a.mat.add(s) }

// Accesses is the number of recorded accesses.
func (a *Access) Accesses() int64 { return a.n }

// Snapshots is the number of accepted snapshots.
func (a *Access) Snapshots() int64 { return a.mat.n }

// Estimate fills out (Reset first; nil allowed) and returns the best
// estimate. Direct data: "naive" = (N−1)/(t − first) where N−1 accesses
// follow the first one in (first, t], t = max(asOf, latest access), with
// the exact Poisson (Garwood) interval: with a complete history, the count
// over the exposure is the MLE of a Poisson rate (CGM §2). Indirect data:
// matloff_count, matloff_lastmod, matloff_max, matloff_kernel. Best:
// naive when at least cfg.MinIntervals accesses follow the first, else
// matloff_max when at least cfg.MinIntervals periods were seen. It does
// not allocate.
func (a *Access) Estimate(asOf float64, cfg *Config, out *Estimates) (best Estimate, ok bool) {
	var local Estimates
	mq := out.quantiles()
	if out == nil {
		out = &local
	}
	out.Reset()
	var naive Estimate
	haveNaive := false
	if a.n > 0 {
		end := seconds(a.last)
		if finite(asOf) && asOf > end {
			end = asOf
		}
		if T := end - seconds(a.first); T > 0 {
			pLo, pHi := cfg.tails()
			k := float64(a.n - 1)
			lo, hi := garwood(k, pLo, pHi, mq)
			naive = Estimate{Key: KeyNaive, Rate: k / T, Lo: lo / T, Hi: hi / T, HasCI: true}
			haveNaive = true
			out.add(naive)
		}
	}
	mat, matOK := a.mat.estimates(cfg, out)
	minN := int64(cfg.MinIntervals)
	switch {
	case haveNaive && a.n-1 >= minN:
		return sane(naive, true)
	case matOK && a.mat.n >= minN:
		return sane(mat, true)
	}
	return Estimate{}, false
}
