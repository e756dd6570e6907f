package records_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/changerate/changerate/internal/recordschema"
	"github.com/changerate/changerate/records"
)

func encodeCases() []records.Observation {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC)
	return []records.Observation{
		{Object: "http://a.example/", Time: t0, Kind: records.KindAccess},
		{Object: "http://a.example/<x>&\"\\\u2028\u2029\x00\x1f\b\f\n\r\t\xff", Site: "a.example", Time: t0, Kind: records.KindVisit,
			Changed: records.Changed, Digest: "sha1:X", LastModified: t0.Add(-time.Hour), Status: -5003, Format: "heritrix",
			Source: "/var/log/a.log@12", Offset: 123456789},
		{Object: "o", Time: t0, Kind: records.KindRevalidation, Changed: records.Unchanged, Status: 304},
		{Object: "o", Time: t0, Kind: records.KindSnapshot, PeriodS: 86400, LastEvent: t0.Add(-time.Minute), Event: records.EventAccess},
		{Object: "o", Time: t0, Kind: records.KindSnapshot, PeriodS: 1e-7, Event: records.EventModification},
		{Object: "o", Time: t0, Kind: records.KindSnapshot, PeriodS: 1.5e21, Event: records.EventModification},
		{Object: "o", Time: t0, Kind: records.KindSnapshot, PeriodS: 0.1, Event: records.EventModification},
		{Object: "ünïcode", Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Kind: records.KindAccess},
	}
}

func TestAppendObservationJSONMatchesMarshal(t *testing.T) {
	for _, o := range encodeCases() {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := records.AppendObservationJSON(nil, &o)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendObservationJSON (ok %v)\n got %s\nwant %s", ok, got, want)
		}
		recordschema.Check(t, recordschema.Observation, got)
	}
}

func TestAppendObservationJSONNoAlloc(t *testing.T) {
	o := encodeCases()[1]
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf, _ = records.AppendObservationJSON(buf[:0], &o) }); n != 0 {
		t.Fatalf("AppendObservationJSON allocates %v times", n)
	}
}

// FuzzObservationRoundTrip: for any observation, AppendObservationJSON
// writes json.Marshal's bytes or refuses (ok false) exactly where
// json.Marshal fails; what it writes decodes back (DecodeObservation) to
// the same observation when it is valid, and validates against the
// observation schema.
func FuzzObservationRoundTrip(f *testing.F) {
	f.Add("http://a/", "a", "sha1:x", "squid", int64(0), int64(1), 200, 1.5, int8(1), uint8(1))
	f.Add("\xff<>&\u2028", "", "", "", int64(-1e9), int64(5), -5003, 1e-9, int8(2), uint8(3))
	f.Add("o", "", "", "", int64(1), int64(0), 0, math.Inf(1), int8(0), uint8(3))
	f.Fuzz(func(t *testing.T, object, site, digest, format string, sec, lm int64, status int, period float64, ch int8, kind uint8) {
		kinds := []records.Kind{records.KindAccess, records.KindVisit, records.KindRevalidation, records.KindSnapshot}
		source, offset := format+site, lm-sec
		o := records.Observation{Object: object, Site: site, Time: time.Unix(sec, 0).UTC(), Kind: kinds[int(kind)%len(kinds)],
			Digest: digest, Format: format, Status: status, PeriodS: period, Changed: records.ChangeFlag(((ch % 3) + 3) % 3),
			Source: source, Offset: offset}
		if o.Kind == records.KindSnapshot {
			o.Event = records.EventModification
		}
		if lm > 0 {
			o.LastModified = time.Unix(lm, 0).UTC()
		}
		want, merr := json.Marshal(o)
		got, ok := records.AppendObservationJSON([]byte("prefix"), &o)
		if ok != (merr == nil) {
			t.Fatalf("AppendObservationJSON ok=%v, json.Marshal error %v", ok, merr)
		}
		if !ok {
			if string(got) != "prefix" {
				t.Fatalf("refused, but dst changed to %q", got)
			}
			if o.Validate() == nil {
				t.Fatalf("Validate accepts an observation JSON cannot hold: %+v", o)
			}
			return
		}
		got = got[len("prefix"):]
		if !bytes.Equal(got, want) {
			t.Fatalf("mismatch\n got %s\nwant %s", got, want)
		}
		if o.Validate() != nil {
			return
		}
		back, err := records.DecodeObservation(got)
		if err != nil {
			t.Fatalf("DecodeObservation(%s): %v", got, err)
		}
		want2 := o
		for _, f := range []*string{&want2.Object, &want2.Site, &want2.Digest, &want2.Format, &want2.Source} {
			*f = jsonUTF8(*f)
		}
		if !reflect.DeepEqual(back, want2) {
			t.Fatalf("round trip\n got %+v\nwant %+v", back, o)
		}
		recordschema.Check(t, recordschema.Observation, got)
	})
}

// jsonUTF8 is s as encoding/json writes it: each byte that is not part of
// valid UTF-8 becomes U+FFFD.
func jsonUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
