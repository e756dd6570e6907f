package estimators

import "math"

// Visit is one visit (download or revalidation) of an object. Time is in
// seconds since the Unix epoch. Changed says whether the object changed
// since the previous visit (ignored on the first, baseline visit).
// LastModified, when HasLastModified, is the object's last-modification
// time as reported at this visit. Complete says that the visit is one
// change event of a complete record of the object's changes (every change
// is reported, at its time: a version-control log), not a visit that
// samples the change process; see KeyPoissonEvents.
type Visit struct {
	Time            float64
	Changed         bool
	LastModified    float64
	HasLastModified bool
	Complete        bool
}

// Change is the O(1) state of every change-rate estimator for one object.
// The zero value is ready to use. Its size is fixed (about 600 bytes in
// memory, see AppendBinary for the compact encoding); updates never
// allocate. Not safe for concurrent use.
//
// Times and durations are kept as whole milliseconds (every log format's
// resolution), so the interval sums are exact integers: they do not drift
// with the number of visits, the unchanged time is the span minus the
// changed time exactly, and the state encodes into a few varints.
type Change struct {
	visits   int64   // accepted visits including the baseline
	changes  int64   // X: intervals with a detected change
	first    int64   // time of the baseline visit, ms
	last     int64   // time of the latest visit, ms
	sumSq    float32 // Σ I_i² over visit intervals, s² (regularity only)
	changedT int64   // Σ t_ci: total length of changed intervals, ms (calibrates the buckets)
	// Σ t_uj, the total length of unchanged intervals (CGM eq. 2, M&A eq.
	// 3), is last − first − changedT.
	buckets [NumBuckets]uint32

	// CGM Fig. 10 over intervals whose closing visit carried Last-Modified;
	// lmT in ms.
	lmN, lmX int64
	lmT      int64
	// Malcolm & Armitage eq. 2 over visits with Last-Modified; ageSum in
	// ms, saturating at math.MaxInt64.
	ageN   int64
	ageSum int64

	mat matloffState

	// events counts the accepted visits (baseline included) that were
	// complete change events (Visit.Complete); the history is complete
	// when every accepted visit was one (Complete).
	events int64
	// gone counts the answers "gone" (HTTP 404, 410) since the latest
	// accepted visit (MarkGone), saturating.
	gone uint32

	// The spacing statistics of the change flags (dependence.go, R2): run
	// is the number of intervals since the latest changed one (all of
	// them without a change), sq the sum of the squared closed spacings
	// Q_c. A state stored before they existed starts from their values
	// under its measured dependence (importSpacings).
	run int64
	sq  int64
}

// millis converts a time or duration in seconds (|t| < MaxTime) to whole
// milliseconds, rounding to nearest.
func millis(t float64) int64 { return int64(math.Round(t * 1000)) }

// seconds converts milliseconds to seconds.
func seconds(ms int64) float64 { return float64(ms) / 1000 }

// addSat returns a+b for b ≥ 0, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Visit records one visit in O(1) without allocation. The first accepted
// visit is the baseline. Times are rounded to whole milliseconds. A visit
// whose Time is not within ±MaxTime, or not later than the latest visit by
// at least a millisecond (duplicates, out-of-order input), is ignored, which
// the caller can detect through Visits(). Under Last-Modified, the time to
// the previous change is T_i = Time − LastModified (clamped at 0); the
// interval counts as changed for cgm_lastmod when T_i < I_i (Fig. 10),
// independently of Changed.
func (c *Change) Visit(v Visit) {
	if !validTime(v.Time) {
		return
	}
	t := millis(v.Time)
	hasLM := v.HasLastModified && validTime(v.LastModified)
	var age int64
	if hasLM {
		age = max(t-millis(v.LastModified), 0)
	}
	if c.visits == 0 {
		c.visits, c.first, c.last = 1, t, t
		if v.Complete {
			c.events = 1
		}
		if hasLM {
			c.ageN++
			c.ageSum = addSat(c.ageSum, age)
		}
		return
	}
	iv := t - c.last
	if iv <= 0 {
		return
	}
	c.gone = 0
	if v.Complete {
		v.Changed = true // every event of a complete history is a change
	}
	c.visits++
	if v.Complete {
		c.events++
	}
	ivs := seconds(iv)
	c.sumSq = float32(float64(c.sumSq) + ivs*ivs)
	c.spacingVisit(v.Changed)
	if v.Changed {
		c.changes++
		c.changedT += iv
		if b := BucketOf(ivs); c.buckets[b] < math.MaxUint32 {
			c.buckets[b]++
		}
	}
	if hasLM {
		c.ageN++
		c.ageSum = addSat(c.ageSum, age)
		c.lmN++
		if age < iv {
			c.lmX++
			c.lmT += age
		} else {
			c.lmT += iv
		}
	}
	c.last = t
}

// Snapshot records a Matloff modification-time snapshot in O(1).
func (c *Change) Snapshot(s Snapshot) { c.mat.add(s) }

// Visits is the number of accepted visits, including the baseline.
func (c *Change) Visits() int64 { return c.visits }

// Changes is the number of visit intervals with a detected change (X).
func (c *Change) Changes() int64 { return c.changes }

// MarkGone records that the object answered "gone" (HTTP 404 or 410) at
// a visit: it is reported gone (Gone) until a later visit sees content.
// The answer is not a visit: an error page's content says nothing about
// the object's changes.
func (c *Change) MarkGone() {
	if c.gone < math.MaxUint32 {
		c.gone++
	}
}

// Gone reports whether the object's latest answers were "gone" (MarkGone
// since the latest accepted visit).
func (c *Change) Gone() bool { return c.gone > 0 }

// Events is the number of accepted visits that were complete change
// events (Visit.Complete), the baseline included.
func (c *Change) Events() int64 { return c.events }

// Complete reports whether the object's history is a complete record of
// its changes: at least one visit, every accepted visit a complete change
// event. Then X is the exact number of changes after the baseline in the
// span T, the data of a Poisson process observed continuously, and the
// visit-based estimators (which assume at most one change seen per
// visit interval) do not apply.
func (c *Change) Complete() bool { return c.visits > 0 && c.events == c.visits }

// Snapshots is the number of accepted Matloff snapshots.
func (c *Change) Snapshots() int64 { return c.mat.n }

// Intervals is n, the number of visit intervals (Visits − 1, or 0).
func (c *Change) Intervals() int64 {
	if c.visits == 0 {
		return 0
	}
	return c.visits - 1
}

// LastVisit is the time of the latest accepted visit (Unix seconds; 0
// before any).
func (c *Change) LastVisit() float64 { return seconds(c.last) }

// Span is T, the time from the baseline to the latest visit.
func (c *Change) Span() float64 { return seconds(c.last - c.first) }

// latest is the time of the latest visit, seconds.
func (c *Change) latest() float64 { return seconds(c.last) }

// unchangedTime is U = Σ t_uj, seconds.
func (c *Change) unchangedTime() float64 { return seconds(c.last - c.first - c.changedT) }

// lmExposure is T of CGM Fig. 10, seconds.
func (c *Change) lmExposure() float64 { return seconds(c.lmT) }

// totalAge is Σ age of Malcolm & Armitage eq. 2, seconds.
func (c *Change) totalAge() float64 { return seconds(c.ageSum) }

// IntervalCV is the coefficient of variation of the visit intervals,
// sqrt(Σ I²/n − Ī²)/Ī; ok=false with no interval.
func (c *Change) IntervalCV() (cv float64, ok bool) {
	n := c.Intervals()
	if n == 0 {
		return 0, false
	}
	mean := c.Span() / float64(n)
	v := float64(c.sumSq)/float64(n) - mean*mean
	if v <= 0 {
		return 0, true
	}
	return math.Sqrt(v) / mean, true
}

// Regular reports whether the visits are regular: at least one interval and
// IntervalCV ≤ cfg.RegularCV.
func (c *Change) Regular(cfg *Config) bool {
	cv, ok := c.IntervalCV()
	return ok && cv <= cfg.RegularCV
}

// hasLastMod reports whether Last-Modified was present on enough visit
// intervals for cgm_lastmod to be the best estimate.
func (c *Change) hasLastMod(cfg *Config) bool {
	n := c.Intervals()
	return c.lmN > 0 && float64(c.lmN) >= cfg.MinLastModFraction*float64(n)
}

// changedBuckets copies the non-empty buckets into ts (representative
// intervals) and ws (counts) and returns how many there are. The bucket
// centres are scaled by one common factor so that Σ w·t equals the exact
// total changed time Σ t_ci; this makes eq. 2 exact to first order in the
// within-bucket spread (t/(e^{λt}−1) ≈ 1/λ − t/2 + λt²/12) and exact for a
// single bucket.
func (c *Change) changedBuckets(ts, ws *[NumBuckets]float64) int {
	k := 0
	approx := 0.0
	for b0 := 0; b0 < NumBuckets; b0 += 4 { // most buckets are empty: skip four at a time
		if c.buckets[b0]|c.buckets[b0+1]|c.buckets[b0+2]|c.buckets[b0+3] == 0 {
			continue
		}
		for b := b0; b < b0+4; b++ {
			if cnt := c.buckets[b]; cnt != 0 {
				ts[k] = BucketCentre(b)
				ws[k] = float64(cnt)
				approx += ts[k] * ws[k]
				k++
			}
		}
	}
	if approx > 0 && c.changedT > 0 {
		s := seconds(c.changedT) / approx
		for i := 0; i < k; i++ {
			ts[i] *= s
		}
	}
	return k
}

// Estimate computes every defined change-rate estimator as of asOf
// (seconds; the visit estimators depend only on the visits; a complete
// history's exposure runs to asOf, events.go E1, when asOf is after its
// latest event) into out (which is Reset first) and
// returns the best estimate under the rule of the package documentation;
// ok=false when there is too little data for a best estimate. Each
// estimator is computed once: the best estimate is picked from those
// published in out. With out == nil only the best estimate is computed. It
// does not allocate. The published interval's dependence factor is the
// object's own (dependence.go, R6); EstimateIn takes its site's.
func (c *Change) Estimate(asOf float64, cfg *Config, out *Estimates) (best Estimate, ok bool) {
	return c.EstimateIn(asOf, cfg, nil, out)
}

// EstimateIn is Estimate for an object of a site whose spacing factors
// sum to site (dependence_pool.go, R7; nil: none): the published interval
// is (D4) on the factor of (R11).
func (c *Change) EstimateIn(asOf float64, cfg *Config, site *FlagPool, out *Estimates) (best Estimate, ok bool) {
	if out == nil {
		mat, matOK := c.mat.estimates(cfg, nil)
		return sane(c.best(cfg, asOf, mat, matOK, true, nil, site, nil))
	}
	return c.estimate(cfg, asOf, out, site, out.quantiles())
}

// EstimatesIn is EstimateIn without the best-estimate rule: every
// defined estimator as of asOf into out (which is Reset first), the same
// list EstimateIn fills, for a caller that publishes another estimate as
// the best one (the aggregator's site prior, whose pooled estimate
// replaces the rule's choice for most objects: the rule's risks and its
// dependent interval would be computed for nothing).
func (c *Change) EstimatesIn(asOf float64, cfg *Config, out *Estimates) {
	if c.Complete() {
		c.completeEstimate(cfg, asOf, out, out.quantiles())
		return
	}
	c.visitEstimates(cfg, out, out.quantiles())
}

// estimate is EstimateIn for out != nil with the quantile memo mq (nil:
// none).
func (c *Change) estimate(cfg *Config, asOf float64, out *Estimates, site *FlagPool, mq *quantileMemo) (best Estimate, ok bool) {
	if c.Complete() {
		return c.completeEstimate(cfg, asOf, out, mq)
	}
	v, mat, matOK := c.visitEstimates(cfg, out, mq)
	return sane(c.best(cfg, asOf, mat, matOK, true, &v, site, mq))
}

// visitEstimates computes every visit-based estimator, with its interval,
// and the Matloff estimators into out (which is Reset first), and returns
// the visit estimators' results (the best-estimate rule's candidates) and
// the Matloff estimators' best.
func (c *Change) visitEstimates(cfg *Config, out *Estimates, mq *quantileMemo) (v visitEstimates, mat Estimate, matOK bool) {
	out.Reset()
	for k, est := range visitEstimators {
		v.e[k], v.ok[k] = est(c, cfg, true, mq)
		if v.ok[k] {
			out.add(v.e[k])
		}
	}
	mat, matOK = c.mat.estimates(cfg, out)
	return v, mat, matOK
}

// The visit-based estimators, by their index in visitEstimators, which is
// the order in which Estimate publishes them.
const (
	visitNaive = iota
	visitImproved
	visitBayes
	visitIrregular
	visitMalcolmNoLM
	visitLastMod
	visitMalcolmLM
	numVisit
)

var visitEstimators = [numVisit]func(c *Change, cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool){
	visitNaive:       (*Change).naiveEst,
	visitImproved:    (*Change).improvedEst,
	visitBayes:       (*Change).bayesEst,
	visitIrregular:   (*Change).irregularEst,
	visitMalcolmNoLM: (*Change).malcolmNoLMEst,
	visitLastMod:     (*Change).lastModEst,
	visitMalcolmLM:   (*Change).malcolmLMEst,
}

// visitEstimates holds the visit-based estimators' results computed (with
// their intervals) by Estimate, so that the best-estimate rule does not
// compute its candidates again.
type visitEstimates struct {
	e  [numVisit]Estimate
	ok [numVisit]bool
}

// of returns estimator k's result: the one in v or, when v is nil, computed
// without the quantile memo (with its interval when withCI).
func (v *visitEstimates) of(k int, c *Change, cfg *Config, withCI bool) (Estimate, bool) {
	if v != nil {
		return v.e[k], v.ok[k]
	}
	return visitEstimators[k](c, cfg, withCI, nil)
}

// best applies the best-estimate rule (see doc.go) as of asOf (seconds;
// a complete history's exposure end, see Estimate); withCI=false skips
// the interval of the chosen estimator. pre, when not nil, holds the
// candidates already computed; site, when not nil, the sums of the
// object's site's spacing factors (R7).
func (c *Change) best(cfg *Config, asOf float64, mat Estimate, matOK, withCI bool, pre *visitEstimates, site *FlagPool, mq *quantileMemo) (Estimate, bool) {
	if c.Complete() {
		if c.Intervals() < int64(cfg.MinIntervals) {
			return Estimate{}, false
		}
		return c.poissonEventsEst(cfg, asOf, withCI, nil)
	}
	minN := int64(cfg.MinIntervals)
	if c.Intervals() >= minN {
		if e, ok := c.chooseVisit(cfg, withCI, pre, site, mq); ok {
			return e, true
		}
	}
	if matOK && c.mat.n >= minN {
		return mat, true
	}
	return Estimate{}, false
}

// bestRate is the best estimate's rate without any interval (for the
// schedules), as of the latest visit.
func (c *Change) bestRate(cfg *Config) (float64, bool) {
	var mat Estimate
	var matOK bool
	if c.mat.n >= int64(cfg.MinIntervals) {
		mat, matOK = c.mat.estimates(cfg, nil)
	}
	e, ok := sane(c.best(cfg, c.latest(), mat, matOK, false, nil, nil, nil))
	return e.Rate, ok
}

// visitBase returns n, T and whether the visit estimators are defined
// (n ≥ 1, T > 0).
func (c *Change) visitBase() (n int64, T float64, ok bool) {
	n, T = c.Intervals(), c.Span()
	return n, T, n > 0 && T > 0
}

// naiveEst is CGM §4.1, X/T, with the Garwood interval of the
// detected-change count.
func (c *Change) naiveEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	_, T, ok := c.visitBase()
	if !ok {
		return Estimate{}, false
	}
	e := Estimate{Key: KeyNaive, Rate: float64(c.changes) / T}
	if withCI {
		pLo, pHi := cfg.tails()
		lo, hi := garwood(float64(c.changes), pLo, pHi, m)
		e.Lo, e.Hi, e.HasCI = lo/T, hi/T, true
	}
	return e, true
}

// improvedEst is CGM §4.2: r̂ = −log((X̄+0.5)/(n+0.5)), λ̂ = r̂·f, with the
// Clopper–Pearson interval for θ = 1−e^{−r} mapped through r = −log(1−θ);
// no interval at X = n (the upper bound is +∞).
func (c *Change) improvedEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	n, T, ok := c.visitBase()
	if !ok {
		return Estimate{}, false
	}
	f := float64(n) / T
	X := c.changes
	e := Estimate{Key: KeyCGMImproved, Rate: ImprovedRatio(n, X) * f}
	if withCI && X < n {
		pLo, pHi := cfg.tails()
		tl, th := clopperPearson(n, X, pLo, pHi, m)
		e.Lo, e.Hi, e.HasCI = thetaToRatio(tl)*f, thetaToRatio(th)*f, true
	}
	return e, true
}

// bayesEst is CGM App. B: θ̂ = (X+α)/(n+α+β), λ̂ = −f·log(1−θ̂), with the
// equal-tailed credible interval of the Beta(X+α, n−X+β) posterior.
func (c *Change) bayesEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	n, T, ok := c.visitBase()
	if !ok {
		return Estimate{}, false
	}
	f := float64(n) / T
	X := c.changes
	th := BayesTheta(n, X, cfg.BetaAlpha, cfg.BetaBeta)
	e := Estimate{Key: KeyBayesBeta, Rate: thetaToRatio(th) * f}
	if withCI {
		pLo, pHi := cfg.tails()
		a, b := float64(X)+cfg.BetaAlpha, float64(n-X)+cfg.BetaBeta
		e.Lo, e.Hi, e.HasCI = thetaToRatio(m.beta(a, b, pLo))*f, thetaToRatio(m.beta(a, b, pHi))*f, true
	}
	return e, true
}

// irregularEst is CGM §4.3, eq. 2, over the bucketed changed intervals,
// with a Wald interval on log λ from the observed information; with no
// change, λ̂ = 0 and the one-sided bound of the likelihood e^{−λU}.
func (c *Change) irregularEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	if _, _, ok := c.visitBase(); !ok {
		return Estimate{}, false
	}
	var ts, ws [NumBuckets]float64
	k := c.changedBuckets(&ts, &ws)
	l, info, ok := solveIrregular(ts[:k], ws[:k], c.unchangedTime())
	if !ok {
		return Estimate{}, false
	}
	e := Estimate{Key: KeyCGMIrregularMLE, Rate: l}
	if withCI {
		switch {
		case l > 0 && info > 0:
			// λ̂·exp(±z/(λ̂·sqrt(I(λ̂)))). The Wald interval is a
			// large-sample approximation: when it is wider than the exact
			// interval of a single Poisson event (ratio G, best.go B5) the
			// data carry less information than one event and the normal
			// approximation of log λ̂ means nothing (raeder.dk: 10⁶⁹), so
			// there is no interval.
			w := cfg.z() / (l * math.Sqrt(info))
			if 2*w <= math.Log(garwoodSpan(cfg, m)) {
				e.Lo, e.Hi, e.HasCI = l*math.Exp(-w), l*math.Exp(w), true
			}
		case l == 0:
			pLo, pHi := cfg.tails()
			_, hi := garwood(0, pLo, pHi, m)
			e.Hi, e.HasCI = hi/c.unchangedTime(), true
		}
	}
	return e, true
}

// malcolmNoLMEst is Malcolm & Armitage eq. 3 as a rate; no interval.
func (c *Change) malcolmNoLMEst(_ *Config, _ bool, _ *quantileMemo) (Estimate, bool) {
	if _, _, ok := c.visitBase(); !ok {
		return Estimate{}, false
	}
	r, _, ok := MalcolmNoLastModRate(c.Span(), c.unchangedTime(), c.changes)
	return Estimate{Key: KeyMalcolmNoLastMod, Rate: r}, ok
}

// lastModEst is CGM §5, Fig. 10 with the Estimate() of Fig. 13: X'/T, for
// N ≥ 2 (App. D's correction needs n ≥ 2). The likelihood of the Fig. 10
// data is exactly λ^X e^{−λT}, so the interval is the Garwood (Gamma)
// interval for X over exposure T.
func (c *Change) lastModEst(cfg *Config, withCI bool, m *quantileMemo) (Estimate, bool) {
	if c.lmN < 2 || c.lmT <= 0 {
		return Estimate{}, false
	}
	T := c.lmExposure()
	e := Estimate{Key: KeyCGMLastMod, Rate: LastModXPrime(c.lmN, c.lmX) / T}
	if withCI {
		pLo, pHi := cfg.tails()
		lo, hi := garwood(float64(c.lmX), pLo, pHi, m)
		e.Lo, e.Hi, e.HasCI = lo/T, hi/T, true
	}
	return e, true
}

// malcolmLMEst is Malcolm & Armitage eq. 2, mean age = totalAges/visits,
// as the rate visits/totalAges; no interval (ages at successive visits
// share the same last change, so they are not independent).
func (c *Change) malcolmLMEst(_ *Config, _ bool, _ *quantileMemo) (Estimate, bool) {
	if c.ageN == 0 || c.ageSum <= 0 {
		return Estimate{}, false
	}
	return Estimate{Key: KeyMalcolmLastMod, Rate: float64(c.ageN) / c.totalAge()}, true
}

// ClassPosterior writes into out[:len(cfg.Classes)] the posterior
// probability that the object belongs to each frequency class of
// cfg.Classes (CGM §2, App. B), under a uniform prior over the classes and
// the Poisson likelihood of the observed visits,
//
//	log L(λ_c) = Σ_i log(1 − e^{−λ_c t_ci}) − λ_c Σ_j t_uj,
//
// evaluated on the bucketed changed intervals (valid for regular and
// irregular visits). ok=false without visit intervals or when out is too
// short. It does not allocate.
func (c *Change) ClassPosterior(cfg *Config, out []float64) bool {
	k := len(cfg.Classes)
	if c.Intervals() == 0 || len(out) < k || k == 0 {
		return false
	}
	var ts, ws [NumBuckets]float64
	nb := c.changedBuckets(&ts, &ws)
	u := c.unchangedTime()
	mx := math.Inf(-1)
	for i, l := range cfg.Classes {
		ll := -l * u
		for j := 0; j < nb; j++ {
			ll += ws[j] * math.Log(-math.Expm1(-l*ts[j]))
		}
		out[i] = ll
		if ll > mx {
			mx = ll
		}
	}
	if math.IsInf(mx, -1) {
		return false
	}
	sum := 0.0
	for i := 0; i < k; i++ {
		out[i] = math.Exp(out[i] - mx)
		sum += out[i]
	}
	for i := 0; i < k; i++ {
		out[i] /= sum
	}
	return true
}

// MeanAge is Malcolm & Armitage eq. 2 as an interval: the mean object age
// (seconds) over the visits that carried Last-Modified; ok=false without
// such visits or with zero total age.
func (c *Change) MeanAge() (seconds float64, ok bool) {
	if c.ageN == 0 || c.ageSum <= 0 {
		return 0, false
	}
	return c.totalAge() / float64(c.ageN), true
}

// NoLastModInterval is Malcolm & Armitage eq. 3's bias-corrected average
// change interval avgChgInterval = I'/(1 + I'/P) (seconds); ok=false when
// eq. 3 is undefined (no change, or no unchanged time).
func (c *Change) NoLastModInterval() (seconds float64, ok bool) {
	if _, _, ok := c.visitBase(); !ok {
		return 0, false
	}
	_, iv, ok := MalcolmNoLastModRate(c.Span(), c.unchangedTime(), c.changes)
	return iv, ok
}
