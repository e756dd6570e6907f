package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/changerate/changerate/ingest"
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
		{"stdin", []string{"-"}, []string{"CHANGERATE_FORMAT (--format)=auto", "stdin cannot be sampled"}},
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
		writeSummary(&b, config{Out: "-", DeadLetter: "-"}, ingest.Config{Format: format}, sum, nil)
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
