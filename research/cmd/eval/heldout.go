package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/changerate/changerate/estimators"
)

// Held-out simulation worlds for the best-estimate rule (issue 31, item 5):
// designs and change processes the rule (estimators/best.go) was not
// derived on — Last-Modified polls, irregular Poisson visits, and
// non-Poisson (Weibull renewal) changes — each scored by the published
// estimate's error against the single paper estimators of the same
// records, and by the coverage of its 95 % interval.

// hoWorld is one held-out regime.
type hoWorld struct {
	name      string
	r         float64 // λ/f
	n         int     // visit intervals
	irregular bool    // exponential visit intervals
	lm        bool    // Last-Modified at every visit
	shape     float64 // Weibull shape of the change intervals (1: Poisson)
}

// hoObserve simulates one object of the world with f = 1 (the visit
// interval is the time unit) and returns its state.
func hoObserve(rng *rand.Rand, w hoWorld) *estimators.Change {
	lambda := w.r
	// Weibull renewal intervals with mean 1/λ: scale = 1/(λ·Γ(1+1/k)).
	scale := 1 / (lambda * math.Gamma(1+1/w.shape))
	draw := func() float64 { return scale * math.Pow(rng.ExpFloat64(), 1/w.shape) }
	// Start the renewal process well before the first visit so that its
	// phase at time 0 is (nearly) stationary.
	last, next := math.Inf(-1), -50/lambda
	for next <= 0 {
		last = next
		next += draw()
	}
	var c estimators.Change
	c.Visit(estimators.Visit{Time: 0, LastModified: last, HasLastModified: w.lm && !math.IsInf(last, -1)})
	t := 0.0
	for i := 0; i < w.n; i++ {
		if w.irregular {
			t += rng.ExpFloat64()
		} else {
			t++
		}
		ch := false
		for next <= t {
			last, ch = next, true
			next += draw()
		}
		c.Visit(estimators.Visit{Time: t, Changed: ch, LastModified: last, HasLastModified: w.lm})
	}
	return &c
}

// identifiedRate is the rate that existence-of-change visits every 1/f = 1
// identify in a stationary renewal world: they see, at each visit, only
// whether the interval held a change, with probability
//
//	p = F_e(1) = λ·∫_0^1 (1 − F(s)) ds                                   (H5)
//
// (F the renewal intervals' distribution, F_e its equilibrium — residual
// life — distribution, Cox 1962 §1.3), and every estimator of the visit
// designs reads p through the Poisson relation p = 1 − e^{−λ_p}, so
//
//	λ_p = −ln(1 − p).                                                    (H6)
//
// For Poisson changes (k = 1) λ_p = λ. For Weibull(k) intervals with mean
// 1/λ, 1 − F(s) = exp(−(s/η)^k), η = 1/(λΓ(1 + 1/k)); the integral is
// taken by Simpson's rule in u = √s (smooth for k = ½, whose integrand
// has an infinite slope at s = 0), 20000 panels.
func identifiedRate(lambda, k float64) float64 {
	if k == 1 {
		return lambda
	}
	eta := 1 / (lambda * math.Gamma(1+1/k))
	// ∫_0^1 S(s) ds = ∫_0^1 S(u²)·2u du
	g := func(u float64) float64 { return math.Exp(-math.Pow(u*u/eta, k)) * 2 * u }
	const n = 20000
	h := 1.0 / n
	sum := g(0) + g(1)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * g(float64(i)*h)
	}
	p := lambda * sum * h / 3
	return -math.Log1p(-p)
}

// hoCell is one world's measurements against one target (λ, or λ_p).
type hoCell struct {
	capped map[string]float64 // Σ capped |log| per estimator ("best": published)
	n      map[string]int
	logs   []float64 // the published estimate's |log|
}

func newHOCell() *hoCell { return &hoCell{capped: map[string]float64{}, n: map[string]int{}} }

func (h *hoCell) add(key string, est, truth, logG float64) {
	l := absLog(est, truth)
	h.capped[key] += math.Min(l, logG)
	h.n[key]++
	if key == "best" {
		h.logs = append(h.logs, l)
	}
}

// lowest is the lowest mean capped |log| among keys defined in every run.
func (h *hoCell) lowest(keys []string) (float64, string) {
	lo, k := math.Inf(1), ""
	for _, key := range keys {
		if h.n[key] != h.n["best"] || h.n[key] == 0 {
			continue
		}
		if m := h.capped[key] / float64(h.n[key]); m < lo {
			lo, k = m, key
		}
	}
	return lo, k
}

func (h *hoCell) mean() float64 { return h.capped["best"] / float64(h.n["best"]) }

func (h *hoCell) lowestVal(keys []string) float64 { v, _ := h.lowest(keys); return v }

// pooledFactor is Σ V / Σ E₀[V] (estimators/dependence.go R3–R4) over the
// objects whose R̂ is defined: the spacing factor of the whole population.
func pooledFactor(cs []*estimators.Change) float64 {
	var sv, se float64
	for _, c := range cs {
		if v, ev, ok := c.FlagSpread(); ok {
			sv += v
			se += ev
		}
	}
	return sv / se
}

// simulatedFactor is D of (D1) as the simulation shows it: the variance of
// the count X over the K objects' regular visits divided by the binomial
// variance n·p̄(1 − p̄), p̄ the mean share of changed intervals.
func simulatedFactor(cs []*estimators.Change) float64 {
	var sx, sxx, sn float64
	for _, c := range cs {
		x := float64(c.Changes())
		sx += x
		sxx += x * x
		sn += float64(c.Intervals())
	}
	K := float64(len(cs))
	m := sx / K
	v := (sxx - K*m*m) / (K - 1)
	n := sn / K
	p := m / n
	return v / (n * p * (1 - p))
}

func heldOutSection(e *Env) {
	r := e.R
	r.H(2, "Held-out simulation: the best-estimate rule on worlds it was not derived on (issue 31)")
	K := e.reps(4000, 600)
	r.P("Each regime: %d objects in sites of %d–%d pages (uniform sizes; every page of a site in the world's regime; the published "+
		"interval uses the site's spacing factor, estimators/dependence_pool.go), visit interval 1 (f = 1), true rate λ = r. Worlds: daily **Last-Modified** polls for 90 days (a store.log), "+
		"**irregular Poisson visits** (exponential intervals, mean 1) without Last-Modified, and **non-Poisson changes** (Weibull renewal "+
		"intervals of shape k with mean 1/λ: k = 0.5 bursty, k = 3 nearly periodic) on regular visits. The rule (estimators/best.go) "+
		"computes its risks under the Poisson model, the count's variance scaled by the factor D of the published interval (B7: the "+
		"object's, or its site's, R6–R19); none of these worlds is in its derivation or in TestBestRuleEvaluation's grid except "+
		"as noted. Cells: mean capped |log(est/λ)| (the rule's loss, capped at log G = 5.39), median |log|, and the coverage of the published "+
		"95 %% interval. The lowest single estimator is taken among naive, cgm_improved, bayes_beta, cgm_irregular_mle, cgm_lastmod "+
		"(those defined in every run).", K, hoSiteMin, hoSiteMax)
	worlds := []hoWorld{
		{"LM daily, r=0.1", 0.1, 90, false, true, 1},
		{"LM daily, r=0.3", 0.3, 90, false, true, 1},
		{"LM daily, r=1", 1, 90, false, true, 1},
		{"LM daily, r=3", 3, 90, false, true, 1},
		{"irregular visits, r=0.3", 0.3, 60, true, false, 1},
		{"irregular visits, r=1", 1, 60, true, false, 1},
		{"irregular visits, r=3", 3, 60, true, false, 1},
		{"bursty changes k=0.5, r=0.3", 0.3, 60, false, false, 0.5},
		{"bursty changes k=0.5, r=1", 1, 60, false, false, 0.5},
		{"periodic-ish changes k=3, r=0.3", 0.3, 60, false, false, 3},
		{"periodic-ish changes k=3, r=1", 1, 60, false, false, 3},
		// Appended (so the cells above keep their seeds): the remaining
		// regimes of r for the renewal worlds. Nearly periodic changes at
		// r = 3 change in (almost) every interval, p → 1 and λ_p → ∞:
		// left out.
		{"bursty changes k=0.5, r=0.1", 0.1, 60, false, false, 0.5},
		{"bursty changes k=0.5, r=3", 3, 60, false, false, 0.5},
		{"periodic-ish changes k=3, r=0.1", 0.1, 60, false, false, 3},
	}
	keys := []string{estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta, estimators.KeyCGMIrregularMLE, estimators.KeyCGMLastMod}
	cfg := newEstConfig()
	logG := math.Log(5.572 / 0.02532)
	var rows, calRows, missRows, factorRows [][]string
	var checks, lambdaChecks []check
	var stillFail, latticeNotes, irregularNotes []string
	for wi, w := range worlds {
		rng := rand.New(rand.NewPCG(e.Seed, uint64(900+wi)))
		// The identified rate (H6): on regular visits without
		// Last-Modified the visits see only each interval's change flag;
		// with Last-Modified every interval's last change time is seen,
		// and on these Poisson worlds λ itself is the target.
		lp := w.r
		if !w.lm && !w.irregular {
			lp = identifiedRate(w.r, w.shape)
		}
		identified := lp == w.r
		cs := make([]*estimators.Change, K)
		for k := range cs {
			cs[k] = hoObserve(rng, w)
		}
		// The objects' sites (their own stream, so that the objects keep
		// their seeds) and each site's spacing sums (R7).
		site := hoSites(rand.New(rand.NewPCG(e.Seed, uint64(1900+wi))), K)
		pools := sitePools(cs, site, cfg)
		nSites := site[K-1] + 1
		priors := sitePriors(cs, site, cfg)
		// D as the simulation shows it (regular visits only: there the
		// flags are identically distributed and D1 applies).
		Dsim, Dpool, Dall, Ball := math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if !w.irregular {
			Dsim = simulatedFactor(cs)
			Dpool = pooledFactor(cs)
			// (R8) over the whole world, as if it were one site.
			all := sitePools(cs, make([]int, K), cfg)[0]
			if s, ok := all.Site(); ok {
				Dall = s.D
			}
			if f, _, ok := estimators.EndSpacingFactor(all.B, all.BD, all.BV); ok {
				Ball = f
			}
		}
		if !w.irregular && !w.lm {
			mr, fr := hoMisses(w.name, cs, site, pools, priors, lp, Dsim, cfg)
			missRows = append(missRows, mr...)
			factorRows = append(factorRows, fr)
		}
		toL, toP := newHOCell(), newHOCell()
		chosen := map[string]int{}
		var withCI, covL, covP, covOwnP, covSimP, covPoolP, covObjP, covAllP, covAggP, nAgg, nPooled int
		var sumD, sumObjD float64
		var out estimators.Estimates
		for i, c := range cs {
			best, ok := c.EstimateIn(c.Span(), cfg, &pools[site[i]], &out)
			if !ok {
				continue
			}
			chosen[best.Key]++
			toL.add("best", best.Rate, w.r, logG)
			toP.add("best", best.Rate, lp, logG)
			for _, key := range keys {
				if x, ok := out.Get(key); ok {
					toL.add(key, x.Rate, w.r, logG)
					toP.add(key, x.Rate, lp, logG)
				}
			}
			if !best.HasCI {
				continue
			}
			withCI++
			in := func(e estimators.Estimate, t float64) bool { return e.Lo <= t && t <= e.Hi }
			// What the aggregator publishes: the pooled estimate under the
			// site's gamma prior for fewer than PooledMaxChanges changes
			// (aggregate/siteprior.go), the rule's otherwise.
			agg := best
			if prior, ok := priors[site[i]]; ok && c.Changes() < estimators.PooledMaxChanges {
				if e, ok := c.PooledEstimateIn(prior, c.Span(), cfg, nil); ok && e.HasCI {
					if c.Regular(cfg) { // its interval on the factor (R12)
						e = c.PooledDependentIn(e, prior, c.SiteFlagDependence(&pools[site[i]], cfg), cfg, nil)
					}
					agg = e
					nPooled++
				}
			}
			nAgg++
			if in(agg, target(lp, w.r, w.lm || w.irregular)) {
				covAggP++
			}
			if in(best, w.r) {
				covL++
			}
			if in(best, lp) {
				covP++
			}
			// The estimator's own interval (independent flags) and the
			// interval with the simulated D (the oracle of D4).
			own, _ := out.Get(best.Key)
			if in(own, lp) {
				covOwnP++
			}
			if !w.irregular {
				if in(c.EffectiveInterval(own, Dsim, cfg), lp) {
					covSimP++
				}
				if in(c.EffectiveInterval(own, Dpool, cfg), lp) {
					covPoolP++
				}
				if in(c.EffectiveInterval(own, Dall, cfg), lp) {
					covAllP++
				}
				if c.Regular(cfg) {
					sumD += c.SiteFlagDependence(&pools[site[i]], cfg)
					dObj := c.FlagDependence(cfg)
					sumObjD += dObj
					if in(c.EffectiveInterval(own, dObj, cfg), lp) {
						covObjP++
					}
				} else {
					sumD++
					sumObjD++
					if in(own, lp) {
						covObjP++
					}
				}
			}
		}
		frac := func(k int) float64 { return float64(k) / float64(withCI) }
		lowL, lowLKey := toL.lowest(keys)
		lowP, lowPKey := toP.lowest(keys)
		sort.Float64s(toL.logs)
		rows = append(rows, []string{w.name, keyCounts(chosen), f3(toL.mean()), f3(medianOf(toL.logs)), fmt.Sprintf("%s %s", lowLKey, f3(lowL)), pct(frac(covL)),
			f3(lp / w.r), f3(toP.mean()), f3(medianOf(toP.logs)), fmt.Sprintf("%s %s", lowPKey, f3(lowP))})
		meanD, simCov, poolCov, meanObjD, objCov, allCov := math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if !w.irregular {
			meanD, simCov, poolCov, allCov = sumD/float64(withCI), frac(covSimP), frac(covPoolP), frac(covAllP)
			meanObjD, objCov = sumObjD/float64(withCI), frac(covObjP)
		}
		target, why := "λ", "λ is identified (Poisson changes)"
		cell, cov := toL, frac(covL)
		if !identified {
			target, why = "λ_p", "λ is not identified by regular visits' change flags (H6): scored against λ_p, what they identify"
			cell, cov = toP, frac(covP)
		}
		// Why a cell misses 93–97 %: computed from the same run.
		lo, hi := coverageBand(withCI)
		inBand := func(x float64) bool { return x >= lo && x <= hi }
		cause := "calibrated"
		switch {
		case inBand(cov):
		case math.IsNaN(simCov):
			cause = "not measured here"
		case Dsim < 1:
			cause = fmt.Sprintf("variance factor: mean published D %.2f against D = %.2f < 1 (negative dependence): narrowed only by the object's own test (R6, R11)", meanD, Dsim)
		default:
			cause = fmt.Sprintf("variance factor: mean published D %.2f against D = %.2f", meanD, Dsim)
			switch {
			case inBand(allCov):
				cause += fmt.Sprintf("; (R8) over all %d objects, %.2f, calibrates it: a site's %d–%d objects give a noisier factor, and the objects keep part of their own R̂ (R10)", K, Dall, hoSiteMin, hoSiteMax)
			case inBand(poolCov):
				cause += fmt.Sprintf("; (R8) over all %d objects, %.2f, covers %s and the ratio Σ V / Σ E₀[V] over them, %.2f, calibrates it: R8's precision weights favour the windows with many spacings, whose R̂ is lower here", K, Dall, pct(allCov), Dpool)
			default:
				cause += fmt.Sprintf("; even pooled over all %d objects (R8 %.2f, ratio %.2f) it covers %s / %s: spacings inside %d intervals miss the gaps longer than the window; the end spacings' B̄ (R16) over them, %.2f, samples the long gaps by length but only up to the window", K, Dall, Dpool, pct(allCov), pct(poolCov), w.n, Ball)
			}
		}
		if !inBand(cov) && !math.IsNaN(Dsim) && Dsim < 1 {
			// Nearly periodic flags: the coverage a shared factor can give.
			steps, counts, m := hoLattice(cs, lp, cfg)
			xs := make([]int64, 0, len(counts))
			for x := range counts {
				xs = append(xs, x)
			}
			sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
			var shares []string
			for _, x := range xs {
				shares = append(shares, fmt.Sprintf("X = %d: %s", x, pct(float64(counts[x])/float64(m))))
			}
			var in []string
			for _, st := range steps {
				var f float64
				if _, err := fmt.Sscanf(st[strings.LastIndex(st, ": ")+2:], "%f", &f); err == nil && inBand(f/100) {
					in = append(in, st)
				}
			}
			reach := fmt.Sprintf("none of them in the band [%s, %s]", pct(lo), pct(hi))
			if len(in) > 0 {
				reach = fmt.Sprintf("in the band [%s, %s] only at %s, where two values of X let λ_p go at nearly the same D: a "+
					"sliver of about one grid step (1 %% in D), against the simulated D %.3f, which gives %s", pct(lo), pct(hi), strings.Join(in, "; "), Dsim, pct(simCov))
			}
			latticeNotes = append(latticeNotes, fmt.Sprintf("%s (%d objects): the counts take the values %s; the coverage of λ_p = %.4f by "+
				"the published estimator's own interval on (D4) with one factor D for every object, D from 1/n to 1 (400 log-spaced "+
				"points), takes the steps %s — %s", w.name, m, strings.Join(shares, ", "), lp, strings.Join(steps, "; "), reach))
		}
		if !inBand(cov) && !math.IsNaN(simCov) {
			if inBand(simCov) {
				cause += "; the simulated D calibrates it"
			} else {
				cause += fmt.Sprintf("; even the simulated D gives %s: not the variance factor alone", pct(simCov))
			}
		}
		aggCov := fmt.Sprintf("%s (%d pooled)", pct(float64(covAggP)/float64(nAgg)), nPooled)
		calRows = append(calRows, []string{w.name, target, fmt.Sprint(nSites), pct(frac(covOwnP)), f3(meanObjD), pct(objCov), f3(meanD), pct(cov), aggCov, f3(Dsim), pct(simCov), f3(Dall), pct(allCov), f3(Dpool), pct(poolCov), cause})
		checks = append(checks, atMost(w.name+": mean capped |log| to "+target+" ÷ lowest single estimator's", cell.mean()/cell.lowestVal(keys), 1.03,
			"within 3 % of the best single paper estimator (the mean's sampling error at K runs is ≈ 1.5 %); "+why))
		checks = append(checks, coverageCheck(w.name+": coverage of "+target+" by the published interval", cov, withCI, "issue 31: 93–97 %; "+why))
		if !identified {
			lambdaChecks = append(lambdaChecks, atMost(w.name+": mean capped |log| to λ ÷ lowest single estimator's", toL.mean()/lowL, 1.03,
				"within 3 % of the best single paper estimator; λ is not identified by these visits (H6): which estimator's bias happens to fit this renewal world"))
			lambdaChecks = append(lambdaChecks, coverageCheck(w.name+": coverage of λ by the published interval", frac(covL), withCI,
				"issue 31: 93–97 % of true rates; λ is not identified by these visits (H6)"))
		}
		if !inBand(cov) || cell.mean()/cell.lowestVal(keys) > 1.03 {
			stillFail = append(stillFail, w.name)
		}
		if w.irregular && cell.mean()/cell.lowestVal(keys) > 1.03 {
			// Why the rule keeps the likelihood estimator: a regular-visit
			// estimator on exponential intervals of mean 1 sees a change
			// with probability E[1 − e^{−λτ}] = λ/(1 + λ), not 1 − e^{−λ},
			// and reads it through the regular relation.
			bias := math.Log(-math.Log1p(-w.r/(1+w.r)) / w.r)
			mean := func(k string) float64 { return cell.capped[k] / float64(cell.n[k]) }
			irregularNotes = append(irregularNotes, fmt.Sprintf("%s: %s %s against %s %s (the published estimator) — a ratio of %.3f. "+
				"bayes_beta and cgm_improved read irregular visits as if regular: on exponential intervals a visit sees a change with "+
				"probability λ/(1 + λ), not 1 − e^{−λ}, a bias of %.3f in log at r = %g that grows with r (%.3f at r = 1, %.3f at r = 3), "+
				"where cgm_irregular_mle is the lowest (table above); at r = %g it costs less than the variance bayes_beta's prior "+
				"removes. The rule (estimators/best.go B5) has no risk for irregular visits: bayes_beta's depends on the law of X given "+
				"the visit times, which the state keeps only as buckets of the changed intervals and Σ I², so it takes the likelihood "+
				"estimator of the design, consistent at every r, by order. A risk from those moments (second order in the intervals' spread, "+
				"averaged over the posterior of λ) was tried: chosen per object, it named bayes_beta where the count runs low, where "+
				"its bias adds to the count's, and did no better than the likelihood estimator alone",
				w.name, lowPKey, f3(mean(lowPKey)), estimators.KeyCGMIrregularMLE, f3(mean(estimators.KeyCGMIrregularMLE)), cell.mean()/cell.lowestVal(keys),
				bias, w.r, math.Log(-math.Log1p(-0.5)), math.Log(-math.Log1p(-0.75)/3), w.r))
		}
	}
	r.Table([]string{"world", "published", "mean capped |log| to λ", "median |log| to λ", "lowest single to λ", "coverage of λ", "λ_p/λ", "mean capped |log| to λ_p", "median |log| to λ_p", "lowest single to λ_p"}, rows)
	r.P("**What the visits identify.** On regular visits without Last-Modified every estimator sees only whether each interval held a " +
		"change. In a stationary renewal world that happens with probability p = λ∫₀¹(1 − F(s))ds (H5; F the change intervals' " +
		"distribution), which the estimators read through the Poisson relation as λ_p = −ln(1 − p) (H6): λ_p = λ for Poisson changes, " +
		"below λ for bursty ones (several changes fall in one interval and count once) and above it for nearly periodic ones (almost every " +
		"interval holds exactly one). λ itself is not identified by the flags: replacing every change by a burst of m changes within one " +
		"interval multiplies λ by m and leaves every flag as it was, so no estimator of these visits, and no interval built from them, can " +
		"be calibrated for λ in every renewal world. The rule's checks of these worlds are therefore scored against λ_p, with that reason " +
		"next to each check; their coverage of λ is kept, unchanged in meaning, in its own verdict below, which still differs.")
	r.P("**Calibration.** The published interval of naive, cgm_improved and bayes_beta on regular visits is the estimator's own " +
		"interval recomputed on the effective sample n/D, X/D (estimators/dependence.go D4), D the renewal variance factor of the change " +
		"flags: each object's R̂ (R1–R5: the spread of the spacings between changed intervals over its expectation for independent flags) " +
		"shrunk toward its site's precision-weighted mean by the sites' spread of factors (estimators/dependence_pool.go R7–R10, " +
		"empirical Bayes; objects without a spacing of their own take the site's), used where it is at least 1; below 1 the object's own " +
		"one-sided test at 5 %% (R6) decides (R11); then widened to the site's end-spacing factor B̄ where B̄ exceeds 1 by more than " +
		"1.645 of its standard errors under independent flags (estimators/dependence_back.go R13–R17: the last spacing of each window " +
		"is a backward recurrence time, whose excess over the mean gap measures D through E[G²]), and kept at least at the object's own " +
		"R̂ where that exceeds its null upper 5 %% quantile (R18: a window that holds a burst shows it in its own spacings); on a site whose " +
		"end spacings so reject independence, widened to the between-object factor 1 + e_i·σ̂²/μ̂ of the site's gamma prior moments " +
		"(estimators/dependence_between.go R19: the spread of the counts between windows, which sees the gaps longer than the window; " +
		"an upper bound where the pages' rates differ too); bounded to [1/n, n]. Columns: the number of sites; the coverage of the target by the " +
		"estimator's own interval (independent flags); the mean factor and the coverage with the object's own factor alone (R6, the " +
		"published interval before the site's factor) and with the published one (R11, R17–R19); the coverage of what the aggregator publishes " +
		"for the same objects, whose site also has a gamma prior: the pooled estimate for fewer than 5 changes (aggregate/siteprior.go; " +
		"its interval that of the posterior with the likelihood tempered by the same factor, R12), the rule's otherwise; the factor D the simulation shows (Var(X) over " +
		"the objects ÷ n·p̄(1 − p̄), D1) and the coverage with it in place of the published factor — which separates an error of the " +
		"factor from a biased point estimate or a wrong target; the site's factor (R8) computed over all the world's objects as one " +
		"site, and the pooled R̂ Σ V / Σ E₀[V] over them (R3–R4 summed before dividing, weights E₀[V] in place of R8's), each with " +
		"the coverage it gives. The cause column is computed from the other columns.")
	r.Table([]string{"world", "target", "sites", "coverage, independent flags", "mean D̂, object's own (R6)", "coverage, object's own D̂", "mean D̂, published (R11, R17–R19)", "coverage, published", "coverage, as the aggregator publishes", "D simulated", "coverage with simulated D", "R8 over all objects", "coverage with it", "pooled R̂ (ratio)", "coverage with pooled R̂", "cause"}, calRows)
	heldOutMissesReport(r, missRows, factorRows)
	for _, note := range irregularNotes {
		r.P("**Irregular visits: the rule's order, not a risk.** %s.", note)
	}
	for _, note := range latticeNotes {
		r.P("**A lattice, not a factor.** %s. Each step is one value of X whose interval takes in or lets go of λ_p as D moves: "+
			"the counts of nearly periodic flags crowd a few values (n·p ± about 3), and the coverage moves by the share of a whole "+
			"value of X at a time. No estimate of D is that exact (the simulated D itself misses the sliver; a site's R8 over "+
			"50–200 objects has a standard error of several per cent), and a per-object factor only re-sorts which values' "+
			"intervals move (R6 narrows only objects whose own spacings fall below their null quantile), so this cell is left "+
			"outside the band rather than met by a factor chosen to land in it.", note)
	}
	r.P("Cells that still miss (coverage outside 93–97 %% or the rule > 3 %% above the best single estimator, against the identifiable "+
		"target): %s.", strings.Join(stillFail, "; "))
	r.Verdict("held-out worlds", "issue 31: the rule is good on worlds it was not derived on; 93–97 % coverage in every regime",
		"the published estimate, against λ where the visits identify it and λ_p where they do not (reason beside each check)", checks,
		"see the cause column of the calibration table and the misses by side; the spacings of a 60-interval window miss the gaps "+
			"longer than it, so even the site's pooled factor falls short of a bursty world's D; the end spacings (R17) sample the long "+
			"gaps by length, up to the window, an object whose own spacings show a burst keeps its own factor (R18), and on a site "+
			"whose end spacings reject independence the spread of the counts between windows (R19) sees the gaps longer than the window: "+
			"bursty flags reach the band at every r; the cells left are nearly periodic flags at r = 0.1 (a lattice of a few counts: "+
			"see its paragraph) and the rule's choice on irregular visits at r = 0.3 (its order, not a risk: see its paragraph)")
	r.Verdict("held-out non-Poisson worlds, true λ", "issue 31: 93–97 % of true rates in every regime",
		"the published estimate and its 95 % interval against λ", lambdaChecks,
		"λ is not identified by regular visits' change flags (H6): the estimate is centred on λ_p (see λ_p/λ)")
}

// Held-out sites. The product pools the spacing factor over a site's
// objects (estimators/dependence_pool.go, R7–R12), so each world's objects
// are split into sites of 50–200 pages (uniform sizes), every page of a
// site in the world's regime; the last site takes what is left (at least
// 50 objects: a remainder below 50 joins the site before it).
const hoSiteMin, hoSiteMax = 50, 200

// hoSites returns each of K objects' site index, sites in order.
func hoSites(rng *rand.Rand, K int) []int {
	site := make([]int, K)
	for i, s := 0, 0; i < K; s++ {
		size := hoSiteMin + rng.IntN(hoSiteMax-hoSiteMin+1)
		if K-(i+size) < hoSiteMin {
			size = K - i
		}
		for j := i; j < i+size; j++ {
			site[j] = s
		}
		i += size
	}
	return site
}

// sitePools sums the objects' spacing terms (R7) by site, as the
// aggregator's site state holds them once every object is final, each
// with its site's between-object excess (R19) from the site's prior sums,
// as the aggregator sets it before estimating.
func sitePools(cs []*estimators.Change, site []int, cfg *estimators.Config) []estimators.FlagPool {
	pools := make([]estimators.FlagPool, site[len(site)-1]+1)
	stats := make([]estimators.PoolStats, len(pools))
	for i, c := range cs {
		if t, ok := c.FlagTerm(cfg); ok {
			pools[site[i]].Add(t, 1)
		}
		if ev, ok := c.Evidence(cfg); ok {
			stats[site[i]].Add(ev, 1)
		}
	}
	for s := range pools {
		pools[s] = pools[s].WithExcess(&stats[s], 0)
	}
	return pools
}

// target is the rate a world's published interval is scored against:
// λ where the visits identify it (Last-Modified or irregular visits of
// Poisson changes), λ_p otherwise (H6).
func target(lp, lambda float64, identified bool) float64 {
	if identified {
		return lambda
	}
	return lp
}

// sitePriors fits each site's gamma prior (estimators/pooled.go) from its
// objects' evidence, as the aggregator's site state holds it once every
// object is final; sites without a prior are absent.
func sitePriors(cs []*estimators.Change, site []int, cfg *estimators.Config) map[int]estimators.GammaPrior {
	pools := make([]estimators.PoolStats, site[len(site)-1]+1)
	for i, c := range cs {
		if ev, ok := c.Evidence(cfg); ok {
			pools[site[i]].Add(ev, 1)
		}
	}
	priors := map[int]estimators.GammaPrior{}
	for s := range pools {
		if p, ok := pools[s].Prior(); ok {
			priors[s] = p
		}
	}
	return priors
}
