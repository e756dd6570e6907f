package ingest

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/realdata"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// headLines returns the first n lines of a plain or gzip file, each with
// its line ending, byte for byte.
func headLines(t *testing.T, path string, n int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	br := bufio.NewReader(r)
	var out []string
	for len(out) < n {
		l, err := br.ReadString('\n')
		if l != "" {
			out = append(out, l)
		}
		if err != nil {
			break
		}
	}
	return out
}

// runFormat reads path with format and returns its counts as one string.
func runFormat(t *testing.T, format string, cfg parse.Config, path string) string {
	t.Helper()
	sum, err := Run(context.Background(), Config{Format: format, Paths: []string{path}, Parse: cfg, ProgressInterval: -1},
		stream.NewMemorySink(), nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("Run(%s): %v", format, err)
	}
	in := sum.Totals()
	return fmt.Sprintf("lines %d obs %d skipped %v rejects %v", in.Lines, in.Observations, in.Skipped, in.Rejects)
}

// TestDetectedFormatParsesAsForced: DetectFormat judges the sample lines
// exactly as the parser reads them. On the first lines of real files, and
// of NASA TSV variants (without the header; with the empty trailing fields
// cut), the best candidate is the file's format and reads it as that
// format does when forced; every candidate's counts on the sample are
// those Run gets reading the sample with it. Changes lines with a trailing
// tab (three fields) have no candidate: changes-tsv rejects them.
func TestDetectedFormatParsesAsForced(t *testing.T) {
	const (
		nasa    = "nasa-http-19950801/nasa_19950801.tsv.gz"
		changes = "php-doc-en-history/git-file-changes.tsv.gz"
	)
	noHeader := func(ls []string) []string { return ls[1:] }
	cutTabs := func(ls []string) []string {
		var out []string
		for _, l := range ls {
			l = strings.TrimRight(strings.TrimSuffix(l, "\n"), "\t")
			if strings.Count(l, "\t") == 6 || strings.HasPrefix(l, "host\t") {
				out = append(out, l+"\n")
			}
		}
		return out
	}
	cases := []struct {
		name, file, want string // want "": no candidate
		cfg              parse.Config
		edit             func([]string) []string
	}{
		{"squid", "squid-access-log-secrepo-sample/test-access.log", "squid", parse.Config{}, nil},
		{"storelog", "squid-store-log-snippets/store-2006-ubuntuforums-dbott67.log", "storelog", parse.Config{}, nil},
		{"clf", "elastic-apache-logs/apache_logs.gz", "clf", parse.Config{}, nil},
		{"heritrix h1", "heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job11.log.gz", "heritrix", parse.Config{}, nil},
		{"heritrix h3", "heritrix-crawl-logs-netarchivesuite/crawl-h3-2015.log.gz", "heritrix", parse.Config{}, nil},
		{"worldcup", "worldcup98-day6-sample/wc_day6_1_sample.csv.gz", "worldcup-csv", parse.Config{Zone: time.UTC}, nil},
		{"changes", changes, "changes-tsv", parse.Config{}, nil},
		{"nasa", nasa, "nasa-tsv", parse.Config{}, nil},
		{"nasa without header", nasa, "nasa-tsv", parse.Config{}, noHeader},
		{"nasa trailing tabs cut", nasa, "nasa-tsv", parse.Config{}, cutTabs},
		{"nasa without header, trailing tabs cut", nasa, "nasa-tsv", parse.Config{}, func(ls []string) []string { return cutTabs(noHeader(ls)) }},
		{"changes with a trailing tab", changes, "", parse.Config{}, func(ls []string) []string {
			for i, l := range ls {
				ls[i] = strings.TrimSuffix(l, "\n") + "\t\n"
			}
			return ls
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := realdata.Dir(t, tc.file) // skips without the data; fatal under CI=true
			lines := headLines(t, filepath.Join(dir, tc.file), 1001)
			if tc.edit != nil {
				lines = tc.edit(lines)
			}
			tmp := t.TempDir()
			path := writeFile(t, tmp, "sample.log", strings.Join(lines, ""), false)
			cands, in, err := DetectFormat([]string{path}, tc.cfg)
			if err != nil || in != path {
				t.Fatalf("DetectFormat: %q %v", in, err)
			}
			if tc.want == "" {
				if len(cands) != 0 {
					t.Fatalf("candidates %+v, want none", cands)
				}
				return
			}
			if len(cands) == 0 || cands[0].Format != tc.want {
				t.Fatalf("candidates %+v, want %s first", cands, tc.want)
			}
			if got, want := runFormat(t, cands[0].Format, tc.cfg, path), runFormat(t, tc.want, tc.cfg, path); got != want {
				t.Errorf("detected %s: %s; forced %s: %s", cands[0].Format, got, tc.want, want)
			}
			// Every candidate's judgement of the sample is the parser's.
			head := writeFile(t, tmp, "head.log", strings.Join(lines[:min(len(lines), SampleLines)], ""), false)
			sort.Slice(cands, func(i, j int) bool { return cands[i].Format < cands[j].Format })
			for _, c := range cands {
				cfg := tc.cfg
				if c.NeedsZone {
					cfg.Zone = time.UTC
				}
				sum, err := Run(context.Background(), Config{Format: c.Format, Paths: []string{head}, Parse: cfg, ProgressInterval: -1},
					stream.NewMemorySink(), nil, prometheus.NewRegistry())
				if err != nil {
					t.Fatalf("Run(%s): %v", c.Format, err)
				}
				tot := sum.Totals()
				if tot.Lines != int64(c.Lines) || tot.Observations != int64(c.Accepted) || sumCounts(tot.Skipped) != int64(c.Skipped) {
					t.Errorf("%s: sample judged %d accepted, %d skipped of %d lines; Run: %d observations, skipped %v of %d lines",
						c.Format, c.Accepted, c.Skipped, c.Lines, tot.Observations, tot.Skipped, tot.Lines)
				}
			}
		})
	}
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
