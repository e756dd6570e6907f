package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// realData returns the path of a file of ../shared/data; it skips when the
// data is absent and fails under CI=true.
func realData(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real data missing under CI: %v", err)
		}
		t.Skipf("real data absent: %v", err)
	}
	return p
}

// raceSampleLines is how many lines of each real file the tests read under
// the race detector (all of them otherwise).
const raceSampleLines = 30000

// realSample returns path, or under the race detector a file of its first
// raceSampleLines lines (a prefix of a newest-first log is newest first).
func realSample(t *testing.T, path string) string {
	t.Helper()
	if !raceEnabled {
		return path
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var b bytes.Buffer
	for n := 0; n < raceSampleLines && sc.Scan(); n++ {
		b.Write(sc.Bytes())
		b.WriteByte('\n')
	}
	out := filepath.Join(t.TempDir(), filepath.Base(strings.TrimSuffix(path, ".gz")))
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// summaryCount reads one count of the aggregator summary on stderr.
func summaryCount(t *testing.T, stderr, label string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + ` +(\d+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("summary has no %q:\n%s", label, stderr)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func estimates(t *testing.T, out string) []records.Estimate {
	t.Helper()
	var es []records.Estimate
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e records.Estimate
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// TestRealPHPDocNewestFirst: php-doc's git history (newest first, as git
// log writes it) gives the same estimates, byte for byte, as the same
// lines sorted oldest first, and every object with a change has a rate.
func TestRealPHPDocNewestFirst(t *testing.T) {
	src := realSample(t, realData(t, "php-doc-en-history/git-file-changes.tsv.gz"))
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(src, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	type line struct {
		t int64
		s string
	}
	var lines []line
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		ts, _ := strconv.ParseInt(fs[len(fs)-1], 10, 64)
		lines = append(lines, line{ts, sc.Text()})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].t < lines[j].t })
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l.s + "\n")
	}
	sorted := filepath.Join(t.TempDir(), "oldest-first.tsv")
	if err := os.WriteFile(sorted, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	newest, stderr, err := filter(t, ingestFiles(t, "changes-tsv", nil, src))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	oldest, _, err := filter(t, ingestFiles(t, "changes-tsv", nil, sorted))
	if err != nil {
		t.Fatal(err)
	}
	if newest != oldest {
		t.Fatal("newest-first and oldest-first replays give different estimates")
	}
	// Every object with a change has the estimators' rates; the best
	// estimate (rate_per_s, the rule of estimators/doc.go) is withheld only
	// for objects seen twice (one interval).
	var withChange, withEstimates, rated, oneInterval int
	for _, e := range estimates(t, newest) {
		if e.Changes == 0 {
			continue
		}
		withChange++
		if len(e.Estimates) > 0 {
			withEstimates++
		}
		switch {
		case e.RatePerS != nil:
			rated++
		case e.Observations == 2:
			oneInterval++
		default:
			t.Errorf("%s: %d observations, %d changes and no rate", e.Object, e.Observations, e.Changes)
		}
	}
	t.Logf("%d objects with a change: %d with estimator rates, %d with a best rate, %d seen twice without one", withChange, withEstimates, rated, oneInterval)
	if withChange == 0 || withEstimates != withChange || rated == 0 {
		t.Fatalf("%d objects with changes, %d with estimator rates, %d with a best rate", withChange, withEstimates, rated)
	}
	if got := summaryCount(t, stderr, "objects with a rate"); got < int64(rated) {
		t.Errorf("summary: %d objects with a rate, estimates show %d", got, rated)
	}
}

// TestRealWorldCupNothingDropped: all 200,000 WorldCup requests are
// applied: none is dropped as late or as a duplicate.
func TestRealWorldCupNothingDropped(t *testing.T) {
	src := realData(t, "worldcup98-day6-sample/wc_day6_1_sample.csv.gz")
	want := int64(200000)
	if raceEnabled {
		src, want = realSample(t, src), raceSampleLines
	}
	obs := ingestFiles(t, "worldcup-csv", time.UTC, src)
	n := int64(bytes.Count(obs, []byte("\n")))
	out, stderr, err := filter(t, obs)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	applied := summaryCount(t, stderr, "applied")
	if n != want || applied != n || summaryCount(t, stderr, "late") != 0 || summaryCount(t, stderr, "duplicates") != 0 {
		t.Fatalf("%d observations, %d applied:\n%s", n, applied, stderr)
	}
	var accesses int64
	for _, e := range estimates(t, out) {
		if e.Kind == records.EstimateAccess {
			accesses += e.Observations
		}
	}
	if accesses != n {
		t.Errorf("access estimates account for %d of %d requests", accesses, n)
	}
}

// TestRealCrawlLogsEitherOrder: the two Heritrix H1 crawl logs given in
// either order give identical estimates (and the same number of applied
// observations).
func TestRealCrawlLogsEitherOrder(t *testing.T) {
	j5 := realData(t, "heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job5.log.gz")
	j11 := realData(t, "heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job11.log.gz")
	a, stderrA, err := filter(t, ingestFiles(t, "heritrix", nil, j5, j11))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderrA)
	}
	b, stderrB, err := filter(t, ingestFiles(t, "heritrix", nil, j11, j5))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("the two orders give different estimates")
	}
	if summaryCount(t, stderrA, "late") != 0 || summaryCount(t, stderrA, "applied") != summaryCount(t, stderrB, "applied") {
		t.Fatalf("summaries:\n%s\n%s", stderrA, stderrB)
	}
	t.Logf("%d estimates; %d applied, %d objects with a rate", strings.Count(a, "\n"),
		summaryCount(t, stderrA, "applied"), summaryCount(t, stderrA, "objects with a rate"))
}

// TestRealPHPDocCompleteEvents: the php-doc git history through the
// programs' path (ingest --format=changes-tsv | aggregator --in=-
// --store=memory --out=- --emit=final) is a complete record of every
// file's changes, so the published rate is the Poisson rate
// (N+½)/(T+τ₀) (estimators/events.go), not a visit-based estimator that
// reads every commit as "changed at every visit" (issue 31: cgm_improved
// was published for 11,192 of the 12,096 files with ≥ 5 changes, a median
// 2.83× their rate N/T, which naive gives exactly here). T is the
// exposure of estimators/events.go E1: from the file's first event to the
// as-of time, the end of the log with --emit=final (not the file's last
// change), in both naive and poisson_events.
//
// Tolerance: for N ≥ 5 changes, (N+½)/(T+τ₀) ÷ N/T = (1 + ½/N)·T/(T+τ₀)
// lies in (1 − τ₀/T, 1.1]; the median over files must lie in [0.95, 1.10]
// (files published from a window after a confirmed rate shift, about 7 %,
// follow their recent rate instead).
func TestRealPHPDocCompleteEvents(t *testing.T) {
	src := realSample(t, realData(t, "php-doc-en-history/git-file-changes.tsv.gz"))
	out, stderr, err := filter(t, ingestFiles(t, "changes-tsv", nil, src))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	const tau0 = 43200.0
	var ratios []float64
	byEstimator := map[string]int{}
	for _, e := range estimates(t, out) {
		naive, ok := e.Estimates["naive"]
		if e.Changes < 5 || e.RatePerS == nil || !ok || naive <= 0 {
			continue
		}
		byEstimator[e.Estimator]++
		ratios = append(ratios, *e.RatePerS/naive)
		if e.Estimator == "poisson_events" {
			// naive is N/T with T the exposure of (E1): from the
			// file's first event to the end of the log (the as-of of
			// --emit=final), not to its last change.
			N := float64(e.Changes)
			T := N / naive
			if want := (N + 0.5) / (T + tau0); math.Abs(*e.RatePerS/want-1) > 1e-9 {
				t.Errorf("%s: rate %g, want (N+½)/(T+τ₀) = %g", e.Object, *e.RatePerS, want)
			}
		}
		if e.Object == "reference/filesystem/functions/unlink.xml" {
			// 23 changes in the file, one every ~313 days between its
			// first and last change (387 to the end of the log); the
			// rule published one every 81 days.
			days := 1 / *e.RatePerS / 86400
			t.Logf("unlink.xml: one change every %.0f days (naive %.0f)", days, 1/naive/86400)
			if math.Abs(days*naive*86400-1) > 0.05 {
				t.Errorf("unlink.xml: one change every %.0f days, naive %.0f", days, 1/naive/86400)
			}
		}
	}
	if len(ratios) == 0 {
		t.Fatal("no file with ≥ 5 changes and a rate")
	}
	sort.Float64s(ratios)
	med := ratios[len(ratios)/2]
	t.Logf("%d files with ≥ 5 changes: median published/naive %.4f; estimators %v", len(ratios), med, byEstimator)
	if med < 0.95 || med > 1.10 {
		t.Errorf("median published/naive = %.4f, want within [0.95, 1.10]", med)
	}
	if byEstimator["poisson_events"] < len(ratios)/2 {
		t.Errorf("poisson_events published for %d of %d files", byEstimator["poisson_events"], len(ratios))
	}
}

// TestRealHeritrixSparseWellConditioned: the NetarchiveSuite Heritrix
// logs (jobs of 2006, 2012 and 2015) through ingest and the aggregator.
// http://www.raeder.dk/ (3 visits nine years apart, 1 change) published
// cgm_irregular_mle with ci95 [1.77e-42, 1.03e+27] /s (issue 31); a
// published interval wider than a single Poisson event's (Garwood, ratio
// G ≈ 220 at 95 %; estimators/best.go B5) is not chosen while another
// estimator of the record has a narrower one.
func TestRealHeritrixSparseWellConditioned(t *testing.T) {
	dir := "heritrix-crawl-logs-netarchivesuite/"
	var paths []string
	for _, f := range []string{"crawl-h1-2006-job5.log.gz", "crawl-h1-2006-job11.log.gz", "idna-crawl-h1.14.4-2012.log.gz", "crawl-h3-2015.log.gz"} {
		paths = append(paths, realData(t, dir+f))
	}
	out, stderr, err := filter(t, ingestFiles(t, "heritrix", nil, paths...))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	const G = 220.0 // Garwood 95 % interval of one event: 5.572/0.02532
	ratio := func(iv [2]float64) float64 {
		if !(iv[0] > 0) {
			return math.Inf(1)
		}
		return iv[1] / iv[0]
	}
	seen := false
	for _, e := range estimates(t, out) {
		if e.CI95 == nil {
			continue
		}
		r := ratio(*e.CI95)
		if e.Object == "http://www.raeder.dk/" {
			seen = true
			t.Logf("raeder.dk: %s %.3g /s, ci95 [%.3g, %.3g] (ratio %.1f)", e.Estimator, *e.RatePerS, e.CI95[0], e.CI95[1], r)
			if r > G {
				t.Errorf("raeder.dk: %s ci95 %v spans %.3g", e.Estimator, *e.CI95, r)
			}
		}
		if r <= G || (e.CI95[0] == 0 && *e.RatePerS == 0) {
			continue
		}
		for k, iv := range e.Intervals {
			if ratio(iv) < r {
				t.Errorf("%s: published %s with ci95 ratio %.3g while %s has %.3g", e.Object, e.Estimator, r, k, ratio(iv))
			}
		}
	}
	if !seen {
		t.Error("no estimate with an interval for http://www.raeder.dk/")
	}
}

// TestRealHeritrixGone: objects of the NetarchiveSuite crawl logs whose
// every fetch answered 404 were counted in the summary but had no record
// (issue 31); they are published with gone and no rate, and the summary
// counts them.
func TestRealHeritrixGone(t *testing.T) {
	dir := "heritrix-crawl-logs-netarchivesuite/"
	var paths []string
	for _, f := range []string{"crawl-h1-2006-job5.log.gz", "crawl-h1-2006-job11.log.gz", "idna-crawl-h1.14.4-2012.log.gz", "crawl-h3-2015.log.gz"} {
		paths = append(paths, realData(t, dir+f))
	}
	obs := ingestFiles(t, "heritrix", nil, paths...)
	// The objects whose every observation is a 404, from the observations.
	statuses := map[string]map[int]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(obs)), "\n") {
		var o records.Observation
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if statuses[o.Object] == nil {
			statuses[o.Object] = map[int]bool{}
		}
		statuses[o.Object][o.Status] = true
	}
	want := map[string]bool{}
	for obj, st := range statuses {
		if len(st) == 1 && st[404] {
			want[obj] = true
		}
	}
	out, stderr, err := filter(t, obs)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	gone := 0
	for _, e := range estimates(t, out) {
		if e.Gone {
			gone++
			if e.RatePerS != nil || e.TTLS != nil || e.NextVisit != nil {
				t.Errorf("%s: gone with a rate, TTL or next visit", e.Object)
			}
		}
		if want[e.Object] && e.Kind == records.EstimateChange {
			if !e.Gone {
				t.Errorf("%s: only 404s, not gone", e.Object)
			}
			delete(want, e.Object)
		}
	}
	if len(want) > 0 {
		t.Errorf("%d objects with only 404s have no record", len(want))
	}
	if got := summaryCount(t, stderr, "objects gone"); got != int64(gone) || gone == 0 {
		t.Errorf("summary: %d objects gone, records %d", got, gone)
	}
	t.Logf("%d objects published as gone", gone)
}

// TestRealHeritrixNoWaldOverOneEvent: no published interval of
// cgm_irregular_mle (a Wald interval, a large-sample approximation) is
// wider than the exact interval of one Poisson event (ratio G ≈ 220):
// raeder.dk's was [1.77e-42, 1.03e+27]; its estimate stays, without one.
func TestRealHeritrixNoWaldOverOneEvent(t *testing.T) {
	dir := "heritrix-crawl-logs-netarchivesuite/"
	var paths []string
	for _, f := range []string{"crawl-h1-2006-job5.log.gz", "crawl-h1-2006-job11.log.gz", "idna-crawl-h1.14.4-2012.log.gz", "crawl-h3-2015.log.gz"} {
		paths = append(paths, realData(t, dir+f))
	}
	out, stderr, err := filter(t, ingestFiles(t, "heritrix", nil, paths...))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, e := range estimates(t, out) {
		// (An estimate of 0 has the one-sided bound [0, −ln(0.025)/U].)
		if iv, ok := e.Intervals["cgm_irregular_mle"]; ok && iv[0] > 0 && iv[1]/iv[0] > 220.5 {
			t.Errorf("%s: cgm_irregular_mle interval %v", e.Object, iv)
		}
		if e.Object == "http://www.raeder.dk/" {
			if _, ok := e.Intervals["cgm_irregular_mle"]; ok {
				t.Errorf("raeder.dk: cgm_irregular_mle interval %v", e.Intervals["cgm_irregular_mle"])
			}
			if _, ok := e.Estimates["cgm_irregular_mle"]; !ok {
				t.Error("raeder.dk: cgm_irregular_mle estimate dropped with its interval")
			}
		}
	}
}

// TestRealPHPDocHostlessPrior: the php-doc git log's paths have no host;
// through the programs' path (ingest --format=changes-tsv | aggregator
// --emit=final) those with fewer than 5 changes publish `pooled` under the
// prior of the partition's hostless objects (aggregate/siteprior.go), and
// its posterior is the conjugate Gamma(α + N, β + T) with T the exposure
// to the end of the log (estimators.Change.EvidenceAt), one (α, β) for
// all: solved from two files, (α + N)/(β + T) reproduces every other
// pooled file with N ≥ 1 (T = N / naive) to 1e-6 relative.
func TestRealPHPDocHostlessPrior(t *testing.T) {
	src := realSample(t, realData(t, "php-doc-en-history/git-file-changes.tsv.gz"))
	out, stderr, err := filter(t, ingestFiles(t, "changes-tsv", nil, src))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	type nt struct{ n, T, rate float64 }
	var pts []nt
	few, pooled := 0, 0
	for _, e := range estimates(t, out) {
		if e.Changes >= 5 || e.RatePerS == nil {
			continue
		}
		few++
		if e.Estimator != "pooled" {
			continue
		}
		pooled++
		if naive := e.Estimates["naive"]; e.Changes > 0 && naive > 0 {
			pts = append(pts, nt{float64(e.Changes), float64(e.Changes) / naive, *e.RatePerS})
		}
	}
	t.Logf("%d files with < 5 changes, %d publish pooled", few, pooled)
	// Files published from their change window after a confirmed shift
	// follow it instead (about 7 % of files with ≥ 5 changes, fewer here).
	if few == 0 || float64(pooled) < 0.9*float64(few) {
		t.Fatalf("pooled published for %d of %d files with < 5 changes", pooled, few)
	}
	// Two files with different N give α and β: r_i(β + T_i) = α + N_i.
	var a, b nt
	a = pts[0]
	for _, p := range pts[1:] {
		if p.n != a.n {
			b = p
			break
		}
	}
	beta := (b.n - a.n - b.rate*b.T + a.rate*a.T) / (b.rate - a.rate)
	alpha := a.rate*(beta+a.T) - a.n
	if !(alpha > 0 && beta > 0) {
		t.Fatalf("prior from two files: α %g β %g", alpha, beta)
	}
	t.Logf("hostless prior: shape %.3f, mean %.3f changes a year", alpha, alpha/beta*365*86400)
	bad := 0
	for _, p := range pts {
		if want := (alpha + p.n) / (beta + p.T); math.Abs(p.rate/want-1) > 1e-6 {
			if bad++; bad <= 5 {
				t.Errorf("N %g, T %.0f days: pooled %g, want (α+N)/(β+T) = %g", p.n, p.T/86400, p.rate, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d pooled files off the conjugate posterior", bad, len(pts))
	}
}
