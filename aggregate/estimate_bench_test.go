package aggregate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// goldenStates returns the objects of the estimate golden file at their
// checkpoints: a varied population of states (a few visits to thousands,
// with and without Last-Modified, snapshots).
func goldenStates() []Object {
	m := DefaultModel()
	var out []Object
	var o Object
	var eff Effects
	cur, n := "", 0
	goldenObjects(func(_ string, obs *records.Observation) {
		if obs.Object != cur {
			if cur != "" {
				out = append(out, o)
			}
			o, cur, n = Object{}, obs.Object, 0
		}
		eff.Reset()
		if o.Apply(obs, &m, &eff) != Applied {
			return
		}
		n++
		if goldenCheckpoint(n) && o.HasChange() {
			out = append(out, o)
		}
	})
	return append(out, o)
}

// liveStates returns the states of a daily crawl as it is published in
// the live shape (issue 13: every observation publishes an estimate): 4096
// objects, each with 1 to 12 visits about a day apart (±2 h), content
// digests that change as Poisson processes with mean intervals log-uniform
// in 6 h – 30 days, some with Last-Modified; one state per visit.
func liveStates() []Object {
	m := DefaultModel()
	rng := sim.NewRand(13, 2)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out []Object
	var eff Effects
	for i := 0; len(out) < 4096; i++ {
		var o Object
		name := fmt.Sprintf("https://live%d.example.org/page-%d", i%61, i)
		mean := 6 * 3600 * math.Exp(rng.Float64()*math.Log(120))
		visits := 1 + rng.IntN(12)
		lm := i%4 == 0
		t, version, next := rng.Float64()*86400, 0, rng.ExpFloat64()*mean
		last := -rng.ExpFloat64() * mean
		for v := 0; v < visits; v++ {
			for next <= t {
				version, last = version+1, next
				next += rng.ExpFloat64() * mean
			}
			obs := records.Observation{Object: name, Time: start.Add(time.Duration(t * 1e9)), Kind: records.KindVisit,
				Status: 200, Digest: fmt.Sprintf("sha1:%d", version)}
			if lm {
				obs.LastModified = start.Add(time.Duration(last * 1e9)).Truncate(time.Second)
			}
			eff.Reset()
			o.Apply(&obs, &m, &eff)
			out = append(out, o)
			t += 86400 + (rng.Float64()-0.5)*4*3600
		}
	}
	return out
}

// BenchmarkChangeEstimate measures the full published change estimate
// record (Object.ChangeEstimate: every applicable estimator with its 95%
// interval, the window, the next visit and the TTL) per object, each
// object in turn with one reused scratch as the processor does (issue 13:
// at most 2 µs per object). live: the states of a daily crawl, one per
// visit (liveStates); varied: the golden population (goldenStates: crawl,
// proxy and mixed histories of up to two weeks, Last-Modified crawls,
// snapshots), where the interval memo rarely hits; live-store: live with
// the record storage the processor reuses (no allocation).
func BenchmarkChangeEstimate(b *testing.B) {
	for _, pop := range []struct {
		name   string
		states func() []Object
		store  bool
	}{{"live", liveStates, false}, {"varied", goldenStates, false}, {"live-store", liveStates, true}} {
		b.Run(pop.name, func(b *testing.B) {
			var objs []Object
			for _, o := range pop.states() {
				if o.HasChange() {
					objs = append(objs, o)
				}
			}
			m := DefaultModel()
			var scratch estimators.Estimates
			var st *recordStore
			if pop.store {
				st = new(recordStore)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				o := &objs[i%len(objs)]
				if _, ok := o.changeEstimate("https://golden.example.org/x", "golden.example.org", &m, nil, 0, &scratch, st); !ok {
					b.Fatal("no estimate")
				}
				i++
			}
			b.ReportMetric(float64(len(objs)), "objects")
		})
	}
}
