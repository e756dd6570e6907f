package windows

import (
	"flag"
	"fmt"
	"testing"
)

var calib = flag.Bool("calib", false, "run the detector calibration sweep")

func TestCalib(t *testing.T) {
	if !*calib {
		t.Skip("needs -calib")
	}
	for _, h := range []float64{6, 7, 8, 9, 10, 11} {
		cfg := DefaultConfig()
		cfg.Threshold = h
		cfg.MaxPValue = 1
		alarms := 0
		const N = 2000
		for o := 0; o < N; o++ {
			r := newRand(uint64(o))
			var s Stream
			s.Event(1e9, &cfg)
			hit := false
			for _, ts := range poissonTimes(r, 1e9, 1.0/3600, 1000) {
				if _, ok := s.Event(ts, &cfg); ok {
					hit = true
				}
			}
			if hit {
				alarms++
			}
		}
		// delay
		var d2, d4 [2]float64
		for o := 0; o < 500; o++ {
			for j, ratio := range []float64{2, 4} {
				for dirI, up := range []bool{true, false} {
					r := newRand(uint64(100000 + o))
					var s Stream
					s.Event(0, &cfg)
					pre := poissonTimes(r, 0, 1, 200)
					for _, ts := range pre {
						s.Event(ts, &cfg)
					}
					lam := ratio
					if !up {
						lam = 1 / ratio
					}
					post := poissonTimes(r, pre[len(pre)-1], lam, 2000)
					delay := 2000
					for i, ts := range post {
						if _, ok := s.Event(ts, &cfg); ok {
							delay = i + 1
							break
						}
					}
					if j == 0 {
						d2[dirI] += float64(delay) / 500
					} else {
						d4[dirI] += float64(delay) / 500
					}
				}
			}
		}
		fmt.Printf("h=%v FA=%.4f delay2x up %.1f down %.1f; 4x up %.1f down %.1f\n", h, float64(alarms)/N, d2[0], d2[1], d4[0], d4[1])
	}
}
