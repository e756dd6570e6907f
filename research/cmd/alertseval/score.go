package main

import (
	"context"
	"sort"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// scoreWorld runs the aggregator with m on w and scores its alerts as
// aggregate's acceptance tests score them (sim.ScoreAlerts): each alert is
// published when its testing period closes (world.publish).
func scoreWorld(ctx context.Context, w *world, m aggregate.Model) (sim.AlertScore, error) {
	res, err := run(ctx, w.observations, m)
	if err != nil {
		return sim.AlertScore{}, err
	}
	ps := w.publish(res.alerts, m.Alerts.WithDefaults().Period)
	return sim.ScoreAlerts(w.evs, w.bursts, w.names, w.learned, ps), nil
}

// sortObservations sorts by time, stably.
func sortObservations(obs []records.Observation) {
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Time.Before(obs[j].Time) })
}
