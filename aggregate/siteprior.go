package aggregate

import (
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
)

// The site's change-rate prior, stored with its seasonal state (issue 31).
//
// Objects seen to change a few times, or not at all, are where a single
// object's estimate is weakest (docs/eval/NEXTYEAR.md: on php/doc-en's next
// year, bayes_beta's uniform prior and poisson_events' ½ change give pages
// seen to change 1–4 times 1.4–1.8 times naive's Poisson deviance). Each
// site's SiteState keeps the sufficient statistics of a Gamma prior over
// its objects' current evidence (estimators.PoolStats, moment fit of
// Clayton & Kaldor): every visit that changes an object's change state
// removes the object's previous evidence and adds its new one, so the sums
// are always those of the site's objects as they stand. They are stored
// with the site's profiles (SiteKeyPrefix + host) and written with every
// batch that touches the site, so a replay of the same input rebuilds them
// and the query API, which builds an estimate from the object's and its
// site's stored states, publishes what the aggregator published at the end
// of the input (with --emit=final, every object's estimate uses the final
// prior; in update mode an estimate uses the prior as of its
// publication). The state is O(1) per site: five sums.
//
// An object with fewer than estimators.PooledMaxChanges changes whose site
// has a prior (at least estimators.MinPoolObjects objects with evidence)
// publishes the pooled estimate — the mean of its Gamma(α + x, β + e)
// posterior (the Bayes act for the next period's Poisson deviance,
// estimators/pooled.go P1), with the equal-tailed credible interval — as
// rate_per_s. On php/doc-en's next year through ingest and the aggregator
// (docs/eval/NEXTYEAR.md, daily and weekly crawlers of one site) its
// deviance is below one global rate's for pages seen not to change and
// below naive's for pages seen to change 1–4 times.
//
// Objects without a host (changes-tsv paths, a git log's files) belong to
// the population of the partition's hostless objects: their prior is kept
// in the SiteState of the site "" (key SiteKeyPrefix alone; a changes-tsv
// path never starts with '#', a comment, so no path collides with it),
// stored, replayed and read by the query API like a site's. With seasonal
// baselines off (Seasonal.LearningPeriod = 0) the prior does not vanish:
// every site still keeps its SiteState, with its prior alone (PriorOnly:
// the profiles are neither learned nor used, and the sitemap checks are
// kept as without a site). The prior's sums depend on the objects'
// evidence only, so an object's pooled estimate is the same with seasonal
// baselines on and off.
//
// A complete history's evidence (estimators.Change.EvidenceAt) is open:
// its exposure runs from its baseline to the as-of time, as its own
// poisson_events estimate's does (estimators/events.go E1), and the
// prior's sums keep it open (estimators.PoolStats.PriorAt, P2). The prior
// is fitted as of the partition's as-of time (the latest event time; the
// whole input's with --emit=final; the query API reads the stored one),
// and the object's posterior uses its evidence as of the same time, so a
// path quiet since its last change is evidence of a quiet path until the
// end of the log, not a burst of changes.
//
// The population's trend. The same SiteState keeps, for its complete
// histories, the population's changes and exposure per calendar year
// (estimators.Trend: at most estimators.MaxTrendPeriods closed years, the
// oldest merged beyond; counted in foldPrior from each history's baseline
// and each new change), stored and replayed with the prior. When its
// level is measured well enough (estimators/trend.go T4), every complete
// history of the population publishes the pooled estimate on the trend
// (T7): its whole history on the exposure weighted by each year's level
// relative to now, under the prior rescaled to the current level, with
// any number of changes (poisson_trend, T6, from PooledMaxChanges changes
// where the population has no prior). Visit-based objects have no trend:
// a visit says whether an interval changed, not how many changes fell in
// which year, so their exposure per year is not known, and a crawler's
// one-year view has no history to weigh (the crawler designs of
// docs/eval/NEXTYEAR.md meet issue 31's targets without one). On
// php/doc-en's next year (docs/eval/NEXTYEAR.md, exact events) it brings
// the files seen not to change in the training year below one global
// rate's deviance in every scored year.

// The site's spacing factor. The same SiteState keeps the sums of its
// objects' spacing factors (estimators/dependence_pool.go R7: the change
// flags' renewal variance factor R̂ of each object with regular visits,
// weighted by its precision), replaced at every applied visit of an
// object (foldFlags), stored and replayed with the prior. The published
// interval of an object's own estimator on regular visits (naive,
// cgm_improved, bayes_beta, estimators/dependence.go D4) is recomputed on
// the factor of R11 — the object's R̂ shrunk toward its site's by the
// site's spread (R8–R10), used where it widens — so that an object whose
// window holds a few spacings, or none, takes the dependence its site's
// pages show. The query API reads the same stored sums. The pooled
// estimate above, whose posterior reads the flags as independent, takes
// the same factor: its interval is that of the tempered posterior
// prior·L^{1/D} (R12), its point its own.

// foldPrior replaces the object's previous evidence (before, when had) by
// its current one in its population's prior statistics pool, and counts
// a complete history's entry and new changes in the population's trend
// (nil: none; estimators/trend.go T2) at the object's latest time.
func foldPrior(pool *estimators.PoolStats, trend *estimators.Trend, before estimators.Evidence, had bool, o *Object, m *Model) {
	if had {
		pool.Remove(before, 1)
	}
	ev, ok := o.Change.Evidence(&m.Estimators)
	if !ok {
		return
	}
	pool.Add(ev, 1)
	if trend == nil || !ev.Open {
		return
	}
	now := seconds(o.lastTime)
	dx := ev.X
	if had && before.Open {
		dx -= before.X
	} else {
		trend.Enter(ev.Since, now)
	}
	trend.Change(now, dx)
}

// foldFlags replaces the object's previous spacing term (before, when
// had) by its current one in its site's sums flags (estimators/
// dependence_pool.go, R7). Every visit moves n, so every applied visit
// refolds; the term depends on the object's state alone, so the one
// removed is the one added at its previous visit.
func foldFlags(flags *estimators.FlagPool, before estimators.FlagTerm, had bool, o *Object, m *Model) {
	if had {
		flags.Remove(before, 1)
	}
	if t, ok := o.Change.FlagTerm(&m.Estimators); ok {
		flags.Add(t, 1)
	}
}

// sitePrior returns the estimate the population publishes for the object
// when the rule above publishes one: the pooled estimate under its site's
// prior with fewer than estimators.PooledMaxChanges changes; for a
// complete history whose population has a trend (estimators/trend.go),
// on the trend and with any number of changes (T7; without a prior,
// poisson_trend T6 from estimators.PooledMaxChanges changes). scratch's
// quantile memo (nil: none) serves the objects of a site that share a
// quantile of its prior.
func (o *Object) sitePrior(m *Model, site *SiteState, partAsOf int64, scratch *estimators.Estimates) (estimators.Estimate, bool) {
	if site == nil {
		return estimators.Estimate{}, false
	}
	asOf := seconds(o.estimateTime(partAsOf))
	var tv estimators.TrendView
	if o.Change.Complete() && trendComplete(site) {
		tv = site.Trend.At(asOf)
	}
	few := o.Change.Changes() < estimators.PooledMaxChanges
	if !few && !tv.Ok {
		return estimators.Estimate{}, false
	}
	// The complete histories' exposures run to the partition's as-of
	// time, in the prior's sums as in the object's own evidence.
	var part float64
	if partAsOf > 0 {
		part = seconds(partAsOf)
	}
	if prior, ok := site.Pool.PriorAt(part); ok {
		e, ok := o.Change.PooledTrendIn(prior, &tv, asOf, &m.Estimators, scratch)
		if ok && finite(e.Rate) && e.Rate > 0 {
			if !tv.Ok && o.Change.Regular(&m.Estimators) {
				// The interval on the effective sample of the flags'
				// factor (estimators/dependence_pool.go R12).
				fl := siteFlags(site, partAsOf)
				D := o.Change.SiteFlagDependence(&fl, &m.Estimators)
				e = o.Change.PooledDependentIn(e, prior, D, &m.Estimators, scratch)
			}
			return e, true
		}
	}
	if few {
		return estimators.Estimate{}, false
	}
	e, ok := o.Change.PoissonTrend(&tv, asOf, &m.Estimators, scratch)
	return e, ok && finite(e.Rate) && e.Rate > 0
}

// siteFlags is the site's spacing sums with its between-object excess
// (estimators/dependence_between.go, R19) from its prior's sums as of the
// partition's as-of partAsOf (Unix ms; 0: none), the time its prior is
// fitted at (sitePrior).
func siteFlags(site *SiteState, partAsOf int64) estimators.FlagPool {
	var part float64
	if partAsOf > 0 {
		part = seconds(partAsOf)
	}
	return site.Flags.WithExcess(&site.Pool, part)
}

// trendComplete reports whether the site's trend has entered every
// complete history its prior holds (Pool.ON, the histories whose current
// evidence is open; Trend.Objects counts every history entered, never
// fewer). A store written before the trend existed decodes with an empty
// one, and the histories stored then would never enter it (their later
// changes counted, their exposure not): such a trend is not used until a
// replay rebuilds it.
func trendComplete(site *SiteState) bool { return site.Trend.Objects >= site.Pool.ON-0.5 }

// publishPrior makes e the record's published estimate (and lists it in
// estimates).
func publishPrior(rec *records.Estimate, st *recordStore, e estimators.Estimate) {
	st.setRate(rec, e.Key, e.Rate)
	rec.RatePerS, rec.Estimator, rec.CI95 = st.float(e.Rate), e.Key, nil
	if e.HasCI && finite(e.Lo) && finite(e.Hi) {
		st.setInterval(rec, e.Key, e.Lo, e.Hi)
		rec.CI95 = st.pair(e.Lo, e.Hi)
	}
}
