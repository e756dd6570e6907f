package ingest

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

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

func TestAppendObservationMatchesMarshal(t *testing.T) {
	for _, o := range encodeCases() {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendObservation(nil, &o)
		if !bytes.Equal(got, want) {
			t.Errorf("AppendObservation\n got %s\nwant %s", got, want)
		}
	}
}

func TestAppendObservationNoAlloc(t *testing.T) {
	o := encodeCases()[1]
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendObservation(buf[:0], &o) }); n != 0 {
		t.Fatalf("AppendObservation allocates %v times", n)
	}
}

func FuzzAppendObservation(f *testing.F) {
	f.Add("http://a/", "a", "sha1:x", "squid", int64(0), int64(1), 200, 1.5, int8(1))
	f.Add("\xff<>&\u2028", "", "", "", int64(-1e9), int64(5), -5003, 1e-9, int8(2))
	f.Fuzz(func(t *testing.T, object, site, digest, format string, sec, lm int64, status int, period float64, ch int8) {
		source, offset := format+site, lm-sec
		if math.IsNaN(period) || math.IsInf(period, 0) {
			return
		}
		tm := time.Unix(sec%253402300799, 0).UTC()
		if tm.Year() < 0 {
			return
		}
		o := records.Observation{Object: object, Site: site, Time: tm, Kind: records.KindVisit, Digest: digest, Format: format,
			Status: status, PeriodS: period, Changed: records.ChangeFlag(((ch % 3) + 3) % 3), Source: source, Offset: offset}
		if lm > 0 {
			o.LastModified = time.Unix(lm%253402300799, 0).UTC()
		}
		want, err := json.Marshal(o)
		if err != nil {
			return
		}
		if got := AppendObservation(nil, &o); !bytes.Equal(got, want) {
			t.Fatalf("mismatch\n got %s\nwant %s", got, want)
		}
	})
}
