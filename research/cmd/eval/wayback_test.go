package main

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/realdata"
)

// TestWaybackNumbers checks the section's counts and two estimators on
// the real rows against an independent computation from the raw lines:
// the informative visits (200 rows with a digest of the URL as the archive
// wrote it), the changes (consecutive digests that differ), naive X/T,
// and CGM eq. 2 solved by bisection on the exact intervals (the product
// solves it on bucketed changed intervals: tolerance 2 %).
func TestWaybackNumbers(t *testing.T) {
	path := filepath.Join(realdata.Dir(t), "..", "cdx-samples", waybackFile)
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	objs, _, lines, err := readWayback(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines != 3847 {
		t.Fatalf("%d lines", lines)
	}
	// zew.de over https: no revisit rows, so the raw rule is simple.
	f, _ := os.Open(path)
	defer f.Close()
	var times []float64
	var digests []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Fields(sc.Text())
		// The archive wrote the URL with and without its root slash.
		if (c[2] != "https://www.zew.de/" && c[2] != "https://www.zew.de") || c[4] != "200" {
			continue
		}
		ts, ok := warcTime(c[1])
		if !ok {
			t.Fatal(c[1])
		}
		if n := len(times); n > 0 && times[n-1] == ts && digests[n-1] == c[5] {
			continue // the same capture listed twice (with and without the slash): the aggregator's duplicate
		}
		times = append(times, ts)
		digests = append(digests, c[5])
	}
	var changedT, unchangedT []float64
	for i := 1; i < len(times); i++ {
		d := times[i] - times[i-1]
		if digests[i] != digests[i-1] {
			changedT = append(changedT, d)
		} else {
			unchangedT = append(unchangedT, d)
		}
	}
	o := objs["https://www.zew.de/"]
	if o == nil || len(o.visits) != len(times) || o.obj.Change.Changes() != int64(len(changedT)) {
		t.Fatalf("https://www.zew.de/: %d visits %d changes, want %d %d", len(o.visits), o.obj.Change.Changes(), len(times), len(changedT))
	}
	T := times[len(times)-1] - times[0]
	m := aggregate.DefaultModel()
	var sc2 estimators.Estimates
	est, ok := o.obj.ChangeEstimate("https://www.zew.de/", &m, &sc2)
	if !ok {
		t.Fatal("no estimate")
	}
	if got, want := est.Estimates[estimators.KeyNaive], float64(len(changedT))/T; math.Abs(got/want-1) > 1e-9 {
		t.Errorf("naive %g, want X/T = %g", got, want)
	}
	// Σ t/(e^{λt}−1) = Σ u, decreasing in λ.
	U := 0.0
	for _, u := range unchangedT {
		U += u
	}
	g := func(l float64) float64 {
		s := 0.0
		for _, c := range changedT {
			if x := l * c; x < 700 {
				s += c / math.Expm1(x)
			}
		}
		return s - U
	}
	lo, hi := 1e-12, 1.0
	for i := 0; i < 200; i++ {
		mid := math.Sqrt(lo * hi)
		if g(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	want := math.Sqrt(lo * hi)
	got := est.Estimates[estimators.KeyCGMIrregularMLE]
	t.Logf("https://www.zew.de/: %d visits, %d changes, naive %.4g/day, eq. 2 exact %.4g/day, product %.4g/day", len(times), len(changedT),
		est.Estimates[estimators.KeyNaive]*86400, want*86400, got*86400)
	if math.Abs(got/want-1) > 0.02 {
		t.Errorf("cgm_irregular_mle %g, eq. 2 on the exact intervals %g (tolerance 2 %%)", got, want)
	}
}

func warcTime(s string) (float64, bool) {
	if len(s) != 14 {
		return 0, false
	}
	tm, err := timeParse14(s)
	if err != nil {
		return 0, false
	}
	return float64(tm.UnixMilli()) / 1000, true
}

func timeParse14(s string) (time.Time, error) { return time.Parse("20060102150405", s) }
