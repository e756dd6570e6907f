package records

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// estimateFrom builds an Estimate from fuzzer inputs; mask selects which
// optional fields are present.
func estimateFrom(obj, key string, f1, f2, f3 float64, sec int64, nsec int32, offset int32, mask uint16, n int64) *Estimate {
	zone := time.UTC
	if mask&(1<<12) != 0 {
		zone = time.FixedZone("", int(offset))
	}
	t := time.Unix(sec, int64(nsec)).In(zone)
	e := &Estimate{Object: obj, Kind: EstimateChange, AsOf: t, Observations: n, Changes: n / 3}
	if mask&1 != 0 {
		e.Site = obj + "<&>"
	}
	if mask&2 != 0 {
		e.RatePerS, e.Estimator = &f1, key
	}
	if mask&4 != 0 {
		e.CI95 = &[2]float64{f2, f3}
	}
	if mask&8 != 0 {
		e.Estimates = map[string]float64{key: f1, "naive": f2, "cgm_improved": f3, obj: f1 * f2}
	}
	if mask&16 != 0 {
		e.Intervals = map[string][2]float64{key: {f2, f3}, "naive": {f1, f3}}
	}
	if mask&32 != 0 {
		w := &Window{State: key, Start: t.Add(-time.Duration(n)), Points: n}
		if mask&64 != 0 {
			w.WeibullBeta, w.WeibullEta = &f1, &f2
		}
		if mask&128 != 0 {
			w.DuaneSlope = &f3
		}
		if mask&256 != 0 {
			w.RatePerS, w.Model = &f2, "weibull"
		}
		if mask&512 != 0 {
			nu := t.Add(time.Duration(f1))
			w.NextUpdate = &nu
		}
		e.Window = w
	}
	if mask&1024 != 0 {
		nv := t.Add(time.Hour)
		e.NextVisit = &nv
	}
	if mask&2048 != 0 {
		e.TTLS = &f3
	}
	return e
}

func checkEstimateJSON(t *testing.T, e *Estimate) {
	t.Helper()
	want, werr := json.Marshal(e)
	got, ok := AppendEstimateJSON([]byte("prefix"), e)
	if werr != nil {
		if ok {
			t.Fatalf("json.Marshal fails (%v) but AppendEstimateJSON encoded %s", werr, got)
		}
		if string(got) != "prefix" {
			t.Fatalf("on failure dst changed to %q", got)
		}
		return
	}
	if !ok {
		t.Fatalf("AppendEstimateJSON refused what json.Marshal encodes: %s", want)
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("AppendEstimateJSON:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
	}
	// It decodes back to a record that encodes to the same bytes.
	var back Estimate
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", want, err)
	}
	again, ok := AppendEstimateJSON(nil, &back)
	if !ok || !sameJSON(again, want) {
		t.Fatalf("round trip (ok %v):\n%s\nfirst:\n%s", ok, again, want)
	}
	// The same record with its maps given as a sorted Keyed list.
	bare := *e
	bare.Estimates, bare.Intervals = nil, nil
	keyed, kok := AppendEstimateJSONKeyed([]byte("prefix"), &bare, keyedOf(e, nil))
	if !kok || string(keyed) != string(got) {
		t.Fatalf("AppendEstimateJSONKeyed (ok %v):\n%s\nAppendEstimateJSON:\n%s", kok, keyed, got)
	}
}

// TestAppendEstimateJSONKeyed covers what estimateFrom does not make: an
// interval whose estimator has no rate, and the misuse that panics.
func TestAppendEstimateJSONKeyed(t *testing.T) {
	e := &Estimate{Object: "o", Kind: EstimateChange,
		Estimates: map[string]float64{"b": 2, "d": 4},
		Intervals: map[string][2]float64{"a": {0, 1}, "d": {3, 5}}}
	checkEstimateJSON(t, e)
	defer func() {
		if recover() == nil {
			t.Fatal("AppendEstimateJSONKeyed of a record with maps did not panic")
		}
	}()
	AppendEstimateJSONKeyed(nil, e, nil)
}

func TestAppendEstimateJSON(t *testing.T) {
	for _, c := range []struct {
		obj        string
		f1, f2, f3 float64
		sec        int64
		mask       uint16
	}{
		{"http://a.example/x?a=1&b=<2>", 1.9e-06, 6.2e-07, 4.5e-06, 1790000000, 0xfff},
		{"", 0, math.Copysign(0, -1), 1e21, 0, 0},
		{"naïve \u2028 \x01 \xff", 1e-7, 123456789.123, 5e-324, -62135596800, 0x1fff},
		{"x", math.NaN(), 1, 2, 1790000000, 2},
		{"x", 1, math.Inf(1), 2, 1790000000, 4},
		{"x", 1, 2, 3, 253402300800, 0}, // year 10000
		{"x", 1, 2, 3, -62135596801, 0}, // year -1
	} {
		checkEstimateJSON(t, estimateFrom(c.obj, "cgm_improved", c.f1, c.f2, c.f3, c.sec, 123456789, 3600, c.mask, 720))
	}
	// Offsets json.Marshal refuses: 24 hours or more.
	checkEstimateJSON(t, estimateFrom("x", "k", 1, 2, 3, 1790000000, 0, 24*3600, 1<<12, 1))
	checkEstimateJSON(t, estimateFrom("x", "k", 1, 2, 3, 1790000000, 0, -24*3600-1, 1<<12, 1))
	checkEstimateJSON(t, estimateFrom("x", "k", 1, 2, 3, 1790000000, 0, 3601, 1<<12, 1))
}

func FuzzAppendEstimateJSON(f *testing.F) {
	f.Add("http://a.example/x?a=1&b=<2>", "cgm_improved", 1.9e-06, 6.2e-07, 4.5e-06, int64(1790000000), int32(5), int32(3600), uint16(0xfff), int64(720))
	f.Add("", "", 0.0, 0.0, 0.0, int64(0), int32(0), int32(0), uint16(0), int64(0))
	f.Fuzz(func(t *testing.T, obj, key string, f1, f2, f3 float64, sec int64, nsec, offset int32, mask uint16, n int64) {
		checkEstimateJSON(t, estimateFrom(obj, key, f1, f2, f3, sec, nsec, offset, mask, n))
	})
}

func BenchmarkAppendEstimateJSON(b *testing.B) {
	e := estimateFrom("http://news.example.org/weekly/story-00.html", "cgm_improved", 1.9e-06, 6.2e-07, 4.5e-06, 1790000000, 410000000, 0, 0xfff&^1, 720)
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = AppendEstimateJSON(buf[:0], e)
	}
}

func BenchmarkMarshalEstimate(b *testing.B) {
	e := estimateFrom("http://news.example.org/weekly/story-00.html", "cgm_improved", 1.9e-06, 6.2e-07, 4.5e-06, 1790000000, 410000000, 0, 0xfff&^1, 720)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(e); err != nil {
			b.Fatal(err)
		}
	}
}
