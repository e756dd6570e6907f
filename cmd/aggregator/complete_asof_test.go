package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestFilterCompleteExposureToEndOfLog: a complete history (changes-tsv,
// through ingest and the aggregator's filter mode with --emit=final) is
// observed up to the latest event time of the whole input, not to its own
// last change (estimators/events.go E1). burst.xml changed 5 times in the
// week after its first event; the log (other.xml) runs a year: its rate is
// (5+½)/(1 year + τ₀) with the Gamma(5.5, 1 year + τ₀) interval, not
// 5.5/(1 week + τ₀), and its record's as_of is the end of the log.
func TestFilterCompleteExposureToEndOfLog(t *testing.T) {
	const day, year, tau0 = 86400, 365 * 86400, 43200.0
	t0 := int64(1_500_000_000)
	var b strings.Builder
	for _, d := range []int64{0, 1, 2, 3, 5, 7} {
		fmt.Fprintf(&b, "burst.xml\t%d\n", t0+d*day)
	}
	for _, d := range []int64{0, 100, 200, 300, 365} {
		fmt.Fprintf(&b, "other.xml\t%d\n", t0+d*day)
	}
	src := filepath.Join(t.TempDir(), "changes.tsv")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := filter(t, ingestFiles(t, "changes-tsv", nil, src))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	end := time.Unix(t0+year, 0).UTC()
	seen := map[string]bool{}
	for _, e := range estimates(t, out) {
		var n float64
		switch e.Object {
		case "burst.xml":
			n = 5
		case "other.xml":
			n = 4
		default:
			continue
		}
		seen[e.Object] = true
		if e.Changes != int64(n) {
			t.Errorf("%s: %d changes, want %g", e.Object, e.Changes, n)
		}
		if !e.AsOf.Equal(end) {
			t.Errorf("%s: as_of %s, want the end of the log %s", e.Object, e.AsOf, end)
		}
		if e.RatePerS == nil || e.Estimator != "poisson_events" || e.CI95 == nil {
			t.Fatalf("%s: estimator %q rate %v ci95 %v; want poisson_events with an interval", e.Object, e.Estimator, e.RatePerS, e.CI95)
		}
		a, rate := n+0.5, float64(year)+tau0
		want := a / rate
		if r := *e.RatePerS / want; math.Abs(r-1) > 1e-9 {
			t.Errorf("%s: rate %g /s, want (N+½)/(1 year + τ₀) = %g (ratio %g)", e.Object, *e.RatePerS, want, r)
		}
		g := distuv.Gamma{Alpha: a, Beta: rate}
		if lo, hi := g.Quantile(0.025), g.Quantile(0.975); math.Abs(e.CI95[0]/lo-1) > 1e-9 || math.Abs(e.CI95[1]/hi-1) > 1e-9 {
			t.Errorf("%s: ci95 %v, want Gamma(%g, %g) quantiles [%g, %g]", e.Object, *e.CI95, a, rate, lo, hi)
		}
		if naive := e.Estimates["naive"]; math.Abs(naive*year/n-1) > 1e-9 {
			t.Errorf("%s: naive %g /s, want N/(1 year) = %g", e.Object, naive, n/year)
		}
		if e.Object == "burst.xml" {
			week := 5.5 / (7*day + tau0)
			t.Logf("burst.xml: %.3f changes a year (to its last change: %.0f)", *e.RatePerS*year, week*year)
		}
	}
	if !seen["burst.xml"] || !seen["other.xml"] {
		t.Fatalf("records missing: %v\n%s", seen, out)
	}
}
