package query_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestAPICompleteHistoryAsOf: /v1/objects rebuilds a complete history's
// estimate from the stored state at the partition's committed as-of (the
// latest event time, aggregate.ReorderLatest), so it answers the bytes the
// aggregator published: burst changed 5 times in its first week, the
// partition's log runs a year, and both publish (5+½)/(1 year + τ₀)
// (estimators/events.go E1, E3) with as_of at the end of the log.
func TestAPICompleteHistoryAsOf(t *testing.T) {
	const day, year, tau0 = 24 * time.Hour, 365 * 24 * time.Hour, 43200.0
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	obs := func(name string, d time.Duration) {
		o := records.Observation{Object: name, Time: t0.Add(d), Kind: records.KindChange, Format: "changes-tsv"}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []time.Duration{0, 1, 2, 3, 5, 7} {
		obs("https://git.example/burst.xml", d*day)
	}
	for _, d := range []time.Duration{8, 100, 200, 300} {
		obs("https://git.example/other.xml", d*day)
	}
	obs("https://git.example/other.xml", year)

	cfg := aggregate.DefaultConfig()
	cfg.Model.EmitInterval = 0
	cfg.MaxFuture = 0
	_, e, mem := filterRun(t, cfg, buf.Bytes())
	published := mem.Latest(stream.TopicEstimates)
	body := bytes.TrimSpace(e.get(t, "/v1/objects?url="+q("https://git.example/burst.xml"), 200))
	if want := published["https://git.example/burst.xml"]; !bytes.Equal(body, want) {
		t.Fatalf("/v1/objects burst.xml:\n got %s\nwant %s", body, want)
	}
	var rec records.Estimate
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	if end := t0.Add(year); !rec.AsOf.Equal(end) {
		t.Errorf("as_of %s, want the end of the log %s", rec.AsOf, end)
	}
	// The object page's timeline tells the latest change from the as-of.
	var v query.ObjectView
	if err := json.Unmarshal(e.get(t, "/v1/objects/view?url="+q("https://git.example/burst.xml"), 200), &v); err != nil {
		t.Fatal(err)
	}
	var sawLast, sawAsOf bool
	for _, ev := range v.Timeline {
		sawLast = sawLast || (ev.Event == "latest observation" && ev.Time.Equal(t0.Add(7*day)))
		sawAsOf = sawAsOf || (strings.HasPrefix(ev.Event, "as_of: partition's latest event") && ev.Time.Equal(t0.Add(year)))
	}
	if !sawLast || !sawAsOf {
		t.Errorf("timeline lacks the latest observation (%v) or the partition's as_of (%v): %+v", sawLast, sawAsOf, v.Timeline)
	}
	want := 5.5 / (year.Seconds() + tau0)
	if rec.RatePerS == nil || rec.Estimator != "poisson_events" || math.Abs(*rec.RatePerS/want-1) > 1e-9 {
		t.Fatalf("estimator %q rate %v, want poisson_events %g", rec.Estimator, rec.RatePerS, want)
	}
}
