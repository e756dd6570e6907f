package aggregate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/recordschema"
	"github.com/changerate/changerate/records"
)

// TestAlertRecordsMatchSchema: every alert the detector publishes on the
// seeded seasonal world, with its details, is what
// api/records/alert.schema.json says.
func TestAlertRecordsMatchSchema(t *testing.T) {
	sc := seasonalScenario{Seed: 14, Objects: 32, Sites: 4, Days: 14, RateLo: 20, RateHi: 80, BurstFactor: 4, LearnDays: 7}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	evs, _, names, sites := sc.Generate(start)
	m := DefaultModel()
	ps := runDetector(evs, names, sites, &m)
	scopes := map[string]int{}
	for _, p := range ps {
		b, err := json.Marshal(p.Alert)
		if err != nil {
			t.Fatal(err)
		}
		recordschema.Check(t, recordschema.Alert, b)
		scopes[p.Alert.Scope]++
	}
	// The check must have seen alerts to mean anything. (This world
	// raises object alerts only; site alerts are checked where the
	// pipeline tests raise them, internal/e2e reading the alerts topic.)
	if scopes[records.AlertScopeObject] == 0 {
		t.Fatalf("alerts by scope %v: the world must raise object alerts", scopes)
	}
	t.Logf("%d alerts valid against the alert schema, by scope %v", len(ps), scopes)
}
