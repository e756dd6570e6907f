package main

import (
	"math"
	"testing"
)

// The interleaved protocol is its own mirror image: reflecting the span
// about its centre maps selection windows onto selection windows and the
// observed windows onto the truth windows (and back); the windows tile the
// span without overlap.
func TestPHPInterleavedMirror(t *testing.T) {
	for _, k := range []int{1, 3, 12} {
		pr := phpInterleaved(k, 1.0/12)
		lo, hi := protocolSpan(pr)
		if len(pr.sel) != 2*k+1 || len(pr.obs) != k || len(pr.tru) != k || lo != 0 {
			t.Fatalf("K=%d: %d sel, %d obs, %d truth windows, span from %v", k, len(pr.sel), len(pr.obs), len(pr.tru), lo)
		}
		mirror := func(ws []yearWin) map[[2]int64]bool {
			m := map[[2]int64]bool{}
			for _, w := range ws {
				m[[2]int64{int64(math.Round((hi - w.b) * 1e9)), int64(math.Round((hi - w.a) * 1e9))}] = true
			}
			return m
		}
		same := func(ws []yearWin, m map[[2]int64]bool) bool {
			if len(ws) != len(m) {
				return false
			}
			for _, w := range ws {
				if !m[[2]int64{int64(math.Round(w.a * 1e9)), int64(math.Round(w.b * 1e9))}] {
					return false
				}
			}
			return true
		}
		if !same(pr.sel, mirror(pr.sel)) || !same(pr.tru, mirror(pr.obs)) || !same(pr.obs, mirror(pr.tru)) {
			t.Errorf("K=%d: the reflection does not map sel→sel, obs↔truth", k)
		}
		var all []yearWin
		all = append(append(append(all, pr.sel...), pr.obs...), pr.tru...)
		total := 0.0
		for i, a := range all {
			total += a.b - a.a
			for _, b := range all[i+1:] {
				if a.a < b.b && b.a < a.b {
					t.Errorf("K=%d: windows %v and %v overlap", k, a, b)
				}
			}
		}
		if math.Abs(total-(hi-lo)) > 1e-9 {
			t.Errorf("K=%d: windows cover %v of a span of %v", k, total, hi-lo)
		}
	}
}

// laidEnd keeps the changes inside the windows and shifts them so the
// windows follow each other from start.
func TestLaidEnd(t *testing.T) {
	const y = 365 * 86400.0
	start := 1000 * y
	ws := []yearWin{{0.25, 0.5}, {1, 1.5}}
	ev := []float64{start, start + 0.3*y, start + 0.5*y, start + 0.7*y, start + 1.2*y, start + 2*y}
	got, span := laidEnd(ev, start, ws)
	want := []float64{start + 0.05*y, start + 0.25*y, start + 0.45*y}
	if math.Abs(span-0.75*y) > 1e-6 || len(got) != len(want) {
		t.Fatalf("got %v (span %v), want %v (span %v)", got, span, want, 0.75*y)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-3 {
			t.Errorf("event %d at %v, want %v", i, got[i], want[i])
		}
	}
}

// The simulated part of the selection-artifact test: with autocorrelated
// rates (AR(1), φ = 0.5 a year) the years protocol's selection lowers the
// selected pages' observed year against their truth years by more than 2
// standard errors; without autocorrelation, or over all pages, or under
// the interleaved protocol, the level is within 4 standard errors of 0
// (flatTol).
func TestShiftSimulated(t *testing.T) {
	e := &Env{R: &Report{dir: t.TempDir()}, Quick: true, Seed: 1, Procs: 2}
	st := runShiftStudy(e, nil)
	z := func(l *shiftLevel) float64 { return l.level() / l.se() }
	if v := z(&st.sims[1].sel); v > -2 {
		t.Errorf("%s, years protocol, selected: level %.3f = %.2f SE, want ≤ −2 SE", shiftSims[1].name, st.sims[1].sel.level(), v)
	}
	if v := z(&st.sims[2].sel); math.Abs(v) > 4 {
		t.Errorf("%s, years protocol, selected: %.2f SE, want within 4", shiftSims[2].name, v)
	}
	for i, s := range shiftSims {
		if v := z(&st.sims[i].all); math.Abs(v) > 4 {
			t.Errorf("%s, years protocol, all pages: %.2f SE, want within 4", s.name, v)
		}
		if v := z(&st.simsNew[i].sel); math.Abs(v) > 4 {
			t.Errorf("%s, interleaved protocol, selected: %.2f SE, want within 4", s.name, v)
		}
	}
	// distance profile: the selected pages' observed year (distance 3) below
	// the years at distance 1 under autocorrelation
	_, lv := st.sims[1].profSel.byDistance()
	if len(lv) != 3 || lv[2] >= lv[0] {
		t.Errorf("%s: selected pages' level by distance %v, want the farthest year lowest", shiftSims[1].name, lv)
	}
}
