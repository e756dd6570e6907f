package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// typical is what ingest writes for a crawler visit and a proxy
// revalidation.
var typical = []string{
	`{"object":"http://news.example.org/daily/story-02.html","site":"news.example.org","time":"2026-10-01T00:00:13.21Z","kind":"visit","digest":"sha1:M2AYUMOEI4ULAW3YN5O47QG4O4MMDGIK","status":200,"format":"heritrix","source":"/data/crawl.log@12","offset":123456789}`,
	`{"object":"http://shop.example.com/weekly/item-00","site":"shop.example.com","time":"2026-10-01T00:30:54.539Z","kind":"revalidation","changed":false,"status":304,"format":"squid"}`,
	`{"object":"http://shop.example.com/a","time":"2026-10-01T00:30:54+02:00","kind":"access","changed":true}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"snapshot","period_s":3600,"last_event":"2026-09-30T23:10:00Z","event":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"snapshot","period_s":1.5e3,"event":"modification"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"visit","last_modified":"2026-09-01T00:00:00Z","status":-5003}`,
	" \t\r\n{ \"object\" : \"ü-ñ\" , \"time\" : \"2026-10-01T00:00:00Z\" , \"kind\" : \"access\" } \n",
}

// tricky inputs that the fast path must leave to encoding/json (or decode
// identically).
var tricky = []string{
	``, `{}`, `null`, `[]`, `{"object":"x"}`, `{"object":"x"}}`, `{"object":"x"}]`, `{"object":"x"} {}`, `{"object":"x"} x`,
	`{"OBJECT":"x","time":"2026-10-01T00:00:00Z","kind":"access"}`,
	`{"object":"x","object":"y","time":"2026-10-01T00:00:00Z","kind":"access"}`,
	`{"object":"a\"b","time":"2026-10-01T00:00:00Z","kind":"access"}`,
	`{"object":"a\u00e9","time":"2026-10-01T00:00:00Z","kind":"access"}`,
	"{\"object\":\"a\xffb\",\"time\":\"2026-10-01T00:00:00Z\",\"kind\":\"access\"}",
	"{\"object\":\"a\tb\",\"time\":\"2026-10-01T00:00:00Z\",\"kind\":\"access\"}",
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","changed":null}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","changed":"true"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","status":1.0}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","status":1e2}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","status":01}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","status":-0}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","offset":99999999999999999999}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"snapshot","period_s":1e400,"event":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"snapshot","period_s":.5,"event":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"snapshot","period_s":1.,"event":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00","kind":"access"}`,
	`{"object":"x","time":"2026-13-01T00:00:00Z","kind":"access"}`,
	`{"object":"x","time":null,"kind":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"teleport"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access","extra":1}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access",}`,
	`{"object":"x" "time":"2026-10-01T00:00:00Z"}`,
	`{"object":5,"time":"2026-10-01T00:00:00Z","kind":"access"}`,
	`{"object":"x","time":"2026-10-01T00:00:00Z","kind":"access"`,
	"\ufeff{\"object\":\"x\",\"time\":\"2026-10-01T00:00:00Z\",\"kind\":\"access\"}",
}

// checkEquivalent fails if DecodeObservation and the encoding/json path
// disagree on in, or if the fast path accepts what encoding/json does not
// decode to the same value.
func checkEquivalent(t *testing.T, in []byte) (fast bool) {
	t.Helper()
	got, gerr := DecodeObservation(in)
	want, werr := decodeObservationJSON(in)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, encoding/json %v", in, gerr, werr)
	}
	if gerr != nil && !errors.Is(gerr, ErrInvalid) {
		t.Fatalf("%q: error %v does not wrap ErrInvalid", in, gerr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %+v, encoding/json %+v", in, got, want)
	}
	var o Observation
	if decodeFast(in, &o) {
		var ref Observation
		if err := decodeJSONOnly(in, &ref); err != nil {
			t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", in, err)
		}
		if !reflect.DeepEqual(o, ref) {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", in, o, ref)
		}
		return true
	}
	return false
}

// decodeJSONOnly is decodeObservationJSON without Validate.
func decodeJSONOnly(in []byte, o *Observation) error {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(o); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func TestDecodeObservationFastPath(t *testing.T) {
	for _, in := range typical {
		if !checkEquivalent(t, []byte(in)) {
			t.Errorf("%q: the fast path did not decode a typical observation", in)
		}
	}
	for _, in := range tricky {
		checkEquivalent(t, []byte(in))
	}
}

func FuzzDecodeObservation(f *testing.F) {
	for _, in := range append(append([]string{}, typical...), tricky...) {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkEquivalent(t, in)
	})
}

func BenchmarkDecodeObservation(b *testing.B) {
	in := []byte(typical[0])
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeObservation(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeObservationJSON(b *testing.B) {
	in := []byte(typical[0])
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeObservationJSON(in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzPlainASCII checks the 8-bytes-at-a-time scan against a byte loop.
func FuzzPlainASCII(f *testing.F) {
	for _, s := range []string{"", "abc", "0123456789abcdef", "abcdefg\\", "abcdefgh\x1f", "\x7fabcdefgh", "abcdefghé", " !#$%&'()*+,-./[]^_`{|}~"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want := true
		for _, c := range s {
			if c < 0x20 || c >= 0x80 || c == '\\' {
				want = false
			}
		}
		if got := plainASCII(s); got != want {
			t.Fatalf("plainASCII(%q) = %v, want %v", s, got, want)
		}
	})
}

// FuzzChangeFlagJSON checks ChangeFlag's JSON decoder: it accepts exactly
// true, false and null (with surrounding whitespace), rejects anything else
// with ErrInvalid, and a decoded flag encodes back to its canonical form.
func FuzzChangeFlagJSON(f *testing.F) {
	for _, s := range []string{"true", "false", "null", " true ", "1", `"true"`, "", "tru", "nullx"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var c ChangeFlag
		err := c.UnmarshalJSON(in)
		want := map[string]ChangeFlag{"true": Changed, "false": Unchanged, "null": ChangeUnknown}
		w, ok := want[string(bytes.TrimSpace(in))]
		if !ok {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("UnmarshalJSON(%q) = %v; want ErrInvalid", in, err)
			}
			return
		}
		if err != nil || c != w {
			t.Fatalf("UnmarshalJSON(%q) = %v, %v; want %v", in, c, err, w)
		}
		out, err := c.MarshalJSON()
		if err != nil || string(out) != string(bytes.TrimSpace(in)) {
			t.Fatalf("MarshalJSON after %q = %q, %v", in, out, err)
		}
	})
}
