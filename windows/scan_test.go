package windows

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// stream returns Poisson points of rate per second on (t0, t0+d].
func stream(r *rand.Rand, t0, rate, d float64, out []float64) []float64 {
	for t := t0 + r.ExpFloat64()/rate; t <= t0+d; t += r.ExpFloat64() / rate {
		out = append(out, math.Round(t*1000)/1000)
	}
	return out
}

// TestScanRoundTrip: with the scan on, DecodeBinary(AppendBinary(s))
// equals s after every point of streams with bursts, and the scan's
// excursion is pending (encoded) at some of them.
func TestScanRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ScanAlarms = 0.01
	r := newRand(36)
	withScan := 0
	for i := 0; i < 20; i++ {
		t0 := 1.7e9
		pts := stream(r, t0, 100.0/86400, 7*86400, nil)
		pts = stream(r, t0+7*86400, 400.0/86400, 3*3600, pts)
		pts = stream(r, t0+7*86400+3*3600, 100.0/86400, 86400, pts)
		var s Segmenter
		for _, p := range pts {
			s.Event(p, &cfg)
			b := s.AppendBinaryAt(nil, p)
			if b[0]&flagScan != 0 {
				withScan++
			}
			var d Segmenter
			if n, err := d.DecodeBinaryAt(b, p); err != nil || n != len(b) || !reflect.DeepEqual(d, s) {
				t.Fatalf("round trip: n=%d of %d, err %v\n%+v\n%+v", n, len(b), err, d, s)
			}
		}
	}
	if withScan == 0 {
		t.Fatal("no state had a pending scan excursion: the round trip tested nothing")
	}
}

// TestScanFalseConfirmations checks the scan's bound on homogeneous Poisson
// streams (no shift): by Ville's inequality the scan adds at most
// ScanAlarms expected confirmations per stream and week. 400 streams of 2
// weeks at 400 points a day, ScanAlarms 0.05: at most 400·2·0.05 = 40
// expected beyond those of the CUSUM alone; the test allows 40 + 3·√40
// (a Poisson count's three standard deviations).
func TestScanFalseConfirmations(t *testing.T) {
	if testing.Short() {
		t.Skip("2.2 million points")
	}
	count := func(alarms float64) int {
		cfg := DefaultConfig()
		cfg.ScanAlarms = alarms
		r := newRand(3636)
		n := 0
		var pts []float64
		for i := 0; i < 400; i++ {
			pts = stream(r, 1.7e9, 400.0/86400, 14*86400, pts[:0])
			var s Segmenter
			for _, p := range pts {
				if sh, ok := s.Event(p, &cfg); ok && sh.Test == "cusum-binomial-up" {
					n++
				}
			}
		}
		return n
	}
	base, scan := count(0), count(0.05)
	bound := 400 * 2 * 0.05
	t.Logf("upward confirmations on 400 stationary streams of 2 weeks: CUSUM alone %d, with the scan %d (bound on the scan's extra %.0f)", base, scan, bound)
	if extra := float64(scan - base); extra > bound+3*math.Sqrt(bound) {
		t.Errorf("the scan added %.0f false confirmations, bound %.0f", extra, bound)
	}
}

// TestScanDetectsBurst: streams of 40 points a day for two weeks, then a
// 4× burst of 3 h (5 points expected, about 20 seen): the oracle that knows
// the burst's window detects it when P(Poisson(5) ≥ count) < 10⁻⁶; the
// scan (ScanAlarms 0.01) confirms ≥ 80 % of those bursts by the burst's end
// + 1 h, the 2× CUSUM alone (15 nats) fewer than half of them.
func TestScanDetectsBurst(t *testing.T) {
	const rate = 40.0 / 86400
	caught := func(alarms float64) (det, hit int) {
		cfg := DefaultConfig()
		cfg.ScanAlarms = alarms
		r := newRand(4040)
		var pts []float64
		for i := 0; i < 300; i++ {
			t0 := 1.7e9
			from, to := t0+14*86400, t0+14*86400+3*3600
			pts = stream(r, t0, rate, 14*86400, pts[:0])
			n0 := len(pts)
			pts = stream(r, from, 4*rate, 3*3600, pts)
			k := len(pts) - n0
			pts = stream(r, to, rate, 86400, pts)
			if (distuv.Poisson{Lambda: rate * 3 * 3600}).Survival(float64(k)-0.5) >= 1e-6 {
				continue
			}
			det++
			var s Segmenter
			for _, p := range pts {
				if p > to+3600 {
					break
				}
				if sh, ok := s.Event(p, &cfg); ok && sh.Test == "cusum-binomial-up" && p > from {
					hit++
					break
				}
			}
		}
		return det, hit
	}
	det, scan := caught(0.01)
	_, cusum := caught(0)
	t.Logf("oracle-detectable bursts %d: caught with the scan %d, by the 2× CUSUM alone %d", det, scan, cusum)
	if det < 50 {
		t.Fatalf("only %d oracle-detectable bursts: the scenario tests little", det)
	}
	if float64(scan) < 0.8*float64(det) || float64(cusum) >= 0.5*float64(det) {
		t.Errorf("caught %d (scan) and %d (CUSUM alone) of %d oracle-detectable bursts, want ≥ 80 %% and < 50 %%", scan, cusum, det)
	}
}
