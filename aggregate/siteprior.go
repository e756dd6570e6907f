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

// foldPrior replaces the object's previous evidence (before, when had) by
// its current one in its population's prior statistics pool.
func foldPrior(pool *estimators.PoolStats, before estimators.Evidence, had bool, o *Object, m *Model) {
	if had {
		pool.Remove(before, 1)
	}
	if ev, ok := o.Change.Evidence(&m.Estimators); ok {
		pool.Add(ev, 1)
	}
}

// sitePrior returns the object's pooled estimate under its site's prior
// when the rule above publishes it; scratch's quantile memo (nil: none)
// serves the objects of a site that share a quantile of its prior.
func (o *Object) sitePrior(m *Model, site *SiteState, partAsOf int64, scratch *estimators.Estimates) (estimators.Estimate, bool) {
	if site == nil || o.Change.Changes() >= estimators.PooledMaxChanges {
		return estimators.Estimate{}, false
	}
	// The complete histories' exposures run to the partition's as-of
	// time, in the prior's sums as in the object's own evidence.
	var part float64
	if partAsOf > 0 {
		part = seconds(partAsOf)
	}
	prior, ok := site.Pool.PriorAt(part)
	if !ok {
		return estimators.Estimate{}, false
	}
	e, ok := o.Change.PooledEstimateIn(prior, seconds(o.estimateTime(partAsOf)), &m.Estimators, scratch)
	if !ok || !finite(e.Rate) || !(e.Rate > 0) {
		return estimators.Estimate{}, false
	}
	return e, true
}

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
