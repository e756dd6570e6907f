package main

import (
	"testing"

	"github.com/changerate/changerate/internal/monitoringtest"
	"github.com/changerate/changerate/parse"
)

// TestAlertMetricsExistAtStart: every ingest metric that the deploy
// bundle's alerting rules and dashboard use (read from the files) is on the
// registry that /metrics serves from the start, for every format, with a
// series for each label value a rule selects: before Run reads a line (a
// --follow run waiting for input, or a one-shot run whose every line is
// rejected, for which ChangerateIngestRejects must see rejects_total move
// up from 0). With --format=auto the series at 0 from the start are those
// of format="unknown"; each input's format gets its own when detected.
func TestAlertMetricsExistAtStart(t *testing.T) {
	var refs []monitoringtest.Ref
	for _, r := range monitoringtest.Refs(t, monitoringtest.Root(t)) {
		if monitoringtest.Program(r.Metric) == "ingest" {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		t.Fatal("no ingest metric in the rules and dashboards")
	}
	for _, f := range append(parse.Formats(), [2]string{"auto"}) {
		t.Run(f[0], func(t *testing.T) {
			series := monitoringtest.Gather(t, newRegistry(f[0]))
			for _, r := range refs {
				if err := series.Check(r); err != nil {
					t.Errorf("--format=%s: %v", f[0], err)
				}
			}
		})
	}
}
