package records

import (
	"math"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzAppendTimeUTC checks appendTimeUTC against time.Time.AppendFormat
// with RFC3339Nano for UTC times, and its refusal exactly where
// time.Time.MarshalJSON refuses (years outside 0–9999).
func FuzzAppendTimeUTC(f *testing.F) {
	for _, c := range []struct {
		sec  int64
		nsec int64
	}{{0, 0}, {1790000000, 410000000}, {1790000000, 1}, {1790000000, 999999999}, {-62135596800, 0}, {-62135596801, 5},
		{253402300799, 999999999}, {253402300800, 0}, {951782400, 120000}, {-1, 999999999},
		{-62167219200, 0}, {-62167219201, 999999999}, {-62162035201, 0}, {math.MaxInt64, 0}, {math.MinInt64, 0}} {
		f.Add(c.sec, c.nsec)
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec).UTC()
		got, ok := appendTimeUTC([]byte("x"), tm)
		want, err := tm.MarshalJSON()
		if err != nil {
			if ok || string(got) != "x" {
				t.Fatalf("%v: MarshalJSON refuses (%v), appendTimeUTC gave %q, %v", tm, err, got, ok)
			}
			return
		}
		if !ok || `"`+string(got[1:])+`"` != string(want) {
			t.Fatalf("%v: appendTimeUTC %q, %v; MarshalJSON %s", tm, got[1:], ok, want)
		}
	})
}

func BenchmarkAppendTimeUTC(b *testing.B) {
	tm := time.Date(2026, 11, 2, 13, 4, 5, 472000000, time.UTC)
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf, _ = appendTimeUTC(buf[:0], tm)
	}
}

func BenchmarkAppendFormatRFC3339Nano(b *testing.B) {
	tm := time.Date(2026, 11, 2, 13, 4, 5, 472000000, time.UTC)
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = tm.AppendFormat(buf[:0], time.RFC3339Nano)
	}
}

// FuzzJSONSafeWord checks jsonSafeWord against the byte table jsonSafe:
// when every byte is safe no subtraction borrows, so the word test is
// exact.
func FuzzJSONSafeWord(f *testing.F) {
	for _, s := range []string{"abcdefgh", "http://a", "ab<defgh", "abcdefg&", "\x1fbcdefgh", "abcdefg\x80", " !#$%'()", `abc"efgh`, `\bcdefgh`, "\x00\x00\x00\x00\x00\x00\x00\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		want := true
		var x uint64
		for i, c := range b[:8] {
			want = want && c < utf8.RuneSelf && jsonSafe[c]
			x |= uint64(c) << (8 * i)
		}
		if got := jsonSafeWord(x); got != want {
			t.Fatalf("jsonSafeWord(%q) = %v, want %v", b[:8], got, want)
		}
	})
}
