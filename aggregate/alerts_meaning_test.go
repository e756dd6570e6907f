package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/changerate/changerate/api"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// changedAt returns changes-tsv style observations (a visit that saw a
// change) of object at the given times (seconds after t0).
func changedAt(object string, t0 time.Time, ts []float64) []records.Observation {
	out := make([]records.Observation, len(ts))
	for i, s := range ts {
		out[i] = records.Observation{Object: object, Kind: records.KindVisit, Changed: records.Changed,
			Time: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	return out
}

// poissonTimes returns the points of a Poisson process of rate per second
// on (from, to].
func poissonTimes(seed uint64, rate, from, to float64) []float64 {
	rng := sim.NewRand(seed, 1)
	var ts []float64
	for t := from + rng.ExpFloat64()/rate; t <= to; t += rng.ExpFloat64() / rate {
		ts = append(ts, t)
	}
	return ts
}

// checkTimes fails for an alert whose times are not consistent:
// window_start ≤ window_end, period_start ≤ window_end, as_of = window_end.
func checkTimes(t *testing.T, as []records.Alert) {
	t.Helper()
	for _, a := range as {
		if a.WindowStart == nil || a.WindowEnd == nil || a.PeriodStart == nil {
			t.Errorf("%s %s: window or period missing", a.Object, a.Test)
			continue
		}
		if a.WindowStart.After(*a.WindowEnd) || a.PeriodStart.After(*a.WindowEnd) || !a.AsOf.Equal(*a.WindowEnd) {
			t.Errorf("%s %s: window %s – %s, period_start %s, as_of %s", a.Object, a.Test, a.WindowStart, a.WindowEnd, a.PeriodStart, a.AsOf)
		}
	}
}

// TestDropNeedsEstablishedRate: a new file's first burst of 10 edits in 5
// hours, then one edit a month for two years, is not a drop (php-doc's 888
// down alerts were this); a file edited 4 times a day for 60 days that then
// slows to one edit in 4 days is (4×60 = 240 points over 60 days before,
// the drop's window shorter). The first case fails without the
// established-rate rule; the second is its control.
func TestDropNeedsEstablishedRate(t *testing.T) {
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	m := DefaultModel()
	const day = 86400.0
	var burst []float64
	for i := 0; i < 10; i++ {
		burst = append(burst, float64(i)*1800)
	}
	for i := 1; i <= 24; i++ {
		burst = append(burst, float64(i)*30*day+float64(i%7)*3600)
	}
	det := newDetector(&m)
	as := runWith(det, changedAt("new.xml", t0, burst))
	for _, a := range as {
		if a.Test == "cusum-binomial-down" {
			t.Errorf("drop alerted after a first burst: before %d points from %s, window %s – %s", a.Before.Points, a.Before.Start, a.WindowStart, a.WindowEnd)
		}
	}
	if det.totals[outcomeNotEstablished] == 0 {
		t.Errorf("no drop against an unestablished rate was confirmed: the scenario tests nothing (totals %v)", det.totals)
	}
	checkTimes(t, as)

	regular := append(poissonTimes(7, 4/day, 0, 60*day), poissonTimes(8, 0.25/day, 60*day, 120*day)...)
	det = newDetector(&m)
	as = runWith(det, changedAt("regular.xml", t0, regular))
	down := 0
	for _, a := range as {
		if a.Test == "cusum-binomial-down" {
			down++
			if a.Before.Points < m.Alerts.MinEvents || *a.Ratio > 0.5 {
				t.Errorf("drop %+v", a)
			}
			// the CUSUM's change point is where its excursion began, which a
			// lull before the drop can move earlier (seed 7: a 3-day lull
			// from day 49.4); the alert must come after the drop
			ws, we := a.WindowStart.Sub(t0).Hours()/24, a.WindowEnd.Sub(t0).Hours()/24
			if ws < 45 || ws > 62 || we < 60 {
				t.Errorf("drop's window day %.1f – %.1f, want a change point in 45–62 and an end after day 60", ws, we)
			}
		}
	}
	if down != 1 {
		t.Errorf("%d drops alerted after a 16× slow-down of an established rate, want 1 (totals %v)", down, det.totals)
	}
	checkTimes(t, as)
	validateAlerts(t, as)
}

// runWith feeds observations (in time order, one partition) through det
// and returns the alerts, with the candidates' outcomes in det.totals.
func runWith(det *detector, obs []records.Observation) []records.Alert {
	objs := map[string]*Object{}
	var eff Effects
	for i := range obs {
		o := objs[obs[i].Object]
		if o == nil {
			o = &Object{}
			objs[obs[i].Object] = o
		}
		eff.Reset()
		det.apply(obs[i].Object, det.site(Site(obs[i].Object)), o, &obs[i], &eff)
	}
	det.flush()
	for k, n := range det.book.counts {
		det.totals[k.outcome] += n
	}
	return det.take()
}

// TestSilenceAlert: a page crawled every hour (digests), changing at 4 a
// day for 20 days, then not at all for 20 days, gives one silence alert:
// no alert while it changes, and the alert's p-value, recomputed from the
// record (points before, their span, the silence), is ≤ StrictPValue
// while one hour earlier it was above: the crossing hour.
func TestSilenceAlert(t *testing.T) {
	t0 := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	m := DefaultModel()
	const day = 86400.0
	changes := poissonTimes(3, 4/day, 0, 20*day)
	var obs []records.Observation
	digest, k := 0, 0
	for h := 0.0; h <= 40*day; h += 3600 {
		for k < len(changes) && changes[k] <= h {
			digest++
			k++
		}
		obs = append(obs, records.Observation{Object: "https://example.org/news", Kind: records.KindVisit, Status: 200,
			Digest: fmt.Sprintf("d%d", digest), Time: t0.Add(time.Duration(h) * time.Second)})
	}
	det := newDetector(&m)
	as := runWith(det, obs)
	if len(as) != 1 || as[0].Test != SilenceTest {
		t.Fatalf("%d alerts %+v, want one silence alert", len(as), as)
	}
	a := as[0]
	last := a.WindowStart.Sub(t0).Seconds()
	if math.Abs(last-changes[len(changes)-1]) > 3600 {
		t.Errorf("silence from %.0f s, the last change was at %.0f s (±1 h, the visit interval)", last, changes[len(changes)-1])
	}
	origin, now := a.Before.Start.Sub(t0).Seconds(), a.AsOf.Sub(t0).Seconds()
	p := SilenceP(a.Before.Points, origin, last, now)
	pBefore := SilenceP(a.Before.Points, origin, last, now-3600)
	if math.Abs(p-a.PValue) > 1e-3*a.PValue || p > m.Alerts.StrictPValue || pBefore <= m.Alerts.StrictPValue {
		t.Errorf("p-value %g (record %g), an hour earlier %g: not the crossing of %g", p, a.PValue, pBefore, m.Alerts.StrictPValue)
	}
	// the analytic crossing: (span/(span+g))^n = α
	n, span := float64(a.Before.Points), last-origin
	g := span * (math.Pow(m.Alerts.StrictPValue, -1/n) - 1)
	if got := now - last; math.Abs(got-g) > 3600 {
		t.Errorf("silence alerted after %.1f h, the test crosses its level after %.1f h (±1 h)", got/3600, g/3600)
	}
	checkTimes(t, as)
	validateAlerts(t, as)
}

// validateAlerts checks each alert's JSON against the Alert schema of
// api/openapi.yaml (additionalProperties false: every field is described).
func validateAlerts(t *testing.T, as []records.Alert) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	schema := doc.Components.Schemas["Alert"].Value
	for _, a := range as {
		js, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.VisitJSON(v); err != nil {
			t.Errorf("alert does not conform to api/openapi.yaml: %v\n%s", err, js)
		}
	}
}

// TestAlertSchemaSiteAlert validates a site alert and an object alert of
// the book (every AlertDetail field set) against the schema.
func TestAlertSchemaSiteAlert(t *testing.T) {
	cfg := DefaultAlertConfig()
	cfg.SiteObjects, cfg.SiteTop = 2, 2
	b := newAlertBook(&cfg)
	t0 := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	b.Observe(t0, true, nil)
	for i, obj := range []string{"http://a.example/x", "http://a.example/y", "http://b.example/z"} {
		a := records.Alert{Object: obj, Site: Site(obj), Kind: records.EstimateAccess, Test: "cusum-binomial-up", PValue: 1e-9 * float64(i+1), AsOf: t0}
		a.Before = records.Window{State: "constant", Start: t0.Add(-time.Hour), Points: 40}
		a.After = records.Window{State: "constant", Start: t0.Add(-time.Minute), Points: 20}
		a.Scope, a.Baseline, a.Ratio, a.Observed, a.Expected = records.AlertScopeObject, "seasonal", ptr(5.0), 20, ptr(4.0)
		a.ObservedRate, a.ExpectedRate = ptr(20.0/60), ptr(4.0/60)
		a.WindowStart, a.WindowEnd = ptr(t0.Add(-time.Minute)), ptr(t0)
		b.Add(a)
	}
	out := b.Close(nil)
	if len(out) != 2 || out[0].Scope != records.AlertScopeSite {
		t.Fatalf("%d alerts, want a site alert and an object alert", len(out))
	}
	checkTimes(t, out)
	validateAlerts(t, out)
}
