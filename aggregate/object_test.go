package aggregate

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }

func visit(h float64, digest string) records.Observation {
	return records.Observation{Object: "http://a.example/x", Time: at(h), Kind: records.KindVisit, Digest: digest}
}

// status returns o with its HTTP status set.
func status(o records.Observation, s int) records.Observation {
	o.Status = s
	return o
}

func TestApplyChangeDetection(t *testing.T) {
	m := DefaultModel()
	lm := func(h float64) records.Observation {
		o := visit(h, "")
		o.LastModified = at(h - 0.5)
		return o
	}
	flag := func(h float64, c records.ChangeFlag) records.Observation {
		o := visit(h, "")
		o.Changed = c
		return o
	}
	cases := []struct {
		name           string
		obs            []records.Observation
		visits, change int64
		outcomes       []Outcome
	}{
		{"digests: first is the baseline, then two changes", []records.Observation{visit(0, "a"), visit(1, "a"), visit(2, "b"), visit(3, "b"), visit(4, "c")},
			5, 2, []Outcome{Applied, Applied, Applied, Applied, Applied}},
		{"change flags from the source", []records.Observation{flag(0, records.Unchanged), flag(1, records.Changed), flag(2, records.Unchanged)},
			3, 1, []Outcome{Applied, Applied, Applied}},
		{"last-modified moving forward is a change", []records.Observation{lm(0), lm(1), lm(2)},
			3, 2, []Outcome{Applied, Applied, Applied}},
		{"a failed fetch and a visit without digest say nothing", []records.Observation{visit(0, "a"),
			{Object: "http://a.example/x", Time: at(1), Kind: records.KindVisit, Status: -1, Digest: "zz"}, visit(2, ""), visit(3, "b")},
			2, 1, []Outcome{Applied, NoInformation, NoInformation, Applied}},
		// A Heritrix or WARC 404 page (or a redirect, a server error) has a
		// digest of its own body: it says nothing about the content, and the
		// content seen again after it is not a change (raeder.dk:81's four
		// 404 pages of two sizes counted 3 changes). A 304, or an explicit
		// flag, still counts.
		{"error pages and redirects say nothing about the content", []records.Observation{visit(0, "a"),
			status(visit(1, "e1"), 404), status(visit(2, "e2"), 404), status(visit(3, "r"), 301), status(visit(4, "s"), 503),
			status(visit(5, "a"), 200), status(flag(6, records.Unchanged), 304), status(flag(7, records.Changed), 404)},
			4, 1, []Outcome{Applied, NoInformation, NoInformation, NoInformation, NoInformation, Applied, Applied, Applied}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o Object
			var eff Effects
			for i := range tc.obs {
				eff.Reset()
				if got := o.Apply(&tc.obs[i], &m, &eff); got != tc.outcomes[i] {
					t.Errorf("observation %d: outcome %v, want %v", i, got, tc.outcomes[i])
				}
			}
			if o.Change.Visits() != tc.visits || o.Change.Changes() != tc.change {
				t.Errorf("visits/changes = %d/%d, want %d/%d", o.Change.Visits(), o.Change.Changes(), tc.visits, tc.change)
			}
		})
	}
}

func TestApplyDuplicatesAndLateness(t *testing.T) {
	m := DefaultModel()
	m.LateTolerance = time.Hour
	src := func(h float64, off int64) records.Observation {
		return records.Observation{Object: "http://a.example/x", Time: at(h), Kind: records.KindAccess, Source: "/var/log/a.log", Offset: off}
	}
	acc := func(h float64) records.Observation {
		return records.Observation{Object: "http://a.example/x", Time: at(h), Kind: records.KindAccess}
	}
	cases := []struct {
		name     string
		obs      []records.Observation
		outcomes []Outcome
		accesses int64
	}{
		{"replayed source offsets are duplicates", []records.Observation{src(1, 10), src(1, 20), src(1, 10), src(1, 20), src(1.1, 30)},
			[]Outcome{Applied, Applied, Duplicate, Duplicate, Applied}, 3},
		{"identical records at the same time are duplicates", []records.Observation{acc(1), acc(1), acc(2)},
			[]Outcome{Applied, Duplicate, Applied}, 2},
		{"slightly late is applied, beyond the tolerance dropped", []records.Observation{acc(5), acc(4.5), acc(3.9), acc(5.5)},
			[]Outcome{Applied, Applied, Late, Applied}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o Object
			var eff Effects
			for i := range tc.obs {
				eff.Reset()
				if got := o.Apply(&tc.obs[i], &m, &eff); got != tc.outcomes[i] {
					t.Errorf("observation %d: outcome %v, want %v", i, got, tc.outcomes[i])
				}
			}
			if o.Access.Accesses() != tc.accesses {
				t.Errorf("accesses = %d, want %d", o.Access.Accesses(), tc.accesses)
			}
		})
	}
}

func TestAccessPeriods(t *testing.T) {
	m := DefaultModel()
	m.ReportPeriod = time.Hour
	var o Object
	var eff Effects
	var periods []Period
	// 3 accesses in hour 0, none in hour 1, 2 in hour 2, 1 in hour 3.
	for _, h := range []float64{0.1, 0.5, 0.9, 2.2, 2.3, 3.5} {
		eff.Reset()
		obs := records.Observation{Object: "http://a.example/x", Time: at(h), Kind: records.KindAccess}
		o.Apply(&obs, &m, &eff)
		periods = append(periods, eff.Periods...)
	}
	want := []Period{{Start: t0.Unix(), Length: 3600, Accesses: 3}, {Start: t0.Unix() + 7200, Length: 3600, Accesses: 2}}
	if !reflect.DeepEqual(periods, want) {
		t.Fatalf("periods = %+v, want %+v", periods, want)
	}
	rep := o.AccessReport("http://a.example/x", periods[0], &m, new(estimators.Estimates))
	if rep.RatePerS != 3.0/3600 || rep.Accesses != 3 {
		t.Errorf("report rate %g accesses %d", rep.RatePerS, rep.Accesses)
	}
	// Garwood interval for k = 3: [0.6187, 8.7673] (exact chi-square quantiles).
	if math.Abs(rep.CI95[0]*3600-0.61867) > 1e-4 || math.Abs(rep.CI95[1]*3600-8.76727) > 1e-4 {
		t.Errorf("report CI %v per hour, want [0.6187, 8.7673]", []float64{rep.CI95[0] * 3600, rep.CI95[1] * 3600})
	}
}

// randomObject feeds a mix of every observation kind.
func randomObject(r *rand.Rand, n int) Object {
	m := DefaultModel()
	var o Object
	var eff Effects
	h := 0.0
	for i := 0; i < n; i++ {
		h += r.ExpFloat64()
		var obs records.Observation
		switch r.IntN(5) {
		case 0:
			obs = records.Observation{Object: "o", Time: at(h), Kind: records.KindAccess}
		case 1:
			obs = visit(h, string(rune('a'+r.IntN(3))))
		case 2:
			obs = visit(h, "")
			obs.LastModified = at(h - r.Float64()*h)
		case 3:
			obs = records.Observation{Object: "o", Time: at(h), Kind: records.KindRevalidation, Changed: records.ChangeFlag(1 + r.IntN(2))}
		case 4:
			obs = records.Observation{Object: "o", Time: at(h), Kind: records.KindSnapshot, PeriodS: 3600,
				Event: []records.Event{records.EventAccess, records.EventModification}[r.IntN(2)]}
			if r.IntN(2) == 0 {
				obs.LastEvent = at(h - r.Float64()*0.99)
			}
		}
		eff.Reset()
		o.Apply(&obs, &m, &eff)
	}
	return o
}

func TestEncodingRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 50, 2000} {
		o := randomObject(r, n)
		b := o.AppendBinary(nil)
		var back Object
		if err := back.DecodeBinary(b); err != nil {
			t.Fatalf("n=%d: decode: %v", n, err)
		}
		if !reflect.DeepEqual(o, back) {
			t.Fatalf("n=%d: round trip changed the state", n)
		}
		if b2 := back.AppendBinary(nil); !bytes.Equal(b, b2) {
			t.Fatalf("n=%d: re-encoding differs", n)
		}
		t.Logf("n=%d: %d bytes", n, len(b))
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	good := randomObject(r, 100)
	b := good.AppendBinary(nil)
	cases := map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{99}, b[1:]...),
		"truncated": b[:len(b)/2],
		"trailing":  append(append([]byte{}, b...), 0),
	}
	for name, in := range cases {
		var o Object
		if err := o.DecodeBinary(in); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func FuzzDecodeBinary(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 3, 40} {
		o := randomObject(r, n)
		f.Add(o.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var o Object
		if err := o.DecodeBinary(b); err != nil {
			return
		}
		// Whatever decodes must re-encode to something that decodes to the
		// same state.
		var back Object
		if err := back.DecodeBinary(o.AppendBinary(nil)); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(o, back) {
			t.Fatalf("re-decode differs")
		}
	})
}

func TestSite(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.example/x":            "a.example",
		"https://u:p@b.example:8443/?q": "b.example:8443",
		"https://c.example":             "c.example",
		"urn:isbn:123":                  "",
		"dns:www.kb.dk":                 "www.kb.dk", // a crawler's DNS lookup (Heritrix crawl.log)
	} {
		if got := Site(in); got != want {
			t.Errorf("Site(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkApplyVisit(b *testing.B) {
	m := DefaultModel()
	var o Object
	var eff Effects
	obs := visit(0, "a")
	digests := []string{"a", "b"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		obs.Time = at(float64(i))
		obs.Digest = digests[(i/3)%2]
		eff.Reset()
		o.Apply(&obs, &m, &eff)
	}
}

func BenchmarkApplyAccess(b *testing.B) {
	m := DefaultModel()
	var o Object
	var eff Effects
	obs := records.Observation{Object: "o", Kind: records.KindAccess}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		obs.Time = t0.Add(time.Duration(i) * time.Second)
		eff.Reset()
		o.Apply(&obs, &m, &eff)
	}
}

// TestDecodeVersion1 decodes objects that the version-1 build stored
// (testdata/object_v1.golden: randomObject with the seed of
// TestEncodingRoundTrip, encoded by that build). They must decode into the
// state the current code builds from the same observations: windows and
// access state exactly; the change state with its times and sums exact
// (whole milliseconds) and Σ I² within float32 rounding, so every estimate
// agrees to 1e-6.
func TestDecodeVersion1(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "object_v1.golden"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	m := DefaultModel()
	var scratch estimators.Estimates
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		nStr, hx, _ := strings.Cut(line, " ")
		n, _ := strconv.Atoi(nStr)
		b, err := hex.DecodeString(hx)
		if err != nil || b[0] != 1 {
			t.Fatalf("n=%s: bad golden line (version %d)", nStr, b[0])
		}
		want := randomObject(r, n)
		var got Object
		if err := got.DecodeBinary(b); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// the version-1 build had no scan excursion (issue 36)
		want.AccessWin.ClearScan()
		if !reflect.DeepEqual(got.ChangeWin, want.ChangeWin) || !reflect.DeepEqual(got.AccessWin, want.AccessWin) || got.Access != want.Access {
			t.Errorf("n=%d: windows or access state differ", n)
		}
		if got.Change.Visits() != want.Change.Visits() || got.Change.Changes() != want.Change.Changes() || got.Change.Span() != want.Change.Span() {
			t.Errorf("n=%d: change counts or span differ", n)
		}
		ge, gok := got.ChangeEstimate("o", &m, &scratch)
		we, wok := want.ChangeEstimate("o", &m, &scratch)
		if gok != wok || len(ge.Estimates) != len(we.Estimates) || ge.Estimator != we.Estimator || (n > 1 && len(we.Estimates) == 0) {
			t.Fatalf("n=%d: estimates differ: %v %v, %v %v", n, gok, wok, ge.Estimates, we.Estimates)
		}
		for k, w := range we.Estimates {
			if g, ok := ge.Estimates[k]; !ok || math.Abs(g-w) > 1e-6*math.Abs(w) {
				t.Errorf("n=%d: %s %v, want %v", n, k, g, w)
			}
		}
		// Re-encoded, it is a version-2 value that round-trips exactly.
		b2 := got.AppendBinary(nil)
		var again Object
		if err := again.DecodeBinary(b2); err != nil || b2[0] != encodingVersion || !reflect.DeepEqual(again, got) {
			t.Errorf("n=%d: re-encoding: %v", n, err)
		}
		t.Logf("n=%d: version 1 %d bytes, version 2 %d bytes", n, len(b), len(b2))
	}
}
