package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/realdata"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// cdxDir is ../shared/cdx-samples, beside the real-data folder.
func cdxDir(t *testing.T) string {
	dir := filepath.Join(realdata.Dir(t), "..", "cdx-samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("cdx samples missing: %v", err)
	}
	return dir
}

// collectSink keeps the observations written to it.
type collectSink struct {
	obs  []records.Observation
	dead int
	bad  error
}

func (s *collectSink) Write(_ context.Context, msgs ...stream.Message) error {
	for _, m := range msgs {
		if m.Topic == stream.TopicDeadLetter {
			s.dead++
			continue
		}
		o, err := records.DecodeObservation(m.Value)
		if err != nil && s.bad == nil {
			s.bad = fmt.Errorf("%s: %w", m.Value, err)
		}
		s.obs = append(s.obs, o)
	}
	return nil
}
func (s *collectSink) Close() error { return nil }

func readAll(t *testing.T, format, path string) (*collectSink, InputSummary) {
	t.Helper()
	sink := &collectSink{}
	sum, err := Run(context.Background(), Config{Format: format, Paths: []string{path}, ProgressInterval: -1}, sink, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if sink.bad != nil {
		t.Fatalf("%s: observation does not decode: %v", path, sink.bad)
	}
	return sink, sum.Inputs[0]
}

// TestRealDataCDX reads every capture index of ../shared/cdx-samples with
// its format, by name and detected (auto), and checks the counts. No line
// of them is broken: any reject is a bug.
func TestRealDataCDX(t *testing.T) {
	dir := cdxDir(t)
	cases := []struct {
		file, format     string
		lines, obs       int64
		skipped          string
		revisits, status int // observations Unchanged; with a redirect or error status
	}{
		// Counted with awk from the file: 52 warc/revisit rows; 47 of the
		// 49 of dw.com repeat the digest of an earlier 301 of their key
		// and are no unchanged visits, 2 come before any capture with
		// their digest; the 3 of energystar.gov repeat a 200 capture
		// from before the sample. 2,577 rows have a 3xx/4xx/5xx status
		// (their own or, for those 47, inherited).
		{"wayback-cdx-api-edgi.cdx", "cdx", 3847, 3847, "-", 3 + 2, 2577},
		// " CDX N b a m s k r M S V g" is the first line; 123 warc/revisit
		// rows (grep -c), 4 302s.
		{"pywb-iana.cdx", "cdx", 172, 171, "comment:1", 123, 4},
		{"pywb-iana.cdxj", "cdxj", 171, 171, "-", 123, 4},
		{"pywb-dupes.cdxj", "cdxj", 12, 12, "-", 9, 1},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), ".txt") && !covered[e.Name()] {
			t.Errorf("capture index %s has no case in TestRealDataCDX", e.Name())
		}
	}
	for _, c := range cases {
		for _, format := range []string{c.format, FormatAuto} {
			sink, in := readAll(t, format, filepath.Join(dir, c.file))
			unchanged, noContent := 0, 0
			for _, o := range sink.obs {
				if o.Changed == records.Unchanged {
					unchanged++
				}
				if o.Status >= 300 && o.Status != 304 {
					noContent++
				}
			}
			t.Logf("%-26s %-5s as %-5s lines %5d obs %5d skipped %s rejects %v unchanged %d redirect/error %d",
				c.file, format, in.Format, in.Lines, in.Observations, fmtCounts(in.Skipped), in.Rejects, unchanged, noContent)
			if in.Format != c.format || in.Lines != c.lines || in.Observations != c.obs || fmtCounts(in.Skipped) != c.skipped ||
				len(in.Rejects) != 0 || sink.dead != 0 || unchanged != c.revisits || noContent != c.status {
				t.Errorf("%s (%s): format %s lines %d obs %d skipped %s rejects %v unchanged %d redirect/error %d; want %s %d %d %s none %d %d",
					c.file, format, in.Format, in.Lines, in.Observations, fmtCounts(in.Skipped), in.Rejects, unchanged, noContent,
					c.format, c.lines, c.obs, c.skipped, c.revisits, c.status)
			}
		}
	}
}

func fmtCounts(m map[string]int64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// captureOf is what a capture index can say about a capture: the
// observation without its position (Source, Offset), its format and the
// Last-Modified of the archived response (a CDX has no column for it;
// only the WARC record carries it).
func captureOf(o records.Observation) records.Observation {
	o.Source, o.Offset, o.Format, o.LastModified = "", 0, "", records.Observation{}.LastModified
	return o
}

// TestWARCMatchesCDX: the captures read from a WARC and from its CDX and
// CDXJ indexes (pywb's sample archive) are the same observations, but for
// Last-Modified, which only the WARC carries, and the status of a revisit
// of another URL's capture, which an index row leaves out ("-") and the
// WARC revisit record's HTTP head gives.
func TestWARCMatchesCDX(t *testing.T) {
	dir := cdxDir(t)
	warcs := filepath.Join(realdata.Dir(t), "warc-samples")
	for _, c := range []struct{ warc, index, format string }{
		{"iana.warc.gz", "pywb-iana.cdx", "cdx"},
		{"iana.warc.gz", "pywb-iana.cdxj", "cdxj"},
		{"dupes.warc.gz", "pywb-dupes.cdxj", "cdxj"},
	} {
		w, _ := readAll(t, "warc", filepath.Join(warcs, c.warc))
		x, _ := readAll(t, c.format, filepath.Join(dir, c.index))
		key := func(o records.Observation) string {
			return o.Object + " " + o.Time.Format("20060102150405") + " " + o.Digest
		}
		byKey := map[string][]records.Observation{}
		for _, o := range w.obs {
			byKey[key(o)] = append(byKey[key(o)], captureOf(o))
		}
		if len(w.obs) != len(x.obs) {
			t.Errorf("%s: %d observations, %s: %d", c.warc, len(w.obs), c.index, len(x.obs))
		}
		same, statusOnly := 0, 0
		for _, o := range x.obs {
			cand := byKey[key(o)]
			if len(cand) == 0 {
				t.Errorf("%s: %s has no capture in %s", c.index, key(o), c.warc)
				continue
			}
			got, want := captureOf(o), cand[0]
			byKey[key(o)] = cand[1:]
			if got.Status == 0 && want.Changed == records.Unchanged {
				// a revisit row of another URL's capture: no status
				got.Status = want.Status
				statusOnly++
			}
			if got != want {
				t.Errorf("%s vs %s:\n index %+v\n  warc %+v", c.index, c.warc, got, want)
				continue
			}
			same++
		}
		t.Logf("%s vs %s: %d of %d observations identical (%d revisits without a status in the index)", c.index, c.warc, same, len(x.obs), statusOnly)
	}
}

// TestCDXGzip: a gzip capture index is detected and read as the plain one.
func TestCDXGzip(t *testing.T) {
	dir := cdxDir(t)
	for _, name := range []string{"wayback-cdx-api-edgi.cdx", "pywb-iana.cdxj"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		gzPath := filepath.Join(t.TempDir(), name+".gz")
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(raw)
		zw.Close()
		if err := os.WriteFile(gzPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		plain, _ := readAll(t, FormatAuto, filepath.Join(dir, name))
		zipped, in := readAll(t, FormatAuto, gzPath)
		if len(plain.obs) == 0 || len(zipped.obs) != len(plain.obs) || !strings.HasPrefix(in.Format, "cdx") {
			t.Fatalf("%s: gzip %d observations as %s, plain %d", name, len(zipped.obs), in.Format, len(plain.obs))
		}
		for i := range plain.obs {
			if captureOf(plain.obs[i]) != captureOf(zipped.obs[i]) {
				t.Fatalf("%s: observation %d differs: %+v / %+v", name, i, plain.obs[i], zipped.obs[i])
			}
		}
	}
}
