package main

import (
	"context"
	"math"
	"sort"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/records"
)

// powerResult is the aggregator's score on a world against its bursts and
// the oracle (sim.Burst.OracleDetectable), as aggregate's acceptance tests
// score it.
type powerResult struct {
	Alerts                   int // alert records
	Quiet, QuietAlerted      int
	Bursts, Caught           int
	Detectable, CaughtOracle int     // oracle-detectable bursts, of them caught
	FalseAlerts              int     // alerts naming quiet objects after learning
	QuietPoints              float64 // quiet objects' points after learning
	Delays                   []float64
	DelayPoints              []float64 // the object's points from burst start to detection
}

func (r powerResult) oracleRate() float64 {
	if r.Detectable == 0 {
		return math.NaN()
	}
	return float64(r.CaughtOracle) / float64(r.Detectable)
}

func (r powerResult) quietRate() float64 { return float64(r.QuietAlerted) / float64(r.Quiet) }

// scoreWorld runs the aggregator with m on w and scores it: a quiet object
// is alerted by any alert naming it after the learning period; a burst is
// caught by an upward access alert whose window starts before the burst
// ends, confirmed after it started and published by the burst's end + 1 h.
func scoreWorld(ctx context.Context, w *world, m aggregate.Model) (powerResult, error) {
	res, err := run(ctx, w.observations, m)
	if err != nil {
		return powerResult{}, err
	}
	by := alertedObjects(w.publish(res.alerts, m.Alerts.WithDefaults().Period))
	r := powerResult{Alerts: len(res.alerts)}
	for _, e := range w.evs {
		if w.bursts[e.Obj].Obj < 0 && e.T >= w.learned {
			r.QuietPoints++
		}
	}
	for i, b := range w.bursts {
		as := by[w.names[i]]
		if b.Obj < 0 {
			r.Quiet++
			n := 0
			for _, p := range as {
				if float64(p.a.AsOf.Unix()) >= w.learned {
					n++
				}
			}
			r.FalseAlerts += n
			if n > 0 {
				r.QuietAlerted++
			}
			continue
		}
		r.Bursts++
		det := b.OracleDetectable()
		if det {
			r.Detectable++
		}
		for _, p := range as {
			if p.a.Kind != records.EstimateAccess || p.a.Test != "cusum-binomial-up" || p.a.WindowStart == nil {
				continue
			}
			ws := float64(p.a.WindowStart.UnixMilli()) / 1e3
			at := float64(p.a.AsOf.UnixMilli()) / 1e3
			if ws < b.To && p.at <= b.To+3600 && at >= b.From {
				r.Caught++
				if det {
					r.CaughtOracle++
				}
				r.Delays = append(r.Delays, (p.at-b.From)/60)
				k := 0.0
				for _, e := range w.evs {
					if int(e.Obj) == i && e.T > b.From && e.T <= at {
						k++
					}
				}
				r.DelayPoints = append(r.DelayPoints, k)
				break
			}
		}
	}
	sort.Float64s(r.Delays)
	return r, nil
}

// sortObservations sorts by time, stably.
func sortObservations(obs []records.Observation) {
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Time.Before(obs[j].Time) })
}
