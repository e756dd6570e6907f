package records

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkJSONFloat compares jsonAppender.float with encoding/json's
// encoding of f (a refusal where json.Marshal refuses).
func checkJSONFloat(t *testing.T, f float64) {
	t.Helper()
	a := jsonAppender{b: []byte("x"), ok: true}
	a.float(f)
	want, err := json.Marshal(f)
	if err != nil {
		if a.ok {
			t.Fatalf("%v (%#x): json.Marshal refuses (%v), float wrote %q", f, math.Float64bits(f), err, a.b[1:])
		}
		return
	}
	if !a.ok || string(a.b[1:]) != string(want) {
		t.Fatalf("%v (%#x): float %q (ok %v), json.Marshal %s", f, math.Float64bits(f), a.b[1:], a.ok, want)
	}
}

// FuzzJSONFloat checks jsonAppender.float (appendFixed for the 'f' form)
// against encoding/json on arbitrary float64 bits.
func FuzzJSONFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 1e-6, math.Nextafter(1e-6, 0), 1e21, math.Nextafter(1e21, 0), 0.1, 123456789,
		4.5291536108716845e-05, 1.0000000000000002, 999999999999999999999, 1e20, 12345678901234567890, 0.000012345678901234567, math.MaxFloat64,
		math.SmallestNonzeroFloat64, 5e-324, 1e100, 1e-100, math.Inf(1), math.NaN()} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) { checkJSONFloat(t, math.Float64frombits(bits)) })
}

// TestJSONFloatRanges checks jsonAppender.float against encoding/json on
// 2,000,000 floats: arbitrary bits, and values spread log-uniformly over
// 1e-8 to 1e23 (the 'f' form and both of its boundaries), as rates,
// intervals and times are, with their neighbours one ulp apart.
func TestJSONFloatRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 45))
	n := 500000
	if testing.Short() {
		n /= 20
	}
	for range n {
		checkJSONFloat(t, math.Float64frombits(r.Uint64()))
		v := math.Pow(10, -8+31*r.Float64())
		if r.IntN(2) == 0 {
			v = -v
		}
		checkJSONFloat(t, v)
		checkJSONFloat(t, math.Nextafter(v, 0))
		checkJSONFloat(t, math.Nextafter(v, math.Inf(1)))
	}
	for e := -7; e <= 22; e++ {
		for _, m := range []float64{1, 1.5, 9.999999999999999, 2.5} {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(m, 'f', -1, 64)+"e"+strconv.Itoa(e), 64)
			checkJSONFloat(t, v)
			checkJSONFloat(t, math.Nextafter(v, 0))
			checkJSONFloat(t, math.Nextafter(v, math.Inf(1)))
		}
	}
}

func BenchmarkJSONFloat(b *testing.B) {
	vs := []float64{4.5291536108716845e-05, 0.00018039389894152925, 1843.5284400122853, 0.000007095451436932297}
	a := jsonAppender{b: make([]byte, 0, 64), ok: true}
	for b.Loop() {
		for _, v := range vs {
			a.b, a.nf = a.b[:0], 0
			a.float(v)
		}
	}
}
