package sim

import (
	"math"
	"sort"

	"github.com/changerate/changerate/records"
)

// PublishedAlert is an alert with the event time (Unix seconds) at which the
// aggregator published it (+Inf: at the end of the input).
type PublishedAlert struct {
	Alert records.Alert
	At    float64
}

// AlertedObjects returns, per object name, the alerts naming it: object
// alerts, and site alerts listing it among their top objects (with the
// object's own window start).
func AlertedObjects(ps []PublishedAlert) map[string][]PublishedAlert {
	m := map[string][]PublishedAlert{}
	for _, p := range ps {
		if p.Alert.Scope == records.AlertScopeSite {
			for _, o := range p.Alert.TopObjects {
				q := p
				q.Alert.Object, q.Alert.WindowStart = o.Object, o.WindowStart
				m[o.Object] = append(m[o.Object], q)
			}
			continue
		}
		m[p.Alert.Object] = append(m[p.Alert.Object], p)
	}
	return m
}

// AlertScore is a detector's score on an AlertWorld against its bursts and
// the oracle (Burst.OracleDetectable).
type AlertScore struct {
	Alerts                   int // alert records scored
	Quiet, QuietAlerted      int
	Bursts, Caught           int
	Detectable, CaughtOracle int     // oracle-detectable bursts, of them caught
	FalseAlerts              int     // alerts naming quiet objects after learning
	QuietPoints              float64 // quiet objects' points after learning
	Delays                   []float64
	DelayPoints              []float64 // the object's points from burst start to detection
	Ratios                   []float64 // burst count ÷ base of the caught oracle-detectable bursts
}

// ScoreAlerts scores the published alerts ps on a world's events, bursts
// (by object index) and object names. A quiet object (Burst.Obj < 0) is
// alerted by any alert naming it with AsOf at or after learned (Unix
// seconds). A burst is caught by an upward access alert (cusum-binomial-up)
// whose window starts before the burst ends, whose AsOf is at or after the
// burst's start, and which is published by the burst's end + 1 h. Delays
// are in minutes from the burst's start to the publication, sorted.
func ScoreAlerts(evs []Event, bursts []Burst, names []string, learned float64, ps []PublishedAlert) AlertScore {
	by := AlertedObjects(ps)
	r := AlertScore{Alerts: len(ps)}
	for _, e := range evs {
		if bursts[e.Obj].Obj < 0 && e.T >= learned {
			r.QuietPoints++
		}
	}
	for i, b := range bursts {
		as := by[names[i]]
		if b.Obj < 0 {
			r.Quiet++
			n := 0
			for _, p := range as {
				if float64(p.Alert.AsOf.UnixMilli())/1e3 >= learned {
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
			a := &p.Alert
			if a.Kind != records.EstimateAccess || a.Test != "cusum-binomial-up" || a.WindowStart == nil {
				continue
			}
			ws := float64(a.WindowStart.UnixMilli()) / 1e3
			at := float64(a.AsOf.UnixMilli()) / 1e3
			if ws >= b.To || p.At > b.To+3600 || at < b.From {
				continue
			}
			r.Caught++
			if det {
				r.CaughtOracle++
				r.Ratios = append(r.Ratios, float64(b.Count)/b.Base)
			}
			r.Delays = append(r.Delays, (p.At-b.From)/60)
			k := 0.0
			for _, e := range evs {
				if int(e.Obj) == i && e.T > b.From && e.T <= at {
					k++
				}
			}
			r.DelayPoints = append(r.DelayPoints, k)
			break
		}
	}
	sort.Float64s(r.Delays)
	return r
}

// OracleRate is the share of the oracle-detectable bursts caught (NaN: none
// detectable).
func (r AlertScore) OracleRate() float64 {
	if r.Detectable == 0 {
		return math.NaN()
	}
	return float64(r.CaughtOracle) / float64(r.Detectable)
}

// QuietRate is the share of the quiet objects alerted after learning.
func (r AlertScore) QuietRate() float64 { return float64(r.QuietAlerted) / float64(r.Quiet) }

// CaughtRate is the share of all bursts caught.
func (r AlertScore) CaughtRate() float64 { return float64(r.Caught) / float64(r.Bursts) }
