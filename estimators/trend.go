package estimators

import (
	"math"
	"time"
)

// A population trend for complete histories: beyond the papers.
//
// A population's objects are edited more in some years than in others
// (php/doc-en: 22,915 file changes in 2007, 1,287 in 2019). An object seen
// to change often years ago and not since keeps, under (E1), its all-time
// rate: on php/doc-en's next year the files with 5+ changes in earlier
// years and none in the training year got 1.35–2.04 times the Poisson
// deviance of one global rate (docs/eval/NEXTYEAR.md, issue 31). The
// model separates the object's own rate from the population's level:
//
//	λ_i(t) = λ_i·g(t),   g(t) = g_k for t in period P_k,                (T1)
//
// λ_i the object's rate at the current level (g(now) = 1: (λ_i, g) and
// (cλ_i, g/c) give the same intensity, so g is fixed at 1 now), g
// piecewise constant over calendar periods. The period is the UTC
// calendar year: the seasonal profiles model the daily and weekly cycle,
// not the yearly one, and a period shorter than a year would carry the
// yearly cycle into g(now) (a December level predicting the next twelve
// months); a year is also the horizon the estimate is judged on (the next
// year's changes). Objects' rates are drawn independently of their
// entry time s_i (λ_i ~ Gamma(α, β), pooled.go): the population's
// composition does not drift with its cohorts.
//
// Period totals. With object i observed from s_i to the as-of time t, its
// exposure in P_k is d_ik = |[s_i, t] ∩ P_k| and its changes there
// N_ik ~ Poisson(λ_i·g_k·d_ik). The population's totals are
//
//	C_k = Σ_i N_ik,   D_k = Σ_i d_ik,   E[C_k] = μ·g_k·D_k,              (T2)
//
// μ = E[λ_i] (λ_i independent of d_ik). The Poisson (quasi-)likelihood
// of the totals, Π_k (μg_k)^{C_k} e^{−μg_k D_k}, is maximal at
//
//	m̂_k = (μg_k)^ = C_k / D_k,                                         (T3)
//
// the population's rate in the period: Breslow's estimator of a baseline
// hazard's increment (changes over the exposure at risk) without
// covariates, with λ_i integrated out (a marginal estimator: it needs
// the totals alone, O(1) per period, not each object's λ̂_i). Its
// relative standard error is about 1/√C_k (Poisson; more when the λ_i
// spread, less than the spread between years in php/doc-en).
//
// The current level. The level that predicts the next period is not the
// current period's (T3) alone: it is open (at its start it has no
// exposure, early in it few changes), and a population's level moves by
// bursts that partly persist (php/doc-en: 1,287 changes in 2019, 9,723
// in 2020, 7,724 in 2021). It is an exponentially weighted rate, the
// changes and exposure at time u weighted by ω^{(t−u)/L} (L one period,
// a mean Gregorian year), each period's totals taken at its centre u_k
// (the current one's at (start + t)/2):
//
//	m̂_now = Σ_k ω^{(t−u_k)/L} C_k / Σ_k ω^{(t−u_k)/L} D_k,              (T4)
//
// over the closed periods and the current one. ω = 1 is the all-time rate
// (a level that does not move), ω → 0 the current period's: early in a
// period its exposure is small and the previous periods carry the level.
// ω is chosen by the loss the estimate is judged by, on the population's
// own history: of ω ∈ {0.05, 0.10, …, 1}, the one whose one-period-ahead
// predictions of the closed periods' changes (each period's C_j by (T4)
// from the periods before it, at its start, times its exposure D_j) have
// the least Poisson deviance (ties: the larger ω). With fewer than three
// closed periods (two predictions) the history cannot tell whether the
// level reverts, and ω = 0.05, the latest periods' level: under (T1) it
// estimates g(now) without the bias a level pooled over years that
// differ carries (the current period's own (T3) is unbiased but has no
// exposure at a period's start; ω^{(t−u)/L} at 0.05 gives the previous
// year about a fifth of the weight per unit of exposure, so early in a
// year the level rests on it). It is chosen when a period
// closes and kept in the state (Trend.Omega). The trend is used only when
// the weighted window holds MinTrendChanges effective changes (Kish's
// (Σw_kC_k)²/Σw_k²C_k, the Poisson count with the relative error of
// (T4)'s numerator: 10 % at 100); otherwise the objects keep (E1).
//
// An object's evidence. Given g (its estimates relative to now,
// r_k = m̂_k/m̂_now; r = 1 for the current period), the likelihood of
// object i's complete history is
//
//	L(λ_i) ∝ λ_i^{N_i} · exp(−λ_i·e_i^g),
//	e_i^g(t) = ∫_{s_i}^{t} g(u) du = Σ_k r_k·|[s_i, t] ∩ P_k|,          (T5)
//
// (E1) with the exposure T replaced by the trend-weighted exposure e^g
// (the changes' times enter through g only, the product over them being
// free of λ_i). Every conjugate rule then applies unchanged with T → e^g,
// and its rate is the current one (g(now) = 1):
//
//	poisson_trend:  λ̂_i = (N_i + ½)/(e_i^g + τ₀), interval (E4) on e^g,  (T6)
//	pooled:         λ̂_i = (α + N_i)/(β·ρ + e_i^g)   (P1 on e^g),          (T7)
//
// The pooled rule (T7) is the posterior mean, the Bayes act for the next
// period's Poisson deviance (pooled.go P1) whatever N, and for a complete
// history the posterior is exactly conjugate: with a trend it is
// published for every complete history of the population, not only below
// PooledMaxChanges changes (the prior's weight fades as N grows; on
// php/doc-en it moved the files quiet in the training year with 5+
// earlier changes from 1.25–1.30 to 1.16–1.20 times a global rate's
// deviance). (T6) serves a population with a trend but no prior. The
// prior's rate is rescaled by ρ, the population's trend-weighted exposure
// over its plain exposure,
//
//	ρ = (Σ_k r_k D_k + D_cur) / (Σ_k D_k + D_cur).                       (T8)
//
// The moment fit of the prior (P2) is scale-equivariant: exposures all
// multiplied by ρ give μ̂/ρ and σ̂²/ρ², hence the same shape α and the rate
// β·ρ. (T8) is exact when every object's e^g is ρ times its e (objects
// with one exposure pattern), a first-order approximation otherwise; the
// prior's mean, α/(βρ) = μ̂/ρ = (Σ_k C_k + C_cur)/(Σ_k C_k/m̂_now +
// D_cur) (closed periods k, r_k D_k = C_k/m̂_now), is the current level
// m̂_now when the current period's own rate C_cur/D_cur is, a mixture of
// both otherwise.
//
// Bounded state. Trend keeps the current period's totals and at most
// MaxTrendPeriods closed periods; when one more closes, the two oldest
// merge (their C and D add: (T3) over their union, one level for both).

// KeyPoissonTrend is the estimate key of (T6).
const KeyPoissonTrend = "poisson_trend"

// MaxTrendPeriods is K, the number of closed periods a Trend keeps
// before merging the oldest: 32 years, the whole history of php/doc-en
// (1999–2026) without merging.
const MaxTrendPeriods = 32

// MinTrendChanges is the least number of changes in the window of (T4)
// with which the trend is used: the level's Poisson relative error
// 1/√C is then at most 10 %.
const MinTrendChanges = 100

// TrendPeriod is one closed period of a Trend: its first calendar year
// (it runs to the next period's first year), its changes C and its
// exposure D (object-seconds).
type TrendPeriod struct {
	Year int32
	C, D float64
}

// Trend holds the population totals (T2) of complete histories: the
// closed periods, oldest first (Periods[:NClosed]), and the open current
// period: its year Year, changes C, the number of objects Objects and the
// sum S of their entry times into it (max(s_i, its start)), so that its
// exposure at t is Objects·t − S. The zero value is empty; its size is
// bounded (MaxTrendPeriods).
type Trend struct {
	Periods [MaxTrendPeriods]TrendPeriod
	NClosed int
	Year    int32
	C       float64
	Objects float64
	S       float64
	// Omega is the discount ω of the level (T4), chosen when a period
	// closes (chooseOmega); used with at least minOmegaPeriods closed
	// periods, 1 before.
	Omega float64
}

// Empty reports whether the trend is the zero value (has seen nothing).
func (tr *Trend) Empty() bool { return *tr == Trend{} }

// yearStart is the start of the UTC calendar year y, in Unix seconds.
func yearStart(y int32) float64 {
	return float64(time.Date(int(y), time.January, 1, 0, 0, 0, 0, time.UTC).Unix())
}

// yearOf is the UTC calendar year of t (Unix seconds).
func yearOf(t float64) int32 {
	return int32(time.Unix(int64(math.Floor(t)), 0).UTC().Year())
}

// periodEnd is the end of closed period i: the next one's start.
func (tr *Trend) periodEnd(i int) float64 {
	if i+1 < tr.NClosed {
		return yearStart(tr.Periods[i+1].Year)
	}
	return yearStart(tr.Year)
}

// advance closes the current period when t (Unix seconds) is in a later
// year: its exposure up to its end is fixed, the years without any event
// in between form one closed period, and every object is carried into
// the new current period from its start.
func (tr *Trend) advance(t float64) {
	y := yearOf(t)
	if tr.Empty() {
		tr.Year = y
		return
	}
	if y <= tr.Year {
		return
	}
	end := yearStart(tr.Year + 1)
	tr.close(TrendPeriod{Year: tr.Year, C: tr.C, D: tr.Objects*end - tr.S})
	if y > tr.Year+1 {
		tr.close(TrendPeriod{Year: tr.Year + 1, D: tr.Objects * (yearStart(y) - end)})
	}
	tr.Year, tr.C, tr.S = y, 0, tr.Objects*yearStart(y)
}

// close appends a closed period, merging the two oldest when K are kept.
func (tr *Trend) close(p TrendPeriod) {
	if tr.NClosed == MaxTrendPeriods {
		a, b := tr.Periods[0], tr.Periods[1]
		tr.Periods[0] = TrendPeriod{Year: a.Year, C: a.C + b.C, D: a.D + b.D}
		copy(tr.Periods[1:], tr.Periods[2:])
		tr.NClosed--
	}
	tr.Periods[tr.NClosed] = p
	tr.NClosed++
	tr.Omega = tr.chooseOmega()
}

// minOmegaPeriods is the least number of closed periods with which ω is
// chosen: two one-period-ahead predictions.
const minOmegaPeriods = 3

// omegaGrid is the number of values of ω tried: 0.05, 0.10, …, 1.
const omegaGrid = 20

// periodYears is L of (T4), the length of one period: a mean
// Gregorian year.
const periodYears = 365.2425 * 86400

// weight is ω^{(t − mid)/L}, the discount of a period centred on mid as
// seen from t (T4).
func weight(omega, t, mid float64) float64 {
	if omega == 1 {
		return 1
	}
	return math.Pow(omega, (t-mid)/periodYears)
}

// mid is the centre of closed period i.
func (tr *Trend) mid(i int) float64 {
	return (yearStart(tr.Periods[i].Year) + tr.periodEnd(i)) / 2
}

// omegaRecent is ω before the population's history can choose it: the
// smallest of the grid, a level from the latest periods (T4).
const omegaRecent = 1.0 / omegaGrid

// chooseOmega is ω of (T4): the value of the grid whose one-period-ahead
// predictions of the closed periods' changes, each from the periods
// before it (the level at the period's start times its exposure), have
// the least Poisson deviance; ties go to the larger ω; omegaRecent with
// fewer than minOmegaPeriods closed periods.
func (tr *Trend) chooseOmega() float64 {
	if tr.NClosed < minOmegaPeriods {
		return omegaRecent
	}
	best, bestDev := 1.0, math.Inf(1)
	for g := omegaGrid; g >= 1; g-- {
		omega := float64(g) / omegaGrid
		dev := 0.0
		for j := 1; j < tr.NClosed; j++ {
			at := yearStart(tr.Periods[j].Year)
			var c, d float64
			for k := 0; k < j; k++ {
				w := weight(omega, at, tr.mid(k))
				c += w * tr.Periods[k].C
				d += w * tr.Periods[k].D
			}
			if !(d > 0) {
				continue
			}
			dev += poissonDeviance(tr.Periods[j].C, c/d*tr.Periods[j].D)
		}
		if dev < bestDev {
			best, bestDev = omega, dev
		}
	}
	return best
}

// poissonDeviance is 2[y log(y/μ) − (y − μ)], +Inf for y > 0 at μ = 0.
func poissonDeviance(y, mu float64) float64 {
	d := mu - y
	if y > 0 {
		if !(mu > 0) {
			return math.Inf(1)
		}
		d += y * math.Log(y/mu)
	}
	return 2 * d
}

// Enter adds an object whose complete history starts at s (its baseline,
// Unix seconds), seen at now (≥ s; the trend's clock). An object entering
// before the current period adds its exposure to the closed periods it
// overlaps (one before all of them extends the oldest back to its year).
func (tr *Trend) Enter(s, now float64) {
	if math.IsNaN(s) || math.IsInf(s, 0) || math.IsNaN(now) || math.IsInf(now, 0) {
		return
	}
	tr.advance(math.Max(s, now))
	cur := yearStart(tr.Year)
	if s < cur {
		if tr.NClosed > 0 && yearOf(s) < tr.Periods[0].Year {
			tr.Periods[0].Year = yearOf(s)
		}
		if tr.NClosed == 0 {
			tr.close(TrendPeriod{Year: yearOf(s)})
		}
		for i := 0; i < tr.NClosed; i++ {
			lo, hi := yearStart(tr.Periods[i].Year), tr.periodEnd(i)
			if d := hi - math.Max(s, lo); d > 0 {
				tr.Periods[i].D += d
			}
		}
	}
	tr.Objects++
	tr.S += math.Max(s, cur)
}

// Change counts n changes at t (Unix seconds): in the period holding t
// (the oldest for one before all of them).
func (tr *Trend) Change(t float64, n float64) {
	if !(n > 0) || math.IsNaN(t) || math.IsInf(t, 0) {
		return
	}
	tr.advance(t)
	if t >= yearStart(tr.Year) || tr.NClosed == 0 {
		tr.C += n
		return
	}
	i := tr.NClosed - 1
	for i > 0 && t < yearStart(tr.Periods[i].Year) {
		i--
	}
	tr.Periods[i].C += n
}

// TrendView is a Trend evaluated at an as-of time t: the levels relative
// to now (r_k of (T5)) and the prior's rescaling ρ (T8). The zero value
// (Ok false) is no trend: exposures are plain.
type TrendView struct {
	Ok    bool
	T     float64 // the as-of time (Unix seconds)
	Rho   float64 // (T8)
	Level float64 // m̂_now of (T4), changes per object-second
	r     [MaxTrendPeriods]float64
	lo    [MaxTrendPeriods + 1]float64 // period starts; lo[n] the current one's
	n     int
}

// At evaluates the trend at t (Unix seconds; at least the current
// period's start, else the current period's start is used): ok is false
// when the window of (T4) holds fewer than MinTrendChanges changes or no
// exposure.
func (tr *Trend) At(t float64) TrendView {
	var v TrendView
	if tr.Empty() {
		return v
	}
	cur := yearStart(tr.Year)
	t = math.Max(t, cur)
	dCur := tr.Objects*t - tr.S
	omega := omegaRecent
	if tr.NClosed >= minOmegaPeriods && tr.Omega > 0 && tr.Omega <= 1 {
		omega = tr.Omega
	}
	// (T4) and the effective number of changes (T4′): Kish's
	// (Σ w C)²/Σ w² C, the Poisson count with the same relative error.
	for i := 0; i < tr.NClosed; i++ {
		v.lo[i] = yearStart(tr.Periods[i].Year)
	}
	v.lo[tr.NClosed] = cur
	w := weight(omega, t, (cur+t)/2)
	cw, dw, c2 := w*tr.C, w*dCur, w*w*tr.C
	for i := 0; i < tr.NClosed; i++ {
		w := weight(omega, t, (v.lo[i]+v.lo[i+1])/2)
		cw += w * tr.Periods[i].C
		dw += w * tr.Periods[i].D
		c2 += w * w * tr.Periods[i].C
	}
	if !(c2 > 0) || cw*cw/c2 < MinTrendChanges || !(dw > 0) || !(cw > 0) {
		return TrendView{}
	}
	level := cw / dw // (T4)
	num, den := math.Max(dCur, 0), math.Max(dCur, 0)
	for i := 0; i < tr.NClosed; i++ {
		p := tr.Periods[i]
		if p.D > 0 {
			v.r[i] = p.C / p.D / level // (T3) ÷ (T4)
		}
		num += v.r[i] * p.D
		den += p.D
	}
	if !(den > 0) || !(num > 0) {
		return TrendView{}
	}
	v.Ok, v.T, v.Rho, v.Level, v.n = true, t, num/den, level, tr.NClosed // (T8)
	return v
}

// Exposure is e^g of (T5) for an object observed from s to the view's
// time; without a trend (Ok false) it returns plain, the caller's
// exposure.
func (v *TrendView) Exposure(s, plain float64) float64 {
	if !v.Ok {
		return plain
	}
	e := math.Max(v.T-math.Max(s, v.lo[v.n]), 0) // current period: r = 1
	for i := 0; i < v.n; i++ {
		if d := v.lo[i+1] - math.Max(s, v.lo[i]); d > 0 {
			e += v.r[i] * d
		}
	}
	return e
}

// Prior is the population prior on the trend's scale (T7): the rate
// β·ρ; the prior unchanged without a trend.
func (v *TrendView) Prior(p GammaPrior) GammaPrior {
	if !v.Ok {
		return p
	}
	return GammaPrior{Shape: p.Shape, Rate: p.Rate * v.Rho}
}

// PoissonTrend is (T6): the object's complete history as of asOf on the
// trend's exposure, with the interval (E4) on it; false without a trend,
// for an object that is not a complete history or has fewer than
// cfg.MinIntervals intervals (poisson_events' own condition).
func (c *Change) PoissonTrend(v *TrendView, asOf float64, cfg *Config, scratch *Estimates) (Estimate, bool) {
	if !v.Ok || !c.Complete() || c.Intervals() < int64(cfg.MinIntervals) {
		return Estimate{}, false
	}
	if _, _, ok := c.visitBase(); !ok {
		return Estimate{}, false
	}
	eg := v.Exposure(seconds(c.first), c.exposure(asOf))
	a, b := float64(c.changes)+EventPriorShape, eg+cfg.EventPriorExposure
	m := scratch.quantiles()
	pLo, pHi := cfg.tails()
	return sane(Estimate{Key: KeyPoissonTrend, Rate: a / b,
		Lo: m.gamma(a, pLo, 1-pLo) / b, Hi: m.gamma(a, pHi, 1-pHi) / b, HasCI: true}, true)
}

// PooledTrendIn is PooledEstimateIn on the trend (T7): a complete
// history's posterior Gamma(α + N, β·ρ + e^g), its mean the current rate;
// other objects, and every object without a trend (Ok false), get
// PooledEstimateIn.
func (c *Change) PooledTrendIn(prior GammaPrior, v *TrendView, asOf float64, cfg *Config, scratch *Estimates) (Estimate, bool) {
	if !v.Ok || !c.Complete() {
		return c.PooledEstimateIn(prior, asOf, cfg, scratch)
	}
	ev, ok := c.EvidenceAt(asOf, cfg)
	if !ok || !(prior.Shape > 0) || !(prior.Rate > 0) {
		return Estimate{}, false
	}
	ev.E = v.Exposure(ev.Since, ev.E)
	return sane(pooledConjugate(v.Prior(prior), ev, cfg, scratch.quantiles()))
}
