package aggregate

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

// AlertConfig filters rate-shift alerts and adjusts their p-values for the
// number of objects tested.
//
// What an alert means. The windows package confirms a shift in an object's
// access (or change) stream when a CUSUM of the log-likelihood ratio
// crosses its threshold and the points since the change point are
// significantly more (or fewer) than expected under the rate before it
// (conditional binomial test; windows.Segmenter). For accesses the expected
// count is computed under the site's learned daily and weekly profile
// (windows.Profile), so the daily ramp of ordinary traffic is not a shift
// and a burst on top of it is. Each confirmed shift is a candidate; a
// candidate becomes an alert when
//
//  1. the site's learning period is over (Model.Seasonal.LearningPeriod;
//     accesses only),
//  2. its effect is large enough: observed/expected ≥ MinRatio (up) or
//     ≤ 1/MinRatio (down), and it rests on enough points: observed ≥
//     MinEvents (up) or expected ≥ MinEvents (down), and
//  3. it is a discovery of the Benjamini–Hochberg procedure at level FDR
//     among the m objects of the partition observed in its testing period
//     (Period, event time): with the candidates' p-values sorted,
//     p_(1) ≤ … ≤ p_(k), the adjusted p-value is
//     q_(i) = min_{j ≥ i} min(1, p_(j)·m/j), and the alerts are those with
//     q ≤ FDR. Objects without a candidate count as tested (their p-value
//     is above any threshold), so m is the number of objects observed in the
//     period. In expectation at most a fraction FDR of the alerts of a
//     period are false (for independent tests). The p-values are those of
//     the windows' conditional binomial test and are nominal (the change
//     point was chosen by the CUSUM); the operating false-alarm rate is
//     measured by TestAlertTargets and reported in docs/windows-eval.md.
//
// Alerts of a period are published when the partition's event time passes
// the period's end (or at the end of a finite input). When SiteObjects or
// more objects of one site are alerts in the same period and direction,
// one site alert (scope "site", key "site:" + host) lists their number and
// the SiteTop most significant of them instead.
//
// Severity: "critical" when the ratio is ≥ 4 (or ≤ 1/4) and q ≤ FDR/10,
// "major" when the ratio is ≥ 2 (or ≤ 1/2), else "minor"; a site alert
// takes the highest severity of its objects.
//
// Start from DefaultAlertConfig: a field means what it holds, 0 included
// where it documents a meaning for 0 (see WithDefaults).
type AlertConfig struct {
	// Period is the testing period of the multiple-testing adjustment (and
	// the most an alert is held back). Default 1h; ≥ 1s.
	Period time.Duration
	// FDR is the Benjamini–Hochberg level per period. Default 0.01; in
	// (0, 1]. 1 disables the adjustment's filtering (q-values are still
	// published).
	FDR float64
	// MinRatio is the least effect size: observed/expected count ≥
	// MinRatio for an increase, ≤ 1/MinRatio for a decrease. Default 2;
	// ≥ 1.
	MinRatio float64
	// MinEvents is the least number of points behind an alert: observed
	// (increase) or expected (decrease) count since the change point.
	// 0 requires none. Default 8.
	MinEvents int64
	// SiteObjects is the number of objects of one site shifting in the same
	// period and direction that makes one site alert of them; 0 disables
	// site alerts. Default 3.
	SiteObjects int
	// SiteTop is the number of objects a site alert lists. Default 5; ≥ 1.
	SiteTop int
	// MaxPending bounds the candidates held per partition and period (the
	// ones with the largest p-values are dropped first and counted as
	// overflow). The held candidates are stored with every batch (about
	// 1.2 kB each, key AlertsKey), so this also bounds that value. Default
	// 1000; ≥ 1.
	MaxPending int
	// StrictPValue is the level of the tests that are repeated at every
	// point, where a nominal p-value is far from the error rate: the scan
	// confirmation of rises in access windows (windows.Config.ScanPValue:
	// an excursion's window is tested at each of its points) and the
	// silence test of change windows (a page's silence, SilenceP, is tested
	// at each visit; it becomes a candidate when its p-value crosses the
	// level). Default FDR/10⁴ (1e-6 with the FDR default): the FDR's
	// Bonferroni level over 10⁴ tests, a week of an object's windows at
	// 1,400 requests a day, or 10⁴ objects in a testing period (a candidate
	// at this level is a Benjamini–Hochberg discovery in any period of up
	// to 10⁴ objects). In (0, 1); at most windows' MaxPValue.
	StrictPValue float64
	// ScanAlarms is windows.Config.ScanAlarms of the access windows: the
	// scan confirmation of rises, with at most ScanAlarms expected false
	// confirmations per object and week (Ville's inequality). Default FDR
	// (the false-discovery level taken as the per-object weekly budget);
	// ScanOff disables the scan (the 2× CUSUM alone). ≥ 0 or ScanOff.
	ScanAlarms float64
}

// ScanOff as AlertConfig.ScanAlarms disables the scan confirmation.
const ScanOff = -1.0

// scanAlarms is the windows' ScanAlarms of c (0: off).
func (c *AlertConfig) scanAlarms() float64 {
	if c.ScanAlarms == ScanOff {
		return 0
	}
	return c.ScanAlarms
}

// Validate reports every invalid field of c.WithDefaults() at once.
func (c AlertConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Period < time.Second {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.Period must be at least 1s, got %s", c.Period))
	}
	if !(c.FDR > 0 && c.FDR <= 1) {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.FDR must be in (0, 1], got %g", c.FDR))
	}
	if !(c.MinRatio >= 1) || math.IsInf(c.MinRatio, 0) {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.MinRatio must be ≥ 1, got %g", c.MinRatio))
	}
	if c.MinEvents < 0 {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.MinEvents must be 0 or more, got %d", c.MinEvents))
	}
	if c.SiteObjects < 0 {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.SiteObjects must be 0 (off) or more, got %d", c.SiteObjects))
	}
	if c.SiteTop < 1 {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.SiteTop must be at least 1, got %d", c.SiteTop))
	}
	if !(c.StrictPValue > 0 && c.StrictPValue < 1) {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.StrictPValue must be in (0, 1), got %g", c.StrictPValue))
	}
	if !(c.ScanAlarms >= 0 || c.ScanAlarms == ScanOff) || math.IsInf(c.ScanAlarms, 0) {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.ScanAlarms must be ≥ 0 or ScanOff, got %g", c.ScanAlarms))
	}
	if c.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("aggregate: Alerts.MaxPending must be at least 1, got %d", c.MaxPending))
	}
	return errors.Join(errs...)
}

// Candidate outcomes counted in changerate_aggregator_alert_candidates_total.
const (
	outcomeAlerted      = "alerted"
	outcomeLearning     = "learning"
	outcomeMixedClock   = "mixed_clock"
	outcomeSmallEffect  = "small_effect"
	outcomeNotDiscovery = "not_discovery"
	outcomeOverflow     = "overflow"
	// outcomeNotEstablished: a drop against a rate that was not
	// established (Established).
	outcomeNotEstablished = "not_established"
)

var candidateOutcomes = [numOutcomes]string{outcomeAlerted, outcomeLearning, outcomeMixedClock, outcomeSmallEffect, outcomeNotDiscovery, outcomeOverflow, outcomeNotEstablished}

const numOutcomes = 7

// outcomeIndex returns the index of an outcome in candidateOutcomes.
func outcomeIndex(o string) int {
	for i := range candidateOutcomes {
		if candidateOutcomes[i] == o {
			return i
		}
	}
	panic("aggregate: unknown candidate outcome " + o)
}

// candidateCount is a count by kind and outcome.
type candidateCount struct{ kind, outcome string }

// AdjustmentBH names the Benjamini–Hochberg adjustment in alert records.
const AdjustmentBH = "benjamini-hochberg"

// Candidate is a confirmed shift waiting for its period's adjustment.
type Candidate struct {
	Alert records.Alert
	// Period is the index of the testing period (event time / Period).
	Period int64
}

// ShiftAlert builds the alert record of a confirmed shift of object's kind
// stream, with its window in real time: site is the profile whose
// operational time the stream ran on (nil: real time), now the real time
// at which the shift was confirmed (the observation that confirmed it, at
// the partition's clock). ok is false when the shift fails the filters of
// cfg; why then names the filter (outcomeSmallEffect or
// outcomeNotEstablished).
//
// The alert's window runs from the change point to now: for accesses and
// Last-Modified dates now is the update point that confirmed the shift; for
// existence-of-change visits the update point is the middle of the last
// visit interval (001 §1.2), which lies before the visit that saw it, and
// the window is extended to the visit, its expected count with it (at the
// rate before the change point). So as_of = window_end = now ≥ the start of
// the testing period the alert is adjusted in (period_start).
func ShiftAlert(object, kind string, sh windows.Shift, site opClock, now float64, cfg *AlertConfig) (a records.Alert, ok bool, why string) {
	a = Alert(object, kind, sh)
	a.Scope = records.AlertScopeObject
	a.Baseline = "flat"
	toReal := func(l float64) float64 { return l }
	toOp := func(t float64) float64 { return t }
	if site != nil && site.Active() {
		a.Baseline = "seasonal"
		if _, own := site.(*objClock); own {
			a.Baseline = "object"
		}
		toReal, toOp = site.Real, site.At
	}
	start := toReal(sh.After.Start)
	end := math.Max(toReal(sh.At), now)
	// the alert's times are real times
	a.AsOf = timeOf(end)
	a.Before.Start = timeOf(toReal(sh.Before.Start))
	a.After.Start = timeOf(start)
	a.Before.NextUpdate, a.After.NextUpdate = nil, nil
	a.WindowStart, a.WindowEnd = ptr(timeOf(start)), ptr(timeOf(end))
	a.Observed = sh.Pending
	if span := sh.At - sh.After.Start; sh.Expected > 0 && finite(sh.Expected) && span > 0 {
		// μ at the rate before the change point over the window to now
		exp := sh.Expected
		if opEnd := toOp(end); opEnd > sh.At {
			exp *= (opEnd - sh.After.Start) / span
		}
		a.Expected = ptr(exp)
		r := float64(sh.Pending) / exp
		a.Ratio = ptr(r)
		if d := end - start; d > 0 {
			a.ObservedRate = ptr(float64(sh.Pending) / d)
			a.ExpectedRate = ptr(exp / d)
		}
	}
	up := sh.Test == "cusum-binomial-up"
	if a.Ratio == nil {
		return a, false, outcomeSmallEffect
	}
	r := *a.Ratio
	if up && (r < cfg.MinRatio || sh.Pending < cfg.MinEvents) {
		return a, false, outcomeSmallEffect
	}
	if !up && (r > 1/cfg.MinRatio || *a.Expected < float64(cfg.MinEvents)) {
		return a, false, outcomeSmallEffect
	}
	if !up && !Established(sh.Before.Points, sh.After.Start-sh.Before.Start, sh.At-sh.After.Start, cfg) {
		return a, false, outcomeNotEstablished
	}
	return a, true, ""
}

// alertBook holds one partition's candidates until their testing period
// closes, and counts the objects tested per period.
type alertBook struct {
	cfg    *AlertConfig
	counts map[candidateCount]int // outcomes since the last take
	period int64                  // current period (-1: none yet)
	tested int64                  // objects observed in the current period
	cands  []Candidate
}

func newAlertBook(cfg *AlertConfig) *alertBook {
	return &alertBook{cfg: cfg, period: math.MinInt64, counts: map[candidateCount]int{}}
}

func (b *alertBook) periodOf(t time.Time) int64 {
	return floorDiv(t.UnixMilli(), b.cfg.Period.Milliseconds())
}

// Observe moves the book's clock to event time t, closing the periods
// before it (their alerts are appended to out), and counts an object as
// tested in t's period when firstInPeriod (its previous observation was in
// an earlier period).
func (b *alertBook) Observe(t time.Time, firstInPeriod bool, out []records.Alert) []records.Alert {
	p := b.periodOf(t)
	if p > b.period {
		out = b.Close(out)
		b.period, b.tested = p, 0
	}
	if firstInPeriod && p == b.period {
		b.tested++
	}
	return out
}

// Add holds a candidate of the current period.
func (b *alertBook) Add(a records.Alert) {
	b.cands = append(b.cands, Candidate{Alert: a, Period: b.period})
	if len(b.cands) > b.cfg.MaxPending {
		sort.SliceStable(b.cands, func(i, j int) bool { return b.cands[i].Alert.PValue < b.cands[j].Alert.PValue })
		b.counts[candidateCount{b.cands[b.cfg.MaxPending].Alert.Kind, outcomeOverflow}]++
		b.cands = b.cands[:b.cfg.MaxPending]
	}
}

// Close adjusts the held candidates (the current period's) and appends the
// alerts to out, site alerts first; the book is empty afterwards.
func (b *alertBook) Close(out []records.Alert) []records.Alert {
	if len(b.cands) == 0 {
		return out
	}
	m := b.tested
	if m < int64(len(b.cands)) {
		m = int64(len(b.cands))
	}
	alerts := make([]records.Alert, len(b.cands))
	for i := range b.cands {
		alerts[i] = b.cands[i].Alert
	}
	b.cands = b.cands[:0]
	q := BenjaminiHochberg(pvalues(alerts), m)
	ps := time.UnixMilli(b.period * b.cfg.Period.Milliseconds()).UTC()
	var kept []records.Alert
	for i := range alerts {
		if q[i] > b.cfg.FDR {
			b.counts[candidateCount{alerts[i].Kind, outcomeNotDiscovery}]++
			continue
		}
		b.counts[candidateCount{alerts[i].Kind, outcomeAlerted}]++
		a := alerts[i]
		a.PAdjusted, a.Adjustment, a.Tested = ptr(q[i]), AdjustmentBH, m
		a.PeriodStart = ptr(ps)
		a.Severity = severity(a.Ratio, q[i], b.cfg.FDR)
		kept = append(kept, a)
	}
	return append(out, groupSites(kept, b.cfg)...)
}

func pvalues(as []records.Alert) []float64 {
	p := make([]float64, len(as))
	for i := range as {
		p[i] = as[i].PValue
	}
	return p
}

// BenjaminiHochberg returns the adjusted p-values (q-values) of p among m
// tests (m ≥ len(p); the other tests' p-values are taken as 1):
// q_(i) = min_{j ≥ i} min(1, p_(j)·m/j) for the sorted p-values
// (Benjamini & Hochberg 1995, step-up procedure). Rejecting every q ≤ α
// controls the false-discovery rate at α for independent tests.
func BenjaminiHochberg(p []float64, m int64) []float64 {
	n := len(p)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	q := make([]float64, n)
	run := 1.0
	for r := n - 1; r >= 0; r-- {
		v := p[idx[r]] * float64(m) / float64(r+1)
		if v < run {
			run = v
		}
		q[idx[r]] = run
	}
	return q
}

func severity(ratio *float64, q, fdr float64) string {
	if ratio == nil {
		return records.SeverityMinor
	}
	l := math.Abs(math.Log(*ratio))
	switch {
	case l >= math.Log(4) && q <= fdr/10:
		return records.SeverityCritical
	case l >= math.Log(2):
		return records.SeverityMajor
	}
	return records.SeverityMinor
}

var severityRank = map[string]int{records.SeverityMinor: 0, records.SeverityMajor: 1, records.SeverityCritical: 2}

// groupSites replaces the alerts of each (site, kind, direction) with
// cfg.SiteObjects or more members by one site alert. Order: site alerts by
// site, then object alerts by ascending q-value (stable).
func groupSites(as []records.Alert, cfg *AlertConfig) []records.Alert {
	sort.SliceStable(as, func(i, j int) bool { return *as[i].PAdjusted < *as[j].PAdjusted })
	if cfg.SiteObjects <= 0 { // 0: site alerts off
		return as
	}
	type key struct{ site, kind, test string }
	groups := map[key][]int{}
	var order []key
	for i := range as {
		if as[i].Site == "" {
			continue
		}
		k := key{as[i].Site, as[i].Kind, as[i].Test}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.site != b.site {
			return a.site < b.site
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.test < b.test
	})
	grouped := make([]bool, len(as))
	var out []records.Alert
	for _, k := range order {
		members := groups[k]
		if len(members) < cfg.SiteObjects {
			continue
		}
		first := as[members[0]] // the most significant
		s := records.Alert{Site: k.site, Kind: k.kind, Test: k.test, PValue: first.PValue}
		s.Scope = records.AlertScopeSite
		s.Baseline, s.Adjustment, s.Tested, s.PeriodStart = first.Baseline, first.Adjustment, first.Tested, first.PeriodStart
		s.PAdjusted = first.PAdjusted
		s.ObjectsShifted = len(members)
		var obs int64
		var exp float64
		sev := records.SeverityMinor
		for n, i := range members {
			a := as[i]
			grouped[i] = true
			if a.AsOf.After(s.AsOf) {
				s.AsOf = a.AsOf
			}
			if s.WindowStart == nil || (a.WindowStart != nil && a.WindowStart.Before(*s.WindowStart)) {
				s.WindowStart = a.WindowStart
			}
			if s.WindowEnd == nil || (a.WindowEnd != nil && a.WindowEnd.After(*s.WindowEnd)) {
				s.WindowEnd = a.WindowEnd
			}
			obs += a.Observed
			if a.Expected != nil {
				exp += *a.Expected
			}
			if severityRank[a.Severity] > severityRank[sev] {
				sev = a.Severity
			}
			if n < cfg.SiteTop {
				s.TopObjects = append(s.TopObjects, records.AlertObject{Object: a.Object, Test: a.Test, Ratio: a.Ratio,
					ObservedRate: a.ObservedRate, ExpectedRate: a.ExpectedRate, PAdjusted: *a.PAdjusted, WindowStart: a.WindowStart})
			}
		}
		s.Severity = sev
		s.Observed = obs
		if exp > 0 {
			s.Expected = ptr(exp)
			s.Ratio = ptr(float64(obs) / exp)
		}
		s.RateBefore, s.RateAfter = first.RateBefore, first.RateAfter
		s.Before, s.After = first.Before, first.After
		out = append(out, s)
	}
	for i := range as {
		if !grouped[i] {
			out = append(out, as[i])
		}
	}
	return out
}

// AlertKey is the alerts-topic key of a record: the object, or "site:" +
// host for a site alert.
func AlertKey(a *records.Alert) string {
	if a.Scope == records.AlertScopeSite {
		return "site:" + a.Site
	}
	return a.Object
}

// AlertsKey is the state-store key of a partition's alert book: the
// candidates of the open testing period and its count of tested objects,
// committed with every batch so that a restart or a rebalance does not lose
// them.
const AlertsKey = "#alerts"

// bookVersion is the first byte of an encoded alert book.
const bookVersion = 1

// appendBinary appends the book's encoding: version, varint period,
// uvarint tested, uvarint length and the JSON array of the held alerts.
func (b *alertBook) appendBinary(dst []byte) []byte {
	dst = append(dst, bookVersion)
	dst = binary.AppendVarint(dst, b.period)
	dst = binary.AppendUvarint(dst, uint64(b.tested))
	as := make([]records.Alert, len(b.cands))
	for i := range b.cands {
		as[i] = b.cands[i].Alert
	}
	js, err := json.Marshal(as)
	if err != nil {
		panic(fmt.Sprintf("aggregate: marshal alert book: %v", err)) // plain data cannot fail
	}
	dst = binary.AppendUvarint(dst, uint64(len(js)))
	return append(dst, js...)
}

// decodeBinary replaces the book's period, count and candidates with those
// encoded in src. Errors wrap ErrCorrupt; on error b is unchanged.
func (b *alertBook) decodeBinary(src []byte) error {
	r := wire.NewReader(src)
	if v := r.Byte(); r.Err() == nil && v != bookVersion {
		return fmt.Errorf("%w: alert book version %d", ErrCorrupt, v)
	}
	period := r.Varint()
	tested := r.Uvarint()
	n := r.Uvarint()
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: alert book: %w", ErrCorrupt, err)
	}
	if n != uint64(len(r.Rest())) || tested > math.MaxInt64 {
		return fmt.Errorf("%w: alert book: length %d of %d bytes", ErrCorrupt, n, len(r.Rest()))
	}
	var as []records.Alert
	if err := json.Unmarshal(r.Rest(), &as); err != nil {
		return fmt.Errorf("%w: alert book: %w", ErrCorrupt, err)
	}
	cands := make([]Candidate, len(as))
	for i := range as {
		cands[i] = Candidate{Alert: as[i], Period: period}
	}
	b.period, b.tested, b.cands = period, int64(tested), cands
	return nil
}
