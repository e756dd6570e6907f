package sim

import (
	"math"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// TestScoreAlerts scores a scripted world whose verdicts are known: object
// q0 is quiet and alerted after learning, q1 quiet and alerted only during
// it; b0's burst is caught by a site alert listing it (window start inside
// the burst, published 30 min after its start); b1's only alert is
// published more than an hour after its burst ends (not caught); b2's alert
// is a downward test (not caught).
func TestScoreAlerts(t *testing.T) {
	const learned = 1000.0
	at := func(s float64) time.Time { return time.UnixMilli(int64(s * 1000)).UTC() }
	ptr := func(s float64) *time.Time { v := at(s); return &v }
	names := []string{"q0", "q1", "b0", "b1", "b2"}
	bursts := []Burst{
		{Obj: -1}, {Obj: -1},
		{Obj: 2, From: 2000, To: 5600, Base: 1, Count: 20},
		{Obj: 3, From: 2000, To: 5600, Base: 1, Count: 2},
		{Obj: 4, From: 2000, To: 5600, Base: 1, Count: 20},
	}
	evs := []Event{{T: 1500, Obj: 0}, {T: 500, Obj: 1}, {T: 2100, Obj: 2}, {T: 2200, Obj: 2}, {T: 9000, Obj: 2}}
	up := func(obj string, ws, asOf, published float64) PublishedAlert {
		a := records.Alert{Object: obj, Kind: records.EstimateAccess, Test: "cusum-binomial-up", AsOf: at(asOf)}
		a.WindowStart = ptr(ws)
		return PublishedAlert{Alert: a, At: published}
	}
	site := up("", 0, 3000, 3800)
	site.Alert.Scope = records.AlertScopeSite
	site.Alert.TopObjects = []records.AlertObject{{Object: "b0", WindowStart: ptr(2050)}}
	down := up("b2", 2050, 3000, 3800)
	down.Alert.Test = "cusum-binomial-down"
	ps := []PublishedAlert{up("q0", 1200, 1600, 1600), up("q1", 100, 900, 900), site, up("b1", 2050, 3000, 5600+3601), down}

	r := ScoreAlerts(evs, bursts, names, learned, ps)
	if r.Quiet != 2 || r.QuietAlerted != 1 || r.FalseAlerts != 1 {
		t.Errorf("quiet %d, alerted %d, false alerts %d; want 2, 1, 1", r.Quiet, r.QuietAlerted, r.FalseAlerts)
	}
	if r.Bursts != 3 || r.Caught != 1 || r.Detectable != 2 || r.CaughtOracle != 1 {
		t.Errorf("bursts %d caught %d detectable %d caught of them %d; want 3 1 2 1", r.Bursts, r.Caught, r.Detectable, r.CaughtOracle)
	}
	// b0 caught at 3800 s, 1800 s after its start; 2 of its requests in (2000, 3000].
	if len(r.Delays) != 1 || math.Abs(r.Delays[0]-30) > 1e-9 || r.DelayPoints[0] != 2 {
		t.Errorf("delays %v points %v; want [30] [2]", r.Delays, r.DelayPoints)
	}
	if r.QuietPoints != 1 {
		t.Errorf("quiet points after learning %v, want 1", r.QuietPoints)
	}
	if got := r.OracleRate(); got != 0.5 {
		t.Errorf("oracle rate %v, want 0.5", got)
	}
}
