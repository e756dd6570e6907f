package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"io"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"gonum.org/v1/gonum/stat/distuv"
)

// The published estimate on real histories, scored on the next year
// (issue 31, item 5).
//
// A design observes one training year of a php/doc-en page: the exact
// events (a complete change log, as ingest --format=changes-tsv gives),
// or a daily or weekly crawler's view (changed/unchanged at each visit).
// Each predictor's rate λ̂ predicts the page's count y in the following
// year, μ = λ̂·T; it is scored by the Poisson deviance
//
//	d(y, μ) = 2·[y·log(y/μ) − (y − μ)]                                    (N1)
//
// (y log y = 0 at y = 0; μ is floored at μ_min = 0.01, one change in a
// century, so that a rate of 0 is charged a finite, large deviance), and by
// |log(λ̂/(y/T))| over the pages with y > 0. Pages are bucketed by the
// changes the design saw in the training year: 0, 1–4, 5+.

// nyMuMin is μ_min of (N1).
const nyMuMin = 0.01

// nyPredictors are the predictors compared, in table order.
var nyPredictors = []string{"published", "naive", "nutch", "global", "oracle", "pooled"}

// nyPage is one page's predictions in one design and year.
type nyPage struct {
	seen   int64 // changes the design saw in the training year
	y      int64 // true changes in the test year
	rate   [6]float64
	ev     estimators.Evidence
	evOK   bool
	lo, hi float64 // the published estimate's 95 % interval (hasCI)
	hasCI  bool
	key    string // the published estimator
}

// nutchRate is Apache Nutch's AdaptiveFetchSchedule on its own visits over
// the training year: the interval starts at start (the crawler's), shrinks
// by DEC_FACTOR 0.2 after a visit that saw a change and grows by
// INC_FACTOR 0.4 after one that did not, within [1 day, 365 days]
// (AdaptiveFetchSchedule's defaults, with min and max intervals of a
// daily-to-yearly crawler); its rate is 1/interval at the year's end.
func nutchRate(events []float64, t0, t1, start float64) float64 {
	const day = 86400.0
	iv := start
	t := t0
	j := 0
	for j < len(events) && events[j] <= t0 {
		j++
	}
	for t+iv <= t1 {
		next := t + iv
		changed := false
		for j < len(events) && events[j] <= next {
			changed = true
			j++
		}
		if changed {
			iv *= 1 - 0.2
		} else {
			iv *= 1 + 0.4
		}
		iv = math.Min(math.Max(iv, day), 365*day)
		t = next
	}
	return 1 / iv
}

// nyDesign observes one page's training year and returns the published
// estimate (with interval), naive, and the changes seen.
func nyDesign(cfg *estimators.Config, events []float64, t0, t1, interval float64) (pub estimators.Estimate, pubOK bool, naive float64, seen int64, ev estimators.Evidence, evOK bool) {
	if interval == 0 { // exact events: (E3) with the year as exposure
		for _, x := range events {
			if x > t0 && x <= t1 {
				seen++
			}
		}
		T := t1 - t0
		a, b := float64(seen)+estimators.EventPriorShape, T+cfg.EventPriorExposure
		g := distuv.Gamma{Alpha: a, Beta: b}
		return estimators.Estimate{Key: estimators.KeyPoissonEvents, Rate: a / b, Lo: g.Quantile(0.025), Hi: g.Quantile(0.975), HasCI: true}, true, float64(seen) / T, seen,
			estimators.Evidence{X: float64(seen), E: T}, true
	}
	var c estimators.Change
	c.Visit(estimators.Visit{Time: t0})
	j := 0
	for j < len(events) && events[j] <= t0 {
		j++
	}
	for t := t0 + interval; t <= t1+1; t += interval {
		ch := false
		for j < len(events) && events[j] <= t {
			ch = true
			j++
		}
		c.Visit(estimators.Visit{Time: t, Changed: ch})
	}
	var out estimators.Estimates
	pub, pubOK = c.Estimate(t1, cfg, &out)
	if nv, ok := out.Get(estimators.KeyNaive); ok {
		naive = nv.Rate
	}
	ev, evOK = c.Evidence(cfg)
	return pub, pubOK, naive, c.Changes(), ev, evOK
}

// deviance is (N1).
func deviance(y int64, mu float64) float64 {
	mu = math.Max(mu, nyMuMin)
	Y := float64(y)
	d := mu - Y
	if y > 0 {
		d += Y * math.Log(Y/mu)
	}
	return 2 * d
}

// poissonQuantile is the smallest k with P(Y ≤ k) ≥ p, Y ~ Poisson(mu).
func poissonQuantile(mu, p float64) int64 {
	if mu <= 0 {
		return 0
	}
	P := distuv.Poisson{Lambda: mu}
	k := int64(math.Max(0, math.Floor(mu-10*math.Sqrt(mu)-1)))
	for P.CDF(float64(k)) < p {
		k++
	}
	return k
}

// nyBucket is the bucket of a count seen: 0, 1–4, 5+.
func nyBucket(seen int64) int {
	switch {
	case seen == 0:
		return 0
	case seen <= 4:
		return 1
	}
	return 2
}

var nyBucketNames = [3]string{"0", "1–4", "5+"}

// nyRatioCI is the ratio of the mean deviances of predictors a and b over
// pages, with a 95 % bootstrap interval (B resamples of the pages).
func nyRatioCI(pages []nyPage, a, b int, T float64, rng *rand.Rand, B int) (ratio, lo, hi float64) {
	sum := func(idx func(i int) int) float64 {
		var da, db float64
		for i := range pages {
			p := &pages[idx(i)]
			da += deviance(p.y, p.rate[a]*T)
			db += deviance(p.y, p.rate[b]*T)
		}
		return da / db
	}
	ratio = sum(func(i int) int { return i })
	rs := make([]float64, B)
	for k := range rs {
		rs[k] = sum(func(int) int { return rng.IntN(len(pages)) })
	}
	sort.Float64s(rs)
	return ratio, rs[int(0.025*float64(B))], rs[int(0.975*float64(B))-1]
}

func nextYearSection(e *Env) {
	r := e.R
	r.H(2, "The published estimate on real histories, scored on the next year (issue 31)")
	pages := e.phpPages
	if pages == nil {
		p, _, err := readPHP(e.Data)
		if err != nil {
			r.P("Skipped: %v (pass --data).", err)
			e.dataMissing = append(e.dataMissing, err.Error())
			return
		}
		pages = p
	}
	const day = 86400.0
	const year = 365 * day
	r.P("php/doc-en pages (bulk commits removed: commits touching ≥ 200 files) that existed at the start of a training year (first commit before it). "+
		"Designs: the **exact** events (the git log as taken at the end of the training year: every commit of every page up to then, "+
		"`ingest --format=changes-tsv`, a complete history), and a **daily** and a **weekly** crawler's view of the training year "+
		"(changed/unchanged at each visit of https://doc.php.net/doc-en/PAGE, observation JSON lines, `ingest --format=jsonl`). "+
		"**Published** is what the programs publish: each design's input goes through `ingest … --out=- - | aggregator --in=- "+
		"--store=memory --out=- --emit=final` built from this repository, and each page's final `rate_per_s`, `estimator` and `ci95` are "+
		"scored (the crawler designs' pages are one site, so pages with fewer than 5 changes publish `pooled` under the site's stored prior, "+
		"`aggregate/siteprior.go`; the changes-tsv paths have no host: their population is the partition's hostless objects, every path of the log, "+
		"whose prior's evidence is each path's whole history with the exposure to the end of the log, `estimators.PoolStats.PriorAt`, and whose "+
		"changes and exposure per calendar year give the population's trend, `estimators/trend.go`: every path publishes `pooled`, its whole "+
		"history on the trend-weighted exposure (each year's exposure weighted by that year's population level over the current one), the "+
		"posterior mean under the prior rescaled to the current level; a page "+
		"without a published rate — a path with a single commit — is scored with the global rate and counted as `none`). "+
		"Each predictor's rate predicts the page's commits in the following year; scored by the Poisson "+
		"deviance 2[y log(y/μ) − (y − μ)] (μ floored at %.2f changes a year, so that a rate of 0 is charged a finite, large deviance) and "+
		"by the median |log(λ̂/(y/T))| over pages with y > 0 (a rate of 0 counts as ∞). Other predictors, computed here from the "+
		"design's view of the training year: **naive** "+
		"(changes seen / T); Apache Nutch's **AdaptiveFetchSchedule** on its own visits (starting at the crawler's interval, ×0.8 after a "+
		"change, ×1.4 otherwise, within [1, 365] days; rate 1/interval; for the exact design it starts weekly); one **global** rate (all "+
		"changes seen / all exposure of the design) for every page; the **oracle**, the training year's exact count / T (what no crawler "+
		"sees); the **pooled** estimate computed directly (`estimators.Pooled`: the posterior mean under a Gamma prior fitted by moments "+
		"to every page's evidence of the training year — a check of the aggregator's site prior, and the pooled estimate the exact design "+
		"would get if its pages had a site). Buckets: changes the design saw in the training year. Deviance ratios carry a 95 %% bootstrap "+
		"interval (%d resamples of the bucket's pages). Coverage: the share of pages whose next-year count lies in the 95 %% predictive "+
		"interval [Q(0.025; lo·T), Q(0.975; hi·T)] of the published estimate's interval [lo, hi] (Q the Poisson quantile).",
		nyMuMin, e.reps(400, 100))
	cfg := newEstConfig()
	B := e.reps(400, 100)
	type design struct {
		name     string
		interval float64
	}
	designs := []design{{"exact events", 0}, {"daily crawler", day}, {"weekly crawler", 7 * day}}
	years := []int{2020, 2022, 2024}
	if e.Quick {
		years = []int{2022}
	}
	// Pages in name order: the bootstrap resamples by index, so the report
	// is the same at every run.
	names := make([]string, 0, len(pages))
	for k := range pages {
		names = append(names, k)
	}
	sort.Strings(names)
	var checks, pooledChecks []check
	rng := rand.New(rand.NewPCG(e.Seed, 31))
	binDir, cleanup, err := nyTempDir()
	if err != nil {
		r.P("Skipped: %v.", err)
		return
	}
	defer cleanup()
	bins, err := buildNYBins(binDir)
	if err != nil {
		r.P("Skipped: %v.", err)
		e.dataMissing = append(e.dataMissing, err.Error())
		return
	}
	for _, d := range designs {
		r.H(3, d.name)
		header := []string{"year", "bucket", "pages", "published estimators"}
		for _, p := range nyPredictors {
			header = append(header, "dev. "+p)
		}
		header = append(header, "pub./naive", "pub./global", "pooled/naive", "pooled/global", "med. |log| pub.", "med. |log| naive", "coverage pub.")
		var rows [][]string
		for _, y := range years {
			t0 := float64(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
			t1, t2 := t0+year, t0+2*year
			// What the programs publish for this design (nextyear_cli.go).
			var recs map[string]records.Estimate
			if d.interval == 0 {
				recs, err = bins.run("changes-tsv", func(w io.Writer) error { return writeChangesTSV(w, names, pages, t1) })
			} else {
				recs, err = bins.run("jsonl", func(w io.Writer) error { return writeVisits(w, names, pages, t0, t1, d.interval) })
			}
			if err != nil {
				r.P("Skipped %s %d: %v.", d.name, y, err)
				e.dataMissing = append(e.dataMissing, err.Error())
				continue
			}
			var ps []nyPage
			var sumSeen, sumT float64
			for _, name := range names {
				ev := pages[name]
				if len(ev) == 0 || ev[0] >= t0 {
					continue
				}
				pub, ok, naive, seen, evd, evOK := nyDesign(cfg, ev, t0, t1, d.interval)
				if !ok {
					continue
				}
				var p nyPage
				p.seen = seen
				var truth int64
				for _, x := range ev {
					switch {
					case x > t0 && x <= t1:
						truth++
					case x > t1 && x <= t2:
						p.y++
					}
				}
				start := d.interval
				if start == 0 {
					start = 7 * day
				}
				p.rate = [6]float64{pub.Rate, naive, nutchRate(ev, t0, t1, start), 0, float64(truth) / year, 0}
				p.ev, p.evOK = evd, evOK
				_ = pub
				obj := name
				if d.interval > 0 {
					obj = nyURL(name)
				}
				p.key = "none"
				if rec, ok := recs[obj]; ok && rec.Gone {
					p.key = "gone"
				} else if ok && rec.RatePerS != nil {
					p.rate[0], p.key = *rec.RatePerS, rec.Estimator
					if rec.CI95 != nil {
						p.lo, p.hi, p.hasCI = rec.CI95[0], rec.CI95[1], true
					}
				} else {
					p.rate[0] = math.NaN() // scored with the global rate below
				}
				sumSeen += float64(seen)
				sumT += year
				ps = append(ps, p)
			}
			global := sumSeen / sumT
			// The pooled estimate (estimators/pooled.go): a Gamma prior
			// fitted by moments to every page's evidence in the design
			// (the population: php/doc-en is one site), then each page's
			// posterior mean. Pages without evidence keep naive.
			var pool estimators.PoolStats
			for _, p := range ps {
				if p.evOK {
					pool.Add(p.ev, 1)
				}
			}
			prior, priorOK := pool.Prior()
			for i := range ps {
				ps[i].rate[3] = global
				ps[i].rate[5] = ps[i].rate[1]
				if math.IsNaN(ps[i].rate[0]) {
					ps[i].rate[0] = global
				}
				if priorOK && ps[i].evOK {
					if e, ok := estimators.Pooled(prior, ps[i].ev, cfg); ok {
						ps[i].rate[5] = e.Rate
					}
				}
			}
			for b := 0; b < 3; b++ {
				var in []nyPage
				for _, p := range ps {
					if nyBucket(p.seen) == b {
						in = append(in, p)
					}
				}
				if len(in) == 0 {
					continue
				}
				keys := map[string]int{}
				var dev [6]float64
				var lp, ln []float64
				cov, covN := 0, 0
				for _, p := range in {
					keys[p.key]++
					for k := range dev {
						dev[k] += deviance(p.y, p.rate[k]*year) / float64(len(in))
					}
					if p.y > 0 {
						truth := float64(p.y) / year
						lp = append(lp, absLog(p.rate[0], truth))
						ln = append(ln, absLog(p.rate[1], truth))
					}
					if p.hasCI {
						covN++
						if q := p.y; q >= poissonQuantile(p.lo*year, 0.025) && q <= poissonQuantile(p.hi*year, 0.975) {
							cov++
						}
					}
				}
				rn, rnLo, rnHi := nyRatioCI(in, 0, 1, year, rng, B)
				rg, rgLo, rgHi := nyRatioCI(in, 0, 3, year, rng, B)
				pn, pnLo, pnHi := nyRatioCI(in, 5, 1, year, rng, B)
				pg, pgLo, pgHi := nyRatioCI(in, 5, 3, year, rng, B)
				covShare := math.NaN()
				if covN > 0 {
					covShare = float64(cov) / float64(covN)
				}
				row := []string{fmt.Sprint(y), nyBucketNames[b], fmt.Sprint(len(in)), keyCounts(keys)}
				for k := range dev {
					row = append(row, f3(dev[k]))
				}
				row = append(row, fmt.Sprintf("%s [%s, %s]", f3(rn), f3(rnLo), f3(rnHi)), fmt.Sprintf("%s [%s, %s]", f3(rg), f3(rgLo), f3(rgHi)),
					fmt.Sprintf("%s [%s, %s]", f3(pn), f3(pnLo), f3(pnHi)), fmt.Sprintf("%s [%s, %s]", f3(pg), f3(pgLo), f3(pgHi)),
					f3(medianOf(lp)), f3(medianOf(ln)), pct(covShare))
				rows = append(rows, row)
				tag := fmt.Sprintf("%s %d bucket %s", d.name, y, nyBucketNames[b])
				switch b {
				case 0:
					checks = append(checks, atMost(tag+": deviance published/global", rg, 1, "issue 31: no worse than one global rate for pages seen not to change"))
					pooledChecks = append(pooledChecks, atMost(tag+": deviance pooled/global", pg, 1, "issue 31: no worse than one global rate for pages seen not to change"))
				case 1:
					checks = append(checks, atMost(tag+": deviance published/naive", rn, 1, "issue 31: no worse than naive for pages seen to change 1–4 times"))
					pooledChecks = append(pooledChecks, atMost(tag+": deviance pooled/naive", pn, 1, "issue 31: no worse than naive for pages seen to change 1–4 times"))
				}
				// The share covered on covN pages has the binomial sampling
				// error √(0.9·0.1/covN) at the target: the check allows two.
				covMin := 0.90 - 2*math.Sqrt(0.9*0.1/float64(max(covN, 1)))
				checks = append(checks, atLeast(tag+": coverage of next-year counts", covShare, covMin,
					fmt.Sprintf("issue 31: 95 %% predictive intervals cover ≥ 90 %% of next-period counts, widened by 2·√(0.9·0.1/n), the binomial sampling error of a share of n = %d pages", covN)))
			}
		}
		r.Table(header, rows)
	}
	r.Verdict("next-year deviance and coverage (php/doc-en)", "issue 31's targets (no worse than naive at 1–4 changes, than a global rate at 0; coverage ≥ 90 %)",
		"the published estimate of each design", checks, "")
	r.Verdict("next-year deviance of the pooled estimate (php/doc-en)", "issue 31's targets for sparse pages (item 3)",
		"the pooled (empirical-Bayes) estimate with one prior fitted to the design's pages", pooledChecks, "")
}

// absLog is |log(est/truth)|, +Inf for an estimate of 0.
func absLog(est, truth float64) float64 {
	if !(est > 0) {
		return math.Inf(1)
	}
	return math.Abs(math.Log(est / truth))
}

// medianOf is the median of xs (NaN for none).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// keyCounts lists estimator keys with their counts, most used first.
func keyCounts(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var s []kv
	for k, n := range m {
		s = append(s, kv{k, n})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].n > s[j].n || (s[i].n == s[j].n && s[i].k < s[j].k) })
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", x.k, x.n)
	}
	return out
}
