package aggregate

import (
	"testing"

	"github.com/changerate/changerate/estimators"
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

// BenchmarkChangeEstimate measures the full published change estimate
// record (Object.ChangeEstimate: every applicable estimator with its 95%
// interval, the window, the next visit and the TTL) per object, over the
// golden population of states, each object in turn with one reused scratch
// as the processor does (issue 13: at most 2 µs per object).
func BenchmarkChangeEstimate(b *testing.B) {
	states := goldenStates()
	var objs []Object
	for _, o := range states {
		if o.HasChange() {
			objs = append(objs, o)
		}
	}
	m := DefaultModel()
	var scratch estimators.Estimates
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		o := &objs[i%len(objs)]
		if _, ok := o.ChangeEstimate("https://golden.example.org/x", &m, &scratch); !ok {
			b.Fatal("no estimate")
		}
		i++
	}
	b.ReportMetric(float64(len(objs)), "objects")
}
