package aggregate

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/changerate/changerate/records"
)

// timedObs is one generated observation, t seconds after t0. It holds a
// pointer: the logs run to hundreds of thousands of observations, and
// growing and sorting the slice would otherwise move whole observations
// (most of a test's time under the race detector).
type timedObs struct {
	t   float64
	obs *records.Observation
}

// appendVisits appends the visits of page name at the times ts (seconds
// after t0, increasing). Its content changes at next and then every draw()
// after the last change; a visit's digest is the number of changes before
// it, so two visits differ exactly when a change falls between them.
func appendVisits(evs []timedObs, name string, ts []float64, next float64, draw func() float64) []timedObs {
	version := 0
	for _, t := range ts {
		for next <= t {
			version++
			next += draw()
		}
		evs = append(evs, timedObs{t, &records.Observation{Object: name, Time: t0.Add(time.Duration(t * 1e9)), Kind: records.KindVisit,
			Digest: fmt.Sprintf("sha1:%d", version), Format: "jsonl"}})
	}
	return evs
}

// dailyVisits is days + 1 daily visit times, off seconds into each day.
func dailyVisits(days int, off float64) []float64 {
	ts := make([]float64, days+1)
	for d := range ts {
		ts[d] = float64(d)*86400 + off
	}
	return ts
}

// encodeLog orders evs by time (ties in the order generated) and writes
// them as JSON lines, the form ingest writes (records.AppendObservationJSON
// writes json.Marshal's bytes; encoding/json takes what it cannot).
func encodeLog(evs []timedObs) []byte {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var out []byte
	for _, e := range evs {
		line, ok := records.AppendObservationJSON(out, e.obs)
		if !ok {
			b, err := json.Marshal(e.obs)
			if err != nil {
				panic(err)
			}
			line = append(out, b...)
		}
		out = append(line, '\n')
	}
	return out
}
