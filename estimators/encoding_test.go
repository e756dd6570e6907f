package estimators

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// randomChange drives a Change through random visits and snapshots.
func randomChange(rng *rand.Rand, visits, snaps int, lm bool) Change {
	var c Change
	tm := 1.7e9
	for i := 0; i < visits; i++ {
		tm += rng.ExpFloat64() * 86400
		v := Visit{Time: tm, Changed: rng.IntN(2) == 0}
		if lm && rng.IntN(4) != 0 {
			v.LastModified, v.HasLastModified = tm-rng.ExpFloat64()*86400, true
		}
		c.Visit(v)
	}
	for i := 0; i < snaps; i++ {
		tm += 3600
		c.Snapshot(Snapshot{Time: tm, Period: 3600, LastEvent: tm - rng.Float64()*7200, HasEvent: rng.IntN(3) != 0})
	}
	return c
}

func TestChangeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		c := randomChange(rng, rng.IntN(300), rng.IntN(3)*rng.IntN(200), rng.IntN(2) == 0)
		ref := 0.0
		if i%2 == 1 {
			ref = c.latest() + rng.Float64()*3600 // as aggregate passes it: at or after the latest visit
		}
		b := c.AppendBinaryAt([]byte{0xAA}, ref)
		var d Change
		n, err := d.DecodeBinaryAt(b[1:], ref)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n != len(b)-1 {
			t.Fatalf("case %d: consumed %d of %d", i, n, len(b)-1)
		}
		if d != c {
			t.Fatalf("case %d: round trip differs:\n%+v\n%+v", i, c, d)
		}
	}
}

func TestAccessRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		var a Access
		tm := 1.7e9
		for j, n := 0, rng.IntN(50); j < n; j++ {
			tm += rng.ExpFloat64() * 60
			a.Access(tm)
		}
		for j, n := 0, rng.IntN(3)*rng.IntN(50); j < n; j++ {
			tm += 600
			a.Snapshot(Snapshot{Time: tm, Period: 600, LastEvent: tm - rng.Float64()*900, HasEvent: true})
		}
		b := a.AppendBinary(nil)
		var d Access
		n, err := d.DecodeBinary(b)
		if err != nil || n != len(b) || d != a {
			t.Fatalf("case %d: err %v n %d/%d\n%+v\n%+v", i, err, n, len(b), a, d)
		}
	}
}

// TestEncodingSizes pins the sizes of typical objects (budget: Change ≈ 90,
// Access ≤ 40 bytes).
func TestEncodingSizes(t *testing.T) {
	// Daily crawler with Last-Modified, 120 visits, ~weekly changes.
	var c Change
	tm, lastMod := 1.7e9, 1.7e9-5*86400
	for i := 0; i <= 120; i++ {
		tm += 86400 + float64(i%7)*60
		ch := i%7 == 3
		if ch {
			lastMod = tm - 3600*float64(i%11)
		}
		c.Visit(Visit{Time: tm, Changed: ch, LastModified: lastMod, HasLastModified: true})
	}
	var noLM Change
	tm = 1.7e9
	for i := 0; i <= 120; i++ {
		tm += 86400
		noLM.Visit(Visit{Time: tm, Changed: i%5 == 0})
	}
	var a Access
	for i := 0; i < 10000; i++ {
		a.Access(1.7e9 + float64(i)*7)
	}
	var as Access
	for i := 0; i < 1000; i++ {
		as.Snapshot(Snapshot{Time: 1.7e9 + float64(i)*3600, Period: 3600, LastEvent: 1.7e9 + float64(i)*3600 - 100, HasEvent: true})
	}
	for _, x := range []struct {
		name string
		n    int
		max  int
	}{
		{"change crawler+LM", len(c.AppendBinary(nil)), 90},
		{"change crawler no LM", len(noLM.AppendBinary(nil)), 60},
		{"access direct", len(a.AppendBinary(nil)), 40},
		{"access snapshots", len(as.AppendBinary(nil)), 40},
	} {
		t.Logf("%s: %d bytes", x.name, x.n)
		if x.n > x.max {
			t.Errorf("%s: %d bytes > %d", x.name, x.n, x.max)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	var c Change
	for _, b := range [][]byte{nil, {0x00}, {0x1f}, {0x11}, {0x11, 0x80}, {0x11, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, err := c.DecodeBinary(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x: err = %v, want ErrCorrupt", b, err)
		}
	}
	var a Access
	if _, err := a.DecodeBinary([]byte{0x2f}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("access: err = %v", err)
	}
}

func FuzzChangeDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 8; i++ {
		c := randomChange(rng, i*10, i*3, i%2 == 0)
		f.Add(c.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Change
		n, err := c.DecodeBinary(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d", n, len(b))
		}
		// What decodes re-encodes to a state that decodes to the same.
		var d Change
		if _, err := d.DecodeBinary(c.AppendBinary(nil)); err != nil || d != c {
			t.Fatalf("re-encode: %v", err)
		}
		cfg := DefaultConfig()
		var out Estimates
		c.Estimate(0, &cfg, &out)
		checkWellFormed(t, &out)
		if tv, ok := c.NextVisit(0, &cfg); ok && !finite(tv) {
			t.Fatalf("next visit %v", tv)
		}
	})
}

func FuzzAccessDecode(f *testing.F) {
	var a Access
	a.Access(1)
	a.Access(5)
	a.Snapshot(Snapshot{Time: 10, Period: 5, LastEvent: 7, HasEvent: true})
	f.Add(a.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Access
		n, err := a.DecodeBinary(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		var d Access
		if _, err := d.DecodeBinary(a.AppendBinary(nil)); err != nil || d != a || n > len(b) {
			t.Fatalf("re-encode: %v", err)
		}
		cfg := DefaultConfig()
		var out Estimates
		a.Estimate(0, &cfg, &out)
		checkWellFormed(t, &out)
	})
}

// checkWellFormed fails on an estimate that is not finite and non-negative
// or lies outside its interval.
func checkWellFormed(t *testing.T, out *Estimates) {
	t.Helper()
	for i := 0; i < out.Len(); i++ {
		e := out.At(i)
		if !finite(e.Rate) || e.Rate < 0 || (e.HasCI && !(finite(e.Lo) && finite(e.Hi) && e.Lo <= e.Rate*(1+1e-9) && e.Rate <= e.Hi*(1+1e-9))) {
			t.Fatalf("bad estimate %+v", e)
		}
	}
}
