package estimators

import "math"

// Cache lifetimes from the age since the last change: beyond the papers
// (issue 33).
//
// Caches without a change rate (Squid's refresh_pattern, RFC 9111 §4.2.2)
// give a copy a lifetime that is a share of its age since Last-Modified,
// Squid's at most a maximum (3 days by default): short right after an
// edit, long — up to the cap — for an object unchanged for years. A Poisson
// rate ignores that age. The model under which the age is the right
// statistic is a renewal process whose hazard falls with the time since
// the last change towards a floor: edits come in bursts, and an object
// quiet for years still changes now and then. Here the time to the next
// change is the first of two independent causes,
//
//   - a background Poisson process of rate λ₀, and
//   - a burst: an exponential time whose rate is drawn, for every interval
//     afresh, from Gamma(α, β) (shape α, rate β in seconds), i.e. a Lomax
//     (Pareto II) time with survival (1 + t/β)^{−α} and hazard α/(β + t);
//
// so an interval survives t with probability
//
//	S(t) = e^{−λ₀t}·(1 + t/β)^{−α}                                   (A1)
//
// and hazard λ₀ + α/(β + t). A copy fetched at age a (seconds since its
// Last-Modified) goes stale within a lifetime L with probability
//
//	P(L | a) = 1 − S(a + L)/S(a) = 1 − e^{−λ₀L}·((β + a)/(β + a + L))^α   (A2)
//
// and the lifetime with staleness probability p solves
//
//	λ₀L + α·ln(1 + L/(β + a)) = −ln(1 − p)                           (A3)
//
// whose left side increases in L and falls in a: L(a) grows with the age,
// about (β + a)((1 − p)^{−1/α} − 1) while the burst dominates (a share of
// the age plus a constant: RFC 9111's rule, the share derived), and never
// beyond −ln(1 − p)/λ₀, the Poisson lifetime of the background rate, which
// it approaches for old copies (Squid's cap, derived). With α = 0 (no
// bursts) (A3) is TTL's Poisson lifetime; with λ₀ = 0 it is the Lomax
// lifetime, proportional to β + a.

// BurstModel is (A1)'s renewal model: Base is λ₀ (per second), Shape α and
// Scale β (seconds) the burst's Gamma rate law. Base = 0 or Shape = 0
// removes that cause.
type BurstModel struct {
	Base, Shape, Scale float64
}

// valid reports whether m is a usable model.
func (m BurstModel) valid() bool {
	return m.Base >= 0 && m.Shape >= 0 && !math.IsInf(m.Base, 1) && !math.IsInf(m.Shape, 1) &&
		(m.Base > 0 || m.Shape > 0) && (m.Shape == 0 || posFinite(m.Scale))
}

// Survival is (A1)'s S(t): the probability that an interval between
// changes lasts more than t seconds (1 for t ≤ 0).
func (m BurstModel) Survival(t float64) float64 {
	if !(t > 0) {
		return 1
	}
	return math.Exp(-m.logSurvival(t))
}

// logSurvival is −ln S(t) = λ₀t + α·ln(1 + t/β).
func (m BurstModel) logSurvival(t float64) float64 {
	v := m.Base * t
	if m.Shape > 0 {
		v += m.Shape * math.Log1p(t/m.Scale)
	}
	return v
}

// StaleProb is (A2): the probability that a copy fetched at age a changes
// within a lifetime of l seconds.
func (m BurstModel) StaleProb(age, l float64) float64 {
	age = math.Max(age, 0)
	if !(l > 0) {
		return 0
	}
	c := m.Scale + age
	v := m.Base * l
	if m.Shape > 0 {
		v += m.Shape * math.Log1p(l/c)
	}
	return -math.Expm1(-v)
}

// TTL returns (A3)'s lifetime (seconds) of a copy fetched at age age
// (seconds since its Last-Modified; < 0 counts as 0) within which it
// changes with probability pStale. ok is false for an invalid model or
// pStale ∉ (0, 1). The left side of (A3) is concave and increasing in L,
// so Newton's iteration from L = 0 rises monotonically to the root.
func (m BurstModel) TTL(age, pStale float64) (seconds float64, ok bool) {
	if !m.valid() || !(pStale > 0 && pStale < 1) || math.IsNaN(age) || math.IsInf(age, 0) {
		return 0, false
	}
	q := -math.Log1p(-pStale)
	c := m.Scale + math.Max(age, 0)
	if m.Shape == 0 {
		return q / m.Base, true
	}
	l := 0.0
	for i := 0; i < 200; i++ {
		f := m.Base*l + m.Shape*math.Log1p(l/c) - q
		d := m.Base + m.Shape/(c+l)
		nl := l - f/d
		if !(nl > l) || nl-l <= 1e-13*nl {
			l = math.Max(l, nl)
			break
		}
		l = nl
	}
	return l, posFinite(l)
}

// Interval is one interval between changes as a cache sees it: from one
// Last-Modified to the next one seen, Length seconds (Ended), or from the
// latest Last-Modified to the latest fetch, still running (not Ended:
// right-censored). A cache that fetches less often than the object changes
// misses the changes between two fetches, so its intervals are sums of
// the object's; the fit then sees fewer, longer intervals (a longer
// lifetime than the truth's at the same pStale).
type Interval struct {
	Length float64
	Ended  bool
}

// logLik is Σ_ended ln f(tᵢ) − Σ_censored Λ(tᵢ) with the density
// f(t) = h(t)·S(t), hazard h(t) = λ₀ + α/(β + t) and Λ = −ln S.
func (m BurstModel) logLik(iv []Interval) float64 {
	s := 0.0
	for _, x := range iv {
		t := math.Max(x.Length, 0)
		s -= m.logSurvival(t)
		if x.Ended {
			h := m.Base
			if m.Shape > 0 {
				h += m.Shape / (m.Scale + t)
			}
			s += math.Log(h)
		}
	}
	return s
}

// FitBurst returns the maximum-likelihood BurstModel of the intervals,
// maximised over ln λ₀, ln α and ln β by cyclic golden-section searches
// (to 10⁻⁵ in each) until the log-likelihood gains less than 10⁻⁴ in a
// cycle (at most 60 cycles). The searches span λ₀ from 10⁻¹² to 10⁻³ per
// second, α from 10⁻⁴ to 10³ and β from 1 s to 100 years. ok is false when
// no interval ended (no change seen: the data say nothing of the hazard).
func FitBurst(iv []Interval) (BurstModel, bool) {
	ended := false
	for _, x := range iv {
		ended = ended || x.Ended
	}
	if !ended {
		return BurstModel{}, false
	}
	p := [3]float64{math.Log(1e-8), 0, math.Log(86400)}
	lo := [3]float64{math.Log(1e-12), math.Log(1e-4), 0}
	hi := [3]float64{math.Log(1e-3), math.Log(1e3), math.Log(100 * 365 * 86400.0)}
	model := func(p [3]float64) BurstModel {
		return BurstModel{Base: math.Exp(p[0]), Shape: math.Exp(p[1]), Scale: math.Exp(p[2])}
	}
	best := model(p).logLik(iv)
	for cycle := 0; cycle < 60; cycle++ {
		prev := best
		for k := range p {
			q := p
			p[k] = golden(func(x float64) float64 { q[k] = x; return model(q).logLik(iv) }, lo[k], hi[k])
		}
		best = model(p).logLik(iv)
		if best-prev < 1e-4 {
			break
		}
	}
	return model(p), true
}

// golden maximises f on [lo, hi] by golden-section search to 10⁻⁵.
func golden(f func(float64) float64, lo, hi float64) float64 {
	const r = 0.6180339887498949
	a, b := lo, hi
	c, d := b-r*(b-a), a+r*(b-a)
	fc, fd := f(c), f(d)
	for b-a > 1e-5 {
		if fc > fd {
			b, d, fd = d, c, fc
			c = b - r*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + r*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}
