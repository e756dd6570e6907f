package aggregate

import (
	"testing"
	"time"

	"github.com/changerate/changerate/internal/sim"
)

// issueWorld is issue 36's world (sim.IssueWorld).
func issueWorld(seed uint64, lo, hi float64, objectPhase bool) seasonalScenario {
	return sim.IssueWorld(seed, lo, hi, objectPhase)
}

// scorePower runs the detector with m on sc's world and scores it
// (sim.ScoreAlerts, as TestAlertTargets).
func scorePower(sc seasonalScenario, m *Model) sim.AlertScore {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	evs, bursts, names, sites := sc.Generate(start)
	learned := float64(start.Unix()) + sc.LearnDays*86400
	return sim.ScoreAlerts(evs, bursts, names, learned, runDetector(evs, names, sites, m))
}

// TestAlertPowerVsOracle is issue 36's acceptance test on its world (40–400
// requests a day, 7 sites, bursts after day 10) and on traffic bands from
// 20 to 2,000 requests a day: ≥ 80 % of the oracle-detectable bursts caught
// within 1 h of their end, ≤ 5 % of the quiet objects alerted after the
// learning period. Seeds differ from TestAlertTargets'.
func TestAlertPowerVsOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("long simulation")
	}
	m := DefaultModel()
	worlds := []struct {
		name   string
		lo, hi float64
	}{{"issue 36 world, 40–400/day", 40, 400}, {"20–60/day", 20, 60}, {"60–200/day", 60, 200}, {"200–600/day", 200, 600}, {"600–2,000/day", 600, 2000}}
	if raceEnabled {
		worlds = worlds[:1]
	}
	for i, w := range worlds {
		r := scorePower(issueWorld(uint64(36+i), w.lo, w.hi, false), &m)
		t.Logf("%s: oracle-detectable %d/%d, caught %d (%.0f %%; all bursts caught %d); quiet objects alerted %d/%d (%d alerts); median delay %.0f min",
			w.name, r.Detectable, r.Bursts, r.CaughtOracle, 100*r.OracleRate(), r.Caught, r.QuietAlerted, r.Quiet, r.FalseAlerts, median(r.Delays))
		if r.Detectable > 0 && r.OracleRate() < 0.80 {
			t.Errorf("%s: %d of %d oracle-detectable bursts caught (%.2f < 0.80)", w.name, r.CaughtOracle, r.Detectable, r.OracleRate())
		}
		if r.QuietRate() > 0.05 {
			t.Errorf("%s: %d of %d quiet objects alerted (%.3f > 0.05)", w.name, r.QuietAlerted, r.Quiet, r.QuietRate())
		}
	}
}
