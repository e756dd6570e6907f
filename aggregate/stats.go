package aggregate

import "sync/atomic"

// Stats counts what a Processor did since it was created, over all
// partitions: what the end-of-run summary of the filter mode prints. The
// same counts are exported as metrics.
type Stats struct {
	// Messages is the input messages handled; Rejected those that did not
	// decode (dead-lettered, reason "decode").
	Messages, Rejected int64
	// Future counts the observations not applied because their event time
	// lay more than Config.MaxFuture ahead of the clock (dead-lettered,
	// reason "future").
	Future int64
	// Observations decoded (and not Future); of them Applied (changed the state),
	// Duplicates, NoInformation (a visit that says nothing about change),
	// Late (beyond the allowed lateness: written to the late output).
	Observations, Applied, Duplicates, NoInformation, Late int64
	// Reordered counts observations that arrived before the latest event
	// time seen on their partition (put in order by the reorder buffer, or
	// applied at once and, if need be, at their object's latest time).
	Reordered int64
	// AppliedAtLatest counts the observations applied at their object's
	// latest time because they were older than it (within the allowed
	// lateness); a visit among them counts as NoInformation unless it
	// carries an explicit change flag (its content is older than the
	// digest or Last-Modified held).
	AppliedAtLatest int64
	// Objects is the objects seen for the first time (no stored state).
	Objects int64
	// ChangeEstimates and AccessEstimates count published estimates;
	// FinalObjects counts, for EmitFinal, the objects published. Of them,
	// FinalWithRate counts those with a change or access rate above 0 (a
	// best estimate, RatePerS, > 0), FinalZeroRate those whose best
	// estimates are all 0 (visited, never seen changed); the others have
	// no best estimate yet (fewer than MinIntervals intervals: only each
	// estimator's value).
	ChangeEstimates, AccessEstimates int64
	// RatedEstimates counts the published estimates that carry a rate.
	RatedEstimates                             int64
	FinalObjects, FinalWithRate, FinalZeroRate int64
	// Alerts counts the published alert records, SiteAlerts those of
	// them that are site alerts; Candidates counts the confirmed rate
	// shifts and silences by what became of them (the outcome labels of
	// changerate_aggregator_alert_candidates_total: "alerted",
	// "learning", "not_established", …).
	Alerts, SiteAlerts int64
	Candidates         map[string]int64
	// SitemapUse counts the sitemap lastmods by what became of them
	// (index SitemapEvidence, SitemapCrawled, SitemapUntrusted) and
	// SitemapAgree, SitemapDisagree the checks of lastmods against visits
	// that were decided (sitemap_trust.go).
	SitemapUse                    [4]int64
	SitemapAgree, SitemapDisagree int64
}

type statCounters struct {
	messages, rejected, future, observations, applied, duplicates, noInfo, late, reordered, atLatest atomic.Int64
	objects, changeEst, accessEst, rated, finalObjects, finalWithRate, finalZeroRate                 atomic.Int64
	alerts, siteAlerts                                                                               atomic.Int64
	candidates                                                                                       [numOutcomes]atomic.Int64
	sitemapUse                                                                                       [4]atomic.Int64
	sitemapAgree, sitemapDisagree                                                                    atomic.Int64
}

// Stats returns the processor's counts so far.
func (p *Processor) Stats() Stats {
	s := &p.stats
	st := Stats{
		Messages: s.messages.Load(), Rejected: s.rejected.Load(), Future: s.future.Load(), Observations: s.observations.Load(),
		Applied: s.applied.Load(), Duplicates: s.duplicates.Load(), NoInformation: s.noInfo.Load(),
		Late: s.late.Load(), Reordered: s.reordered.Load(), AppliedAtLatest: s.atLatest.Load(), Objects: s.objects.Load(),
		ChangeEstimates: s.changeEst.Load(), AccessEstimates: s.accessEst.Load(), RatedEstimates: s.rated.Load(),
		FinalObjects: s.finalObjects.Load(), FinalWithRate: s.finalWithRate.Load(), FinalZeroRate: s.finalZeroRate.Load(),
		Alerts: s.alerts.Load(), SiteAlerts: s.siteAlerts.Load(), Candidates: map[string]int64{},
		SitemapUse:   [4]int64{0, s.sitemapUse[1].Load(), s.sitemapUse[2].Load(), s.sitemapUse[3].Load()},
		SitemapAgree: s.sitemapAgree.Load(), SitemapDisagree: s.sitemapDisagree.Load(),
	}
	for i, o := range candidateOutcomes {
		if n := s.candidates[i].Load(); n > 0 {
			st.Candidates[o] = n
		}
	}
	return st
}

// countOutcomes adds one batch's outcome counts.
func (s *statCounters) countOutcomes(outcomes []int) {
	s.applied.Add(int64(outcomes[Applied]))
	s.duplicates.Add(int64(outcomes[Duplicate]))
	s.noInfo.Add(int64(outcomes[NoInformation]))
	s.late.Add(int64(outcomes[Late]))
}

// countRated counts a published estimate, noting whether it has a rate
// (rate, its RatePerS, not nil) and whether that rate is above 0.
func (w *worker) countRated(rate *float64) {
	if rate != nil {
		w.p.stats.rated.Add(1)
		w.rated = true
		w.ratedAbove0 = w.ratedAbove0 || *rate > 0
	}
}
