package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/records"
)

// The plan's posterior (issue 33). /v1/plan's default (freshness) policy
// plans every visited object on its tempered posterior (estimators/
// tempered.go T1): its evidence counted ω times under its population's
// prior, Gamma(α₀ + ωX, β₀ + ωE), ω chosen per site by the one-step
// predictive likelihood of its objects' visits (T3). The published rate
// and interval stay the stationary ones (rate_per_s, ci95); the record
// carries what the plan's posterior is made of beside them
// (plan_evidence: the object's X and E; plan_prior and plan_omega: its
// site's prior and ω as of the record), so that the query API's index,
// which sees the records only, plans every object on its evidence under
// its site's latest prior and ω (a record is published at the object's
// visits; the prior and ω move with every visit of the site, and a page
// planned on an old ω would keep it until its next visit, which that ω
// may never buy).
//
// The site keeps S(ω) for every ω of estimators.TemperGrid (SiteState.
// Temper, one float64 each): at every applied visit of one of its
// objects that closes a visit interval (not the baseline, not a complete
// history's event: its events are changes, not visits that may find
// none), the interval d since the object's previous visit and whether
// the visit saw a change are scored under the object's evidence and the
// site's prior as they stood before the visit (scoreTemper, called
// before foldPrior takes the visit in). It is O(TemperPoints) per visit,
// depends on the visits alone, and a replay of the same input rebuilds
// the same sums.

// scoreTemper adds object o's visit that just closed an interval to the
// site's scores: pt and px are the object's latest visit time and change
// count before the visit, before its evidence then, pool the site's
// prior's statistics before the visit. temper nil: none kept.
func scoreTemper(temper *[estimators.TemperPoints]float64, pool *estimators.PoolStats, before estimators.Evidence, o *Object, pt float64, px int64) {
	if temper == nil || o.Change.Complete() {
		return
	}
	prior, ok := pool.Prior()
	if !ok {
		return
	}
	d := o.Change.LastVisit() - pt
	estimators.TemperScore(temper, prior, before, d, o.Change.Changes() > px)
}

// planGamma is the object's plan posterior (T1) under its site's prior
// and chosen ω, as of the partition's as-of partAsOf (Unix ms; 0: none),
// with the prior and evidence it is made of; ok is false for a complete
// history, without a prior or evidence.
func (o *Object) planGamma(m *Model, site *SiteState, partAsOf int64) (g, prior estimators.GammaPrior, ev estimators.Evidence, omega float64, ok bool) {
	if site == nil || o.Change.Complete() {
		return g, prior, ev, 0, false
	}
	var part float64
	if partAsOf > 0 {
		part = seconds(partAsOf)
	}
	prior, ok = site.Pool.PriorAt(part)
	if !ok {
		return g, prior, ev, 0, false
	}
	ev, ok = o.Change.Evidence(&m.Estimators)
	if !ok || !(ev.X >= 0) || !(ev.E >= 0) || !finite(ev.X) || !finite(ev.E) {
		return g, prior, ev, 0, false
	}
	omega, _ = estimators.TemperChoose(&site.Temper)
	g = estimators.Tempered(prior, ev, omega)
	mean := g.Mean()
	if !(g.Shape > 0) || !(mean > 0) || !finite(mean) || !finite(g.Shape) {
		return g, prior, ev, 0, false
	}
	return g, prior, ev, omega, true
}

// publishPlan sets the record's plan fields (records.Estimate.
// PlanEvidence) when the object has a plan posterior.
func (o *Object) publishPlan(rec *records.Estimate, st *recordStore, m *Model, site *SiteState, partAsOf int64) {
	_, prior, ev, omega, ok := o.planGamma(m, site, partAsOf)
	if !ok {
		return
	}
	rec.PlanEvidence, rec.PlanPrior, rec.PlanOmega = st.pair(ev.X, ev.E), st.pair(prior.Shape, prior.Rate), st.float(omega)
}

// decodeTemper reads the tempering scores of a version-5 site: a uvarint
// count, then as many float64 sums of log probabilities (each ≤ 0). A
// count other than the grid's (a state written with another grid) drops
// the scores: they start again from the next visit.
func decodeTemper(r *wire.Reader, t *[estimators.TemperPoints]float64) error {
	n := r.Uvarint()
	if err := r.Err(); err != nil {
		return err
	}
	if n == 0 || n > 64 {
		return fmt.Errorf("%d tempering scores", n)
	}
	var v [64]float64
	for i := range v[:n] {
		v[i] = r.Float64()
		if r.Err() == nil && (math.IsInf(v[i], 0) || !(v[i] <= 0)) {
			return fmt.Errorf("tempering score %v", v[i])
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if n == uint64(estimators.TemperPoints) {
		copy(t[:], v[:n])
	}
	return nil
}

// appendTemper appends the scores (SiteState.AppendBinary, version 5).
func appendTemper(dst []byte, t *[estimators.TemperPoints]float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(t)))
	for _, v := range t {
		dst = wire.AppendFloat64(dst, v)
	}
	return dst
}
