package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

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

func heldOutSection(e *Env) {
	r := e.R
	r.H(2, "Held-out simulation: the best-estimate rule on worlds it was not derived on (issue 31)")
	K := e.reps(4000, 600)
	r.P("Each regime: %d objects, visit interval 1 (f = 1), true rate λ = r. Worlds: daily **Last-Modified** polls for 90 days (a store.log), "+
		"**irregular Poisson visits** (exponential intervals, mean 1) without Last-Modified, and **non-Poisson changes** (Weibull renewal "+
		"intervals of shape k with mean 1/λ: k = 0.5 bursty, k = 3 nearly periodic) on regular visits. The rule (estimators/best.go) "+
		"computes its risks under the Poisson model; none of these worlds is in its derivation or in TestBestRuleEvaluation's grid except "+
		"as noted. Cells: mean capped |log(est/λ)| (the rule's loss, capped at log G = 5.39), median |log|, and the coverage of the published "+
		"95 %% interval. The lowest single estimator is taken among naive, cgm_improved, bayes_beta, cgm_irregular_mle, cgm_lastmod "+
		"(those defined in every run).", K)
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
	}
	keys := []string{estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta, estimators.KeyCGMIrregularMLE, estimators.KeyCGMLastMod}
	cfg := newEstConfig()
	logG := math.Log(5.572 / 0.02532)
	var rows [][]string
	var checks, idChecks []check
	for wi, w := range worlds {
		rng := rand.New(rand.NewPCG(e.Seed, uint64(900+wi)))
		type acc struct {
			capped float64
			logs   []float64
			n      int
		}
		accs := map[string]*acc{"best": {}}
		for _, k := range keys {
			accs[k] = &acc{}
		}
		chosen := map[string]int{}
		covered, withCI := 0, 0
		// The identified rate (H6) and the published interval's coverage
		// of it (the visit designs without Last-Modified; with it, every
		// change time's last one is seen and λ itself is the target).
		lp := w.r
		if !w.lm && !w.irregular {
			lp = identifiedRate(w.r, w.shape)
		}
		coveredP := 0
		var logsP []float64
		add := func(a *acc, v float64) {
			l := math.Inf(1)
			if v > 0 {
				l = math.Abs(math.Log(v / w.r))
			}
			a.capped += math.Min(l, logG)
			a.logs = append(a.logs, l)
			a.n++
		}
		for k := 0; k < K; k++ {
			c := hoObserve(rng, w)
			var out estimators.Estimates
			best, ok := c.Estimate(c.Span(), cfg, &out)
			if !ok {
				continue
			}
			chosen[best.Key]++
			add(accs["best"], best.Rate)
			if best.HasCI {
				withCI++
				if best.Lo <= w.r && w.r <= best.Hi {
					covered++
				}
				if best.Lo <= lp && lp <= best.Hi {
					coveredP++
				}
			}
			logsP = append(logsP, absLog(best.Rate, lp))
			for _, key := range keys {
				if x, ok := out.Get(key); ok {
					add(accs[key], x.Rate)
				}
			}
		}
		b := accs["best"]
		lowest, lowKey := math.Inf(1), ""
		for _, key := range keys {
			a := accs[key]
			if a.n != b.n || a.n == 0 {
				continue
			}
			if m := a.capped / float64(a.n); m < lowest {
				lowest, lowKey = m, key
			}
		}
		mean := b.capped / float64(b.n)
		sort.Float64s(b.logs)
		cov := float64(covered) / float64(withCI)
		covP := float64(coveredP) / float64(withCI)
		rows = append(rows, []string{w.name, keyCounts(chosen), f3(mean), f3(b.logs[len(b.logs)/2]), fmt.Sprintf("%s %s", lowKey, f3(lowest)), pct(cov),
			f3(lp / w.r), f3(medianOf(logsP)), pct(covP)})
		checks = append(checks, atMost(w.name+": mean capped |log| ÷ lowest single estimator's", mean/lowest, 1.03,
			"within 3 % of the best single paper estimator (the mean's sampling error at K runs is ≈ 1.5 %)"))
		checks = append(checks, coverageCheck(w.name+": coverage of the published interval", cov, withCI, "issue 31: 93–97 % of true rates"))
		if lp != w.r {
			idChecks = append(idChecks, coverageCheck(w.name+": coverage of the identified rate λ_p (H6)", covP, withCI,
				"the 95 % interval's coverage of what the visits identify"))
		}
	}
	r.Table([]string{"world", "published", "mean capped |log|", "median |log|", "lowest single", "coverage", "λ_p/λ", "median |log| to λ_p", "coverage of λ_p"}, rows)
	r.P("**What the visits identify.** On regular visits without Last-Modified every estimator sees only whether each interval held a " +
		"change. In a stationary renewal world that happens with probability p = λ∫₀¹(1 − F(s))ds (H5; F the change intervals' " +
		"distribution), which the estimators read through the Poisson relation as λ_p = −ln(1 − p) (H6): λ_p = λ for Poisson changes, " +
		"below λ for bursty ones (several changes fall in one interval and count once) and above it for nearly periodic ones (almost every " +
		"interval holds exactly one). The columns λ_p/λ (computed by quadrature, `identifiedRate`), the median |log| to λ_p and the coverage " +
		"of λ_p show that the published estimate is centred on λ_p; λ itself is not identified by the per-interval change probability, " +
		"so no interval built from it can be calibrated for λ in every renewal world. The remaining miss of λ_p's coverage is the serial " +
		"dependence of the intervals' change flags, which the binomial likelihood of every visit estimator treats as independent.")
	r.Verdict("held-out worlds", "issue 31: the rule is good on worlds it was not derived on; 93–97 % coverage in every regime",
		"the published estimate", checks, "")
	r.Verdict("held-out non-Poisson worlds, identified rate", "the published interval covers what regular visits identify, λ_p (H6)",
		"the published estimate's 95 % interval", idChecks, "")
}
