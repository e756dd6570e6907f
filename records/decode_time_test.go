package records

import (
	"testing"
	"time"
)

// FuzzParseTimeUTC checks parseTimeUTC against time.Time.UnmarshalJSON:
// whatever it accepts, UnmarshalJSON accepts as the same time.Time (==:
// the same wall clock, monotonic reading and location).
func FuzzParseTimeUTC(f *testing.F) {
	for _, s := range []string{"2026-11-02T03:04:05Z", "2026-11-02T03:04:05.1Z", "2026-11-02T03:04:05.123456789Z",
		"2026-11-02T03:04:05.1234567891Z", "2024-02-29T23:59:59.000000001Z", "2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
		"2026-11-02T24:00:00Z", "2026-11-02T23:60:00Z", "2026-11-02T23:59:60Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
		"2026-11-02t03:04:05z", "2026-11-02T03:04:05+01:00", "2026-11-02T03:04:05.Z", "2026-1x-02T03:04:05Z", "2026-00-10T00:00:00Z",
		"1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-11-02T03:04:05.12a4Z", "2026-11-02 03:04:05Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTimeUTC([]byte(s))
		if !ok {
			return
		}
		var want time.Time
		if err := want.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
			t.Fatalf("%q: parseTimeUTC %v, UnmarshalJSON refuses: %v", s, got, err)
		}
		if got != want {
			t.Fatalf("%q: parseTimeUTC %#v, UnmarshalJSON %#v", s, got, want)
		}
	})
}

// TestParseTimeUTCUsualForms: the forms observations carry are parsed by
// the fast path (not left to UnmarshalJSON), to the right instant.
func TestParseTimeUTCUsualForms(t *testing.T) {
	for _, c := range []struct {
		s    string
		want time.Time
	}{
		{"2026-11-02T03:04:05Z", time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)},
		{"2026-11-02T03:04:05.5Z", time.Date(2026, 11, 2, 3, 4, 5, 500000000, time.UTC)},
		{"2026-11-02T03:04:05.123456789Z", time.Date(2026, 11, 2, 3, 4, 5, 123456789, time.UTC)},
		{"2024-02-29T00:00:00.000001Z", time.Date(2024, 2, 29, 0, 0, 0, 1000, time.UTC)},
	} {
		got, ok := parseTimeUTC([]byte(c.s))
		if !ok || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.s, got, ok, c.want)
		}
	}
	for _, s := range []string{"2023-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-11-02T24:00:00Z", "2026-11-02T03:04:05+01:00", "2026-11-02T03:04:05.1234567891Z"} {
		if got, ok := parseTimeUTC([]byte(s)); ok {
			t.Errorf("%q: parsed as %v; want it left to UnmarshalJSON", s, got)
		}
	}
}

func BenchmarkParseTimeUTC(b *testing.B) {
	s := []byte("2026-11-02T03:04:05.123456Z")
	for b.Loop() {
		parseTimeUTC(s)
	}
}

func BenchmarkUnmarshalJSONTime(b *testing.B) {
	s := []byte(`"2026-11-02T03:04:05.123456Z"`)
	var t time.Time
	for b.Loop() {
		_ = t.UnmarshalJSON(s)
	}
}

// TestParseTimeUTCCalendar compares parseTimeUTC with UnmarshalJSON on
// times spread over every year it parses (0000–9999, about 900,000 of
// them, each day of the week and hour of the day in turn), written by
// time.Time.MarshalJSON.
func TestParseTimeUTCCalendar(t *testing.T) {
	const first, last = -62167219200, 253402300799 // 0000-01-01, 9999-12-31T23:59:59
	step := int64(4*86400 + 3607)
	if testing.Short() {
		step *= 16
	}
	n := 0
	for sec := int64(first); sec <= last; sec += step {
		tm := time.Unix(sec, (sec-first)*7919%1000000000).UTC()
		b, err := tm.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parseTimeUTC(b[1 : len(b)-1])
		var want time.Time
		if err := want.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if !ok || got != want {
			t.Fatalf("%s: parseTimeUTC %v, %v; UnmarshalJSON %v", b, got, ok, want)
		}
		n++
	}
	t.Logf("%d times", n)
}
