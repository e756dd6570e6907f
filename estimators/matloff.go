package estimators

import "math"

// KernelFraction is h/τ of the kernel estimator b̂(0) = #(0,h)/(nh)
// (Matloff eq. 27). Matloff leaves h to the user; under a Poisson process
// the estimator's relative bias is about −λh/2 and its relative standard
// error 1/sqrt(nλh), and h = τ/10 keeps the bias at 5% for λτ = 1. It is a
// constant because the count #(0,h) is accumulated per snapshot.
const KernelFraction = 0.1

// Snapshot is one poll of an object's last event (modification or access)
// time at the end of a period of length Period (τ, seconds): LastEvent is
// the time of the last event in (Time−Period, Time], and HasEvent says
// whether there was one. A LastEvent at or before Time−Period means the
// period was empty (a source that reports the absolute last-event time
// needs no filtering); a LastEvent after Time (clock skew) is taken as
// Time. Snapshots with a non-positive or non-finite Period or Time are
// ignored. Matloff assumes a constant τ; with varying periods the
// estimators use the mean period τ̄ and W_i/τ_i.
type Snapshot struct {
	Time      float64
	Period    float64
	LastEvent float64
	HasEvent  bool
}

// matloffState is the O(1) state of Matloff's indirect-data estimators.
type matloffState struct {
	n      int64   // periods observed
	m      int64   // non-empty periods (M_n)
	kern   int64   // #(0,h): periods whose backward recurrence time Z < h = KernelFraction·τ
	sumTau float64 // Σ τ_i
	sumU   float64 // Σ W_i/τ_i over non-empty periods
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// MaxTime bounds the magnitude of accepted times and durations (seconds,
// about 317,000 years), so that no sum of squares or count product in the
// state can overflow.
const MaxTime = 1e13

// validTime reports whether |t| < MaxTime (false for NaN).
func validTime(t float64) bool { return t > -MaxTime && t < MaxTime }

func (s *matloffState) add(p Snapshot) {
	if !(p.Period > 0 && p.Period < MaxTime) || !validTime(p.Time) {
		return
	}
	s.n++
	s.sumTau += p.Period
	if !p.HasEvent || !validTime(p.LastEvent) {
		return
	}
	start := p.Time - p.Period
	if p.LastEvent <= start {
		return // the last event precedes the period: empty period
	}
	w := p.LastEvent - start
	if w > p.Period {
		w = p.Period
	}
	s.m++
	s.sumU += w / p.Period
	if p.Period-w < KernelFraction*p.Period {
		s.kern++
	}
}

// estimates adds matloff_count, matloff_lastmod, matloff_max and
// matloff_kernel to out (those that are defined) and returns the best of
// them for snapshot data: matloff_count when it is defined and λ̌τ < 3,
// otherwise matloff_lastmod, otherwise whichever is defined. Matloff §6.1
// finds λ̌ more accurate for small λτ and λ̂ for large λτ, with the
// crossover near λτ ≈ 3 (Fig. 2, reproduced by research/cmd/eval at 2.9); on the
// real NASA trace (docs/eval/REPORT.md) this rule is the best or close to
// the best at every τ, whereas max(λ̌, λ̂) (§6.2, §8, still published as
// matloff_max) over-estimates badly at small τ.
func (s *matloffState) estimates(cfg *Config, out *Estimates) (best Estimate, ok bool) {
	if s.n == 0 {
		return Estimate{}, false
	}
	z := cfg.z()
	pLo, pHi := cfg.tails()
	tau := s.sumTau / float64(s.n)

	// §3.1, eq. 3 and eq. 14: Wald interval λ̌ ± z·SE, clipped at 0; no
	// interval when M = 0 (SE = 0).
	cnt, cntSE, cntOK := MatloffCount(s.n, s.m, tau)
	var cEst Estimate
	if cntOK {
		cEst = Estimate{Key: KeyMatloffCount, Rate: cnt}
		if s.m > 0 {
			cEst.Lo, cEst.Hi, cEst.HasCI = math.Max(0, cnt-z*cntSE), cnt+z*cntSE, true
		}
		out.add(cEst)
	}

	// §3.2, eq. 5–6 and eq. 15: conditional MLE with a Wald interval.
	var lEst Estimate
	lOK := false
	if s.m > 0 {
		wbar := tau * s.sumU / float64(s.m)
		if l, ok := MatloffSolve(wbar, tau); ok {
			se := MatloffLastModSE(l, tau, s.m)
			lEst = Estimate{Key: KeyMatloffLastMod, Rate: l, Lo: math.Max(0, l-z*se), Hi: l + z*se, HasCI: true}
			lOK = true
			out.add(lEst)
		}
	}

	// §6.2, §8: max(λ̌, λ̂) over those defined, with the chosen one's CI.
	var mx Estimate
	switch {
	case cntOK && lOK:
		mx = cEst
		if lEst.Rate > cEst.Rate {
			mx = lEst
		}
	case cntOK:
		mx = cEst
	case lOK:
		mx = lEst
	}
	mxOK := cntOK || lOK
	if mxOK {
		mx.Key = KeyMatloffMax
		out.add(mx)
	}
	switch {
	case cntOK && cnt*tau < MatloffCrossover:
		best = cEst
	case lOK:
		best = lEst
	case cntOK:
		best = cEst
	}

	// §5.4.1, eq. 27: b̂(0) = #(0,h)/(nh) with h = KernelFraction·τ; exact
	// Poisson (Garwood) interval for the count #(0,h) over n·h.
	nh := KernelFraction * s.sumTau
	k := float64(s.kern)
	lo, hi := garwood(k, pLo, pHi, out.quantiles())
	out.add(Estimate{Key: KeyMatloffKernel, Rate: k / nh, Lo: lo / nh, Hi: hi / nh, HasCI: true})

	return best, mxOK
}

// MatloffCrossover is the value of λτ below which the count estimator λ̌ is
// preferred to the conditional MLE λ̂ as the best snapshot estimate
// (Matloff §6.1, Fig. 2).
const MatloffCrossover = 3.0
