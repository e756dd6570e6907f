package wire

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGammaRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []uint64
	for i := 0; i < 5000; i++ {
		switch i % 4 {
		case 0:
			vals = append(vals, 1)
		case 1:
			vals = append(vals, 1+rng.Uint64N(10))
		case 2:
			vals = append(vals, 1+rng.Uint64N(1<<20))
		default:
			vals = append(vals, 1|rng.Uint64())
		}
	}
	vals = append(vals, math.MaxUint64, 1<<63)
	w := NewBitWriter([]byte{0xAB})
	for _, v := range vals {
		w.Gamma(v)
	}
	b := w.Finish()
	if b[0] != 0xAB {
		t.Fatal("prefix overwritten")
	}
	r := NewBitReader(b[1:])
	for i, v := range vals {
		if got := r.Gamma(); got != v || r.Failed() {
			t.Fatalf("value %d: got %d (failed %v), want %d", i, got, r.Failed(), v)
		}
	}
	if r.Bytes() != len(b)-1 || !r.Padding() {
		t.Fatalf("consumed %d of %d bytes, padding %v", r.Bytes(), len(b)-1, r.Padding())
	}
	r.Gamma()
	if !r.Failed() {
		t.Fatal("read past the end did not fail")
	}
}

func TestGammaLengths(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		bits int
	}{{1, 1}, {2, 3}, {3, 3}, {4, 5}, {7, 5}, {8, 7}, {255, 15}, {256, 17}} {
		w := NewBitWriter(nil)
		for i := 0; i < 8; i++ { // 8 codes: exactly bits bytes
			w.Gamma(c.v)
		}
		if got := len(w.Finish()); got != c.bits {
			t.Errorf("gamma(%d): 8 codes in %d bytes, want %d", c.v, got, c.bits)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		t, ref float64
		size   int
	}{
		{1.7e9, 0, 7},
		{1.7e9 + 0.123, 1.7e9, 2},
		{1.7e9, 1.7e9 + 30*86400, 5},
		{1.7e9 + 1e-4, 1.7e9, 3},             // not whole milliseconds: low bits XORed
		{1.700234191925125e+09, 1.7003e9, 6}, // a computed origin
		{1.7e9, 0.00012, 7},                  // ref not whole milliseconds
		{-12.5, 3, 3},
		{math.Copysign(0, -1), 0, 11}, // −0 is not float64(0)/1000 bit for bit
		{1e300, 1.7e9, 10},            // out of range
		{math.Inf(-1), 0, 11},
		{math.NaN(), 5, 10},
	} {
		b := AppendSeconds(nil, c.t, c.ref)
		r := NewReader(b)
		got := r.ReadSeconds(c.ref)
		if r.Err() != nil || (math.Float64bits(got) != math.Float64bits(c.t) && !(math.IsNaN(got) && math.IsNaN(c.t))) || r.Offset() != len(b) {
			t.Errorf("%v rel %v: got %v err %v", c.t, c.ref, got, r.Err())
		}
		if len(b) != c.size {
			t.Errorf("%v rel %v: %d bytes, want %d", c.t, c.ref, len(b), c.size)
		}
	}
}

func FuzzBitReader(f *testing.F) {
	f.Add([]byte{0x01, 0xff, 0x00, 0x13})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewBitReader(b)
		var vals []uint64
		for !r.Failed() {
			v := r.Gamma()
			if !r.Failed() {
				vals = append(vals, v)
			}
		}
		w := NewBitWriter(nil)
		for _, v := range vals {
			if v == 0 {
				t.Fatal("gamma decoded 0")
			}
			w.Gamma(v)
		}
		out := w.Finish()
		r2 := NewBitReader(out)
		for _, v := range vals {
			if r2.Gamma() != v {
				t.Fatal("re-encoding differs")
			}
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0x02, 0x80, 0x01, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		_ = r.Uvarint()
		_ = r.ReadSeconds(1.7e9)
		_ = r.Float32()
		_ = r.Float64()
		if r.Err() == nil && r.Offset() > len(b) {
			t.Fatal("read past the end without error")
		}
	})
}

func TestRiceRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type code struct {
		v uint64
		k uint
	}
	var codes []code
	for i := 0; i < 5000; i++ {
		k := uint(rng.IntN(20))
		codes = append(codes, code{rng.Uint64N(uint64(40) << k), k})
	}
	w := NewBitWriter(nil)
	for _, c := range codes {
		w.Rice(c.v, c.k)
	}
	b := w.Finish()
	r := NewBitReader(b)
	for i, c := range codes {
		if got := r.Rice(c.k, 40); got != c.v || r.Failed() {
			t.Fatalf("code %d: got %d, want %d (k %d)", i, got, c.v, c.k)
		}
	}
	if r.Bytes() != len(b) || !r.Padding() {
		t.Fatal("did not consume exactly the written bytes")
	}
	// Lengths: v>>k + 1 + k bits.
	w = NewBitWriter(nil)
	for i := 0; i < 8; i++ {
		w.Rice(9, 2) // q = 2: 2 + 1 + 2 = 5 bits
	}
	if n := len(w.Finish()); n != 5 {
		t.Errorf("8 codes of 5 bits took %d bytes", n)
	}
	// A long run of zeros fails instead of reading on.
	r = NewBitReader(make([]byte, 16))
	if r.Rice(3, 40); !r.Failed() {
		t.Error("quotient above the bound did not fail")
	}
}

func TestLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		x := math.Exp(rng.Float64()*80 - 40)
		if got, want := Log(x), math.Log(x); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("Log(%v) = %v, want %v", x, got, want)
		}
	}
	for _, x := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if Log(x) != 0 {
			t.Errorf("Log(%v) = %v, want 0", x, Log(x))
		}
	}
	if Log(1) != 0 || Log(math.E) < 0.999999999 {
		t.Errorf("Log(1) = %v, Log(e) = %v", Log(1), Log(math.E))
	}
}
