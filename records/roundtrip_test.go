package records

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// roundTrip checks that v encodes, decodes into a new value of its type,
// and that value encodes again to the same JSON value.
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		return // not encodable (a NaN): no record is written
	}
	back := new(T)
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatalf("decode %T %s: %v", v, b, err)
	}
	again, err := json.Marshal(back)
	if err != nil || !sameJSON(again, b) {
		t.Fatalf("%T round trip (err %v):\n%s\nfirst:\n%s", v, err, again, b)
	}
}

// sameJSON reports whether a and b are the same JSON value (an invalid
// UTF-8 byte is written as \ufffd the first time and as the character
// itself after a round trip: the same string).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func FuzzAlertRoundTrip(f *testing.F) {
	f.Add("http://a.example/", "cusum-poisson-up", 1e-4, 4e-4, 1e-9, int64(1790000000), int64(12), uint16(0xffff))
	f.Add("", "", 0.0, 0.0, 0.0, int64(0), int64(0), uint16(0))
	f.Fuzz(func(t *testing.T, obj, test string, r1, r2, p float64, sec, n int64, mask uint16) {
		at := time.Unix(sec%253402300799, 0).UTC()
		r1, r2, p = finite(r1), finite(r2), finite(p)
		a := &Alert{Object: obj, Kind: EstimateAccess, AsOf: at, RateBefore: r1, RateAfter: r2, PValue: p, Test: test,
			Before: Window{State: "constant", Start: at.Add(-time.Hour), Points: n},
			After:  Window{State: "increasing", Start: at, Points: n, RatePerS: &r2, Model: "intuitive"}}
		if mask&1 != 0 {
			a.Site, a.Scope, a.Severity, a.Baseline, a.Adjustment = obj, AlertScopeSite, SeverityMajor, "seasonal", "benjamini-hochberg"
		}
		if mask&2 != 0 {
			a.WindowStart, a.WindowEnd, a.PeriodStart = &a.Before.Start, &at, &a.Before.Start
			a.Observed, a.Expected, a.Ratio, a.PAdjusted, a.Tested = n, &r1, &r2, &p, n
		}
		if mask&4 != 0 {
			a.ObjectsShifted = int(n % 1000)
			a.TopObjects = []AlertObject{{Object: obj, Test: test, Ratio: &r1, PAdjusted: p, WindowStart: &at}}
		}
		roundTrip(t, a)
	})
}

func FuzzAccessReportRoundTrip(f *testing.F) {
	f.Add("http://a.example/", int64(1790000000), int64(3600), int64(12), 1e-3, uint8(3))
	f.Fuzz(func(t *testing.T, obj string, sec, period, n int64, r float64, mask uint8) {
		at := time.Unix(sec%253402300799, 0).UTC()
		r = finite(r)
		ar := &AccessReport{Object: obj, PeriodStart: at.Add(-time.Duration(period) * time.Second), AsOf: at, Accesses: n,
			RatePerS: r, CI95: [2]float64{r / 2, r * 2}}
		if mask&1 != 0 {
			ar.Site = obj
		}
		if mask&2 != 0 {
			ar.Estimates = map[string]float64{"direct": r, "matloff_nonempty": r * 1.1}
			ar.Intervals = map[string][2]float64{"direct": {r / 2, r * 2}}
		}
		roundTrip(t, ar)
	})
}

func FuzzDeadLetterRoundTrip(f *testing.F) {
	f.Add("squid", "a.log:12", "parse", "bad line", []byte("x y z"), int64(1790000000))
	f.Add("", "", "", "", []byte("\xff\xfe"), int64(0))
	f.Fuzz(func(t *testing.T, format, position, reason, msg string, input []byte, sec int64) {
		dl := NewDeadLetter(time.Unix(sec%253402300799, 0), "ingest", format, position, reason, errString(msg), input)
		if len(dl.Input) > 3*MaxDeadLetterInput {
			t.Fatalf("input of %d bytes kept, cap %d (+ replacement characters)", len(dl.Input), MaxDeadLetterInput)
		}
		roundTrip(t, &dl)
	})
}

type errString string

func (e errString) Error() string { return string(e) }
