package aggregate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/changerate/changerate/records"
)

// timedObs is one generated observation, t seconds after t0.
type timedObs struct {
	t   float64
	obs records.Observation
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
		evs = append(evs, timedObs{t, records.Observation{Object: name, Time: t0.Add(time.Duration(t * 1e9)), Kind: records.KindVisit,
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
// them as JSON lines, the form ingest writes.
func encodeLog(evs []timedObs) []byte {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		if err := enc.Encode(e.obs); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}
