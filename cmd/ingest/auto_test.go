package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/options"
)

// TestAutoDetection: --format=auto passes over empty files (the current
// file of a rotated set, just rotated), and when it cannot detect anything
// it says why, naming the option, without claiming the format is wrong.
func TestAutoDetection(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "access.log")
	rotated := filepath.Join(dir, "access.log.1")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(rotated, []byte(squid), 0o644)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=auto", "--dead-letter=/dev/null", empty, rotated}, nil, &stdout, &stderr); code != 0 || strings.Count(stdout.String(), "\n") != 2 {
		t.Fatalf("empty file first: exit %d, %d observations; stderr:\n%s", code, strings.Count(stdout.String(), "\n"), stderr.String())
	}
	if !strings.Contains(stderr.String(), "format=squid") {
		t.Errorf("detected format not logged:\n%s", stderr.String())
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"only an empty file", []string{empty}, []string{"CHANGERATE_FORMAT (--format)=auto", "1 empty file"}},
		{"missing file", []string{filepath.Join(dir, "nope.log")}, []string{"CHANGERATE_FORMAT (--format)=auto", "cannot read", "nope.log", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--format=auto"}, tc.args...), strings.NewReader("x\n"), &stdout, &stderr)
			if code == 0 {
				t.Fatalf("exit 0; stderr:\n%s", stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "ingest: open") || strings.Contains(stderr.String(), "parser accepts") {
				t.Errorf("misleading message:\n%s", stderr.String())
			}
		})
	}
}

// TestSummaryUnits: WARC inputs are counted in records, other formats in
// lines, in the summary and in the nothing-usable message.
func TestSummaryUnits(t *testing.T) {
	sum := ingest.Summary{Inputs: []ingest.InputSummary{{Name: "a.warc.gz", Lines: 25, Observations: 12,
		Skipped: map[string]int64{"record-type": 13}}}}
	for format, want := range map[string]string{"warc": "records", "squid": "lines"} {
		var b bytes.Buffer
		writeSummary(&b, config{options.Ingest{Out: "-", DeadLetter: "-"}}, ingest.Config{Format: format}, sum, nil, 0)
		for _, w := range []string{"  " + want + " read ", "(" + want + " without an observation)"} {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: summary lacks %q:\n%s", format, w, b.String())
			}
		}
	}
}

// TestFailureNamesTheOption: a run that fails after reading (Kafka
// unreachable, a corrupt checkpoint) ends with a line naming the option to
// look at, and does not let the summary's counts pass for written output.
func TestFailureNamesTheOption(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	cp := filepath.Join(dir, "cp")
	os.WriteFile(cp, nil, 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable Kafka", []string{"--out=kafka", "--kafka-brokers=127.0.0.1:1", "--write-retry-timeout=1ms"}, "CHANGERATE_KAFKA_BROKERS (--kafka-brokers)"},
		{"corrupt checkpoint", []string{"--checkpoint=" + cp}, "CHANGERATE_CHECKPOINT (--checkpoint)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--format=squid", "--dead-letter=/dev/null", "--log-level=error"}, append(tc.args, p)...), nil, &stdout, &stderr)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "not all have been written") {
				t.Errorf("stderr lacks %q and the warning:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// TestHintJudgesAsTheParser: the formats suggested after a run with no
// observation are judged on the lines as the parser reads them (trailing
// tabs kept): NASA TSV lines are not "path<TAB>time" lines, and changes
// lines with a trailing tab are accepted by no format.
func TestHintJudgesAsTheParser(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, format, lines, want, not string
	}{
		{"nasa tsv", "changes-tsv", "pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t\n" +
			"vcc7.langara.bc.ca\t-\t807256804\tGET\t/shuttle/missions/missions.html\t200\t8677\t\t\n",
			"accepted by: --format=nasa-tsv (2 of 2 sample lines)\n", "--format=changes-tsv ("},
		{"changes with a trailing tab", "squid", "reference/curl/examples.xml\t1787323608\t\n",
			"no format's parser accepts the first lines", "accepted by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			os.WriteFile(p, []byte(tc.lines), 0o644)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"--format=" + tc.format, "--dead-letter=/dev/null", "--log-level=error", p}, nil, &stdout, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), tc.not) {
				t.Errorf("stderr lacks %q or has %q:\n%s", tc.want, tc.not, stderr.String())
			}
		})
	}
}

// TestAutoEachFile: --format=auto detects each input on its own: stdin
// from its first lines (buffered), a second file of another format is read
// as its own, one that no format accepts is named in a warning with the
// formats closest to it while the others are read, and a later file that
// needs --zone stops the run naming the file and the option.
func TestAutoEachFile(t *testing.T) {
	dir := t.TempDir()
	sq := filepath.Join(dir, "access.log")
	os.WriteFile(sq, []byte(squid), 0o644)
	clf := filepath.Join(dir, "apache.log")
	os.WriteFile(clf, []byte(`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a.html HTTP/1.0" 200 2326`+"\n"), 0o644)
	junk := filepath.Join(dir, "junk.txt")
	os.WriteFile(junk, []byte("hello world\n"), 0o644)
	wc := filepath.Join(dir, "wc.csv")
	os.WriteFile(wc, []byte("1,30/Apr/1998,21:30:17,/english/index.html,200,1234\n"), 0o644)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		obs   int
		want  []string
	}{
		{"two formats", []string{sq, clf}, "", 0, 3, []string{"format=squid", "format=clf", "input=" + clf, "squid: " + sq, "clf: " + clf}},
		{"stdin", []string{"-"}, squid, 0, 2, []string{"input=- format=squid", "squid: -"}},
		{"no format", []string{junk, sq}, "", 0, 2, []string{"WARN", "input=" + junk, "closest=", "no-format:1", "NO FORMAT ACCEPTS THEM"}},
		{"needs zone", []string{sq, wc}, "", 2, 0, []string{wc, "worldcup-csv", "CHANGERATE_ZONE (--zone)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stdin != "" {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				old := os.Stdin
				os.Stdin = r
				defer func() { os.Stdin = old }()
				go func() { w.Write([]byte(tc.stdin)); w.Close() }()
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--format=auto", "--dead-letter=/dev/null", "--report"}, tc.args...), nil, &stdout, &stderr)
			if n := strings.Count(stdout.String(), "\n"); code != tc.code || n != tc.obs {
				t.Fatalf("exit %d, %d observations; want %d, %d; stderr:\n%s", code, n, tc.code, tc.obs, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
