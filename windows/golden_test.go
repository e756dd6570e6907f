package windows

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// readSpec reads a hand-made sequence: lines "count gap [factor]" append
// count update points, gap seconds apart, the gap multiplied by factor after
// each point; '#' starts a comment. Times start at 1.7e9 (the origin).
func readSpec(t *testing.T, path string) []float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts := []float64{1.7e9}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		n, err1 := strconv.Atoi(fs[0])
		gap, err2 := strconv.ParseFloat(fs[1], 64)
		factor := 1.0
		if len(fs) > 2 {
			factor, _ = strconv.ParseFloat(fs[2], 64)
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", path, line)
		}
		for i := 0; i < n; i++ {
			ts = append(ts, ts[len(ts)-1]+gap)
			gap *= factor
		}
	}
	return ts
}

func fmtSummary(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%v start=%+.0f points=%d", s.State, s.Start-1.7e9, s.Points)
	if s.HasWeibull {
		fmt.Fprintf(&b, " beta=%.4g eta=%.4g", s.Beta, s.Eta)
	}
	if s.HasDuane {
		fmt.Fprintf(&b, " duane=%.4g", s.DuaneSlope)
	}
	if s.HasRate {
		fmt.Fprintf(&b, " rate=%.4g/s model=%s", s.Rate, s.Model)
	}
	if s.HasNext {
		fmt.Fprintf(&b, " next=%+.1f", s.NextUpdate-1.7e9)
	}
	return b.String()
}

// TestGoldenSegmentation runs hand-made sequences through Segmenter.Event and
// compares the shifts and the final window with testdata/*.golden.
func TestGoldenSegmentation(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.in")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	cfg := DefaultConfig()
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var b strings.Builder
			var s Segmenter
			ts := readSpec(t, in)
			for i, x := range ts {
				if sh, ok := s.Event(x, &cfg); ok {
					fmt.Fprintf(&b, "shift at point %d (t=%+.0f) %s p=%.3g rate %.4g -> %.4g\n  before: %s\n  after:  %s\n",
						i, sh.At-1.7e9, sh.Test, sh.PValue, sh.RateBefore, sh.RateAfter, fmtSummary(sh.Before), fmtSummary(sh.After))
				}
			}
			fmt.Fprintf(&b, "final: %s\n", fmtSummary(s.Current(ts[len(ts)-1], &cfg)))
			golden := strings.TrimSuffix(in, ".in") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
