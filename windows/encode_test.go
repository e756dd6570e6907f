package windows

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestRoundTrip checks that DecodeBinary(AppendBinary(s)) equals s field by
// field after every event of a long simulated stream, in both observation
// modes, and that the encoded size stays within the documented bounds.
func TestRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	r := newRand(7)
	pts, _ := weibullProcess(r, 1.7e9, []segment{{1, 3600, 60}, {2, 7200, 80}, {0.5, 600, 80}, {1, 60, 200}})
	for mode := 0; mode < 2; mode++ {
		var s Stream
		maxLen := 0
		check := func() {
			b := s.AppendBinary(nil)
			if len(b) > maxLen {
				maxLen = len(b)
			}
			var d Stream
			n, err := d.DecodeBinary(append(b, 0xff))
			if err != nil || n != len(b) {
				t.Fatalf("decode: n=%d len=%d err=%v", n, len(b), err)
			}
			if !reflect.DeepEqual(d, s) {
				t.Fatalf("round trip differs:\n%+v\n%+v", d, s)
			}
		}
		check()
		for _, p := range pts {
			if mode == 0 {
				s.Event(p, &cfg)
			} else {
				s.Visit(p, r.IntN(2) == 0, &cfg)
			}
			check()
		}
		if maxLen > 64 {
			t.Errorf("mode %d: encoded size %d > 64", mode, maxLen)
		}
		t.Logf("mode %d: max encoded size %d bytes", mode, maxLen)
	}
}

func TestDecodeErrors(t *testing.T) {
	var s Stream
	cfg := DefaultConfig()
	for i := 0; i < 20; i++ {
		s.Event(float64(i*i), &cfg)
	}
	good := s.AppendBinary(nil)
	for n := 0; n < len(good); n++ {
		var d Stream
		if _, err := d.DecodeBinary(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d: err = %v", n, err)
		}
	}
	for _, b := range [][]byte{{0xf0}, {flagDirUp | flagDirDown | flagStarted}, {0, 1}} {
		var d Stream
		if _, err := d.DecodeBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x: err = %v", b, err)
		}
	}
}

func FuzzDecodeBinary(f *testing.F) {
	cfg := DefaultConfig()
	var s Stream
	f.Add(s.AppendBinary(nil))
	for i := 0; i < 40; i++ {
		s.Event(float64(i*i*i), &cfg)
		f.Add(s.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Stream
		n, err := d.DecodeBinary(b)
		if err != nil {
			return
		}
		enc := d.AppendBinary(nil)
		var e Stream
		if m, err := e.DecodeBinary(enc); err != nil || m != len(enc) {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(e.AppendBinary(nil), enc) || n > len(b) {
			t.Fatal("not canonical")
		}
		// the decoded state must be usable
		e.Current(1e9, &cfg)
		e.Event(2e9, &cfg)
		e.Visit(2e9+1, true, &cfg)
		e.Current(3e9, &cfg)
	})
}
