package windows

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/changerate/changerate/internal/wire"
)

// appendLayout1 writes the first layout (absolute float64 origin, plain
// float32s), which states stored by earlier builds have.
func appendLayout1(dst []byte, s *Segmenter) []byte {
	dst = append(dst, s.stateFlags())
	if s.started {
		dst = wire.AppendFloat64(dst, s.w.origin)
	}
	f32 := func(v ...float32) {
		for _, x := range v {
			dst = wire.AppendFloat32(dst, x)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(s.w.n))
	if s.w.n > 0 {
		f32(s.w.x, s.w.a, s.w.mx, s.w.m2, s.w.c)
	}
	if s.visited {
		f32(s.xv)
	}
	if s.dir != dirNone {
		f32(s.s)
		dst = binary.AppendUvarint(dst, uint64(s.k))
		f32(s.tau, s.ca, s.apre)
	}
	dst = binary.AppendUvarint(dst, uint64(s.mseN))
	if s.mseN > 0 {
		f32(s.mse[0], s.mse[1], s.mse[2])
	}
	return dst
}

// TestRoundTrip checks that DecodeBinary(AppendBinary(s)) equals s field by
// field after every event of a long simulated stream, in both observation
// modes, and that the encoded size stays within the documented bounds.
func TestRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	r := newRand(7)
	pts, _ := weibullProcess(r, 1.7e9, []segment{{1, 3600, 60}, {2, 7200, 80}, {0.5, 600, 80}, {1, 60, 200}})
	for mode := 0; mode < 2; mode++ {
		var s Segmenter
		maxLen, sum, sum1, count, ref := 0, 0, 0, 0, 0.0
		check := func() {
			b := s.AppendBinaryAt(nil, ref)
			maxLen = max(maxLen, len(b))
			sum += len(b)
			count++
			var d Segmenter
			n, err := d.DecodeBinaryAt(append(b, 0xff), ref)
			if err != nil || n != len(b) {
				t.Fatalf("decode: n=%d len=%d err=%v", n, len(b), err)
			}
			if !reflect.DeepEqual(d, s) {
				t.Fatalf("round trip differs:\n%+v\n%+v", d, s)
			}
			// The first layout, still decoded.
			b1 := appendLayout1(nil, &s)
			sum1 += len(b1)
			n, err = d.DecodeBinaryAt(b1, 12345)
			if err != nil || !reflect.DeepEqual(d, s) {
				t.Fatalf("first layout: n=%d err=%v\n%+v\n%+v", n, err, d, s)
			}
		}
		check()
		for _, p := range pts {
			// Whole milliseconds, as times from logs are.
			p = math.Round(p*1000) / 1000
			ref = p
			if mode == 0 {
				s.Event(p, &cfg)
			} else {
				s.Visit(p, r.IntN(2) == 0, &cfg)
			}
			check()
		}
		mean, mean1 := float64(sum)/float64(count), float64(sum1)/float64(count)
		if maxLen > 62 || mean > 0.9*mean1 {
			t.Errorf("mode %d: encoded size mean %.1f (first layout %.1f) max %d, want ≤ 90%%, ≤ 62", mode, mean, mean1, maxLen)
		}
		t.Logf("mode %d: encoded size mean %.1f (first layout %.1f), max %d bytes", mode, mean, mean1, maxLen)
	}
}

func TestDecodeErrors(t *testing.T) {
	var s Segmenter
	cfg := DefaultConfig()
	for i := 0; i < 20; i++ {
		s.Event(float64(i*i), &cfg)
	}
	good := s.AppendBinary(nil)
	for n := 0; n < len(good); n++ {
		var d Segmenter
		if _, err := d.DecodeBinary(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d: err = %v", n, err)
		}
	}
	for _, b := range [][]byte{{0xf0}, {flagDirUp | flagDirDown | flagStarted}, {0, 1}} {
		var d Segmenter
		if _, err := d.DecodeBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x: err = %v", b, err)
		}
	}
}

func FuzzDecodeBinary(f *testing.F) {
	cfg := DefaultConfig()
	var s Segmenter
	f.Add(s.AppendBinary(nil))
	for i := 0; i < 40; i++ {
		s.Event(float64(i*i*i), &cfg)
		f.Add(s.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Segmenter
		n, err := d.DecodeBinary(b)
		if err != nil {
			return
		}
		enc := d.AppendBinary(nil)
		var e Segmenter
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
