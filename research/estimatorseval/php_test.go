package estimatorseval

import (
	"bufio"
	"compress/gzip"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/realdata"
)

// phpHistory is the real change history of the PHP manual (see
// ../shared/data/php-doc-en-history/SOURCE.txt), relative to the data
// folder; it is read in place and never copied into the repository.
const phpHistory = "php-doc-en-history/git-file-changes.tsv.gz"

// loadPHP returns per-path sorted change times, without bulk commits
// (≥ 500 files: reformatting, licence edits — SOURCE.txt caveat).
func loadPHP(t *testing.T) map[string][]float64 {
	f, err := os.Open(filepath.Join(realdata.Dir(t, phpHistory), phpHistory))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		path string
		tm   int64
	}
	var rows []row
	perCommit := map[int64]int{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		p, ts, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		tm, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			continue
		}
		rows = append(rows, row{p, tm})
		perCommit[tm]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, r := range rows {
		if perCommit[r.tm] >= 500 {
			continue
		}
		out[r.path] = append(out[r.path], float64(r.tm))
	}
	for _, v := range out {
		sort.Float64s(v)
	}
	return out
}

// TestPHPDocHistoryEvaluation simulates crawlers over two years
// (2016–2017) of the real PHP-manual history and compares each estimator
// with the true rate (days with a change in the window / window length, as
// CGM's projected change frequency, §6.3) on pages with at least 4 such
// days. It reports the median of
// estimate/truth and the mean |log(estimate/truth)|; it checks that the
// best estimate is closer to the truth than naive in the regimes where
// naive misses changes (weekly and monthly visits).
func TestPHPDocHistoryEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluation run")
	}
	hist := loadPHP(t)
	cfg := estimators.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	const start, end = 1451606400.0, 1514764800.0 // 2016-01-01 .. 2018-01-01
	rng := rand.New(rand.NewPCG(81, 82))
	type crawler struct {
		name      string
		interval  float64
		irregular bool
		lm        bool
	}
	for _, cr := range []crawler{
		{"weekly, no LM", week, false, false},
		{"weekly, LM", week, false, true},
		{"monthly, no LM", 30 * day, false, false},
		{"monthly, LM", 30 * day, false, true},
		{"irregular mean weekly, no LM", week, true, false},
	} {
		errs := map[string][]float64{}
		pages := 0
		for _, times := range hist {
			i0 := sort.SearchFloat64s(times, start)
			i1 := sort.SearchFloat64s(times, end)
			if i1-i0 < 4 {
				continue
			}
			// Truth as in CGM §6.3: changes at daily resolution (commit
			// bursts on one day — fix-ups, merges — count once).
			days := 0
			for i, prev := i0, math.Inf(-1); i < i1; i++ {
				if d := math.Floor(times[i] / day); d != prev {
					days++
					prev = d
				}
			}
			if days < 4 {
				continue
			}
			truth := float64(days) / (end - start)
			var c estimators.Change
			tm := start
			k := i0 // next change index
			lastMod := math.NaN()
			if i0 > 0 {
				lastMod = times[i0-1]
			}
			last := tm // the latest visit's time, at the estimators' millisecond resolution
			for tm <= end {
				ch := false
				for k < len(times) && times[k] <= tm {
					lastMod, ch = times[k], true
					k++
				}
				v := estimators.Visit{Time: tm, Changed: ch}
				if cr.lm && !math.IsNaN(lastMod) {
					v.LastModified, v.HasLastModified = lastMod, true
				}
				c.Visit(v)
				last = math.Round(tm*1000) / 1000
				if cr.irregular {
					tm += rng.ExpFloat64() * cr.interval
				} else {
					tm += cr.interval
				}
			}
			pages++
			var out estimators.Estimates
			best, ok := c.Estimate(last, &cfg, &out)
			if ok {
				errs["best"] = append(errs["best"], best.Rate/truth)
			}
			for i := 0; i < out.Len(); i++ {
				e := out.At(i)
				errs[e.Key] = append(errs[e.Key], e.Rate/truth)
			}
		}
		t.Logf("%s: %d pages (≥ 4 change days in 2016–2017)", cr.name, pages)
		mal := map[string]float64{}
		keys := make([]string, 0, len(errs))
		for k := range errs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := errs[k]
			sort.Float64s(v)
			s := 0.0
			for _, x := range v {
				s += math.Abs(math.Log(math.Max(x, 1e-3)))
			}
			mal[k] = s / float64(len(v))
			t.Logf("    %-18s n=%5d median est/true %.3f  mean|log| %.3f", k, len(v), v[len(v)/2], mal[k])
		}
		if !cr.irregular && !(mal["best"] < mal[estimators.KeyNaive]) {
			t.Errorf("%s: best (%.3f) not closer to the truth than naive (%.3f)", cr.name, mal["best"], mal[estimators.KeyNaive])
		}
	}
}

// day and week in seconds.
const (
	day  = 86400.0
	week = 7 * day
)
