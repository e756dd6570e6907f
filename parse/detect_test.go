package parse

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// sampleOf returns the first n lines of a file of ../shared/data (gzip or
// plain); it skips when the data is absent and fails under CI=true.
func sampleOf(t *testing.T, rel string, n int) [][]byte {
	t.Helper()
	path := filepath.Join("..", "..", "shared", "data", rel)
	f, err := os.Open(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real data missing under CI: %v", err)
		}
		t.Skipf("real data absent: %v", err)
	}
	defer f.Close()
	var r *bufio.Scanner
	if filepath.Ext(path) == ".gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = bufio.NewScanner(gz)
	} else {
		r = bufio.NewScanner(f)
	}
	r.Buffer(make([]byte, 1<<20), 1<<20)
	var out [][]byte
	for len(out) < n && r.Scan() {
		out = append(out, append([]byte(nil), r.Bytes()...))
	}
	return out
}

// TestDetectRealFiles: the best candidate for the first 20 lines of each
// real file is its true format.
func TestDetectRealFiles(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job5.log.gz", "heritrix"},
		{"php-doc-en-history/git-file-changes.tsv.gz", "changes-tsv"},
		{"worldcup98-day6-sample/wc_day6_1_sample.csv.gz", "worldcup-csv"},
		{"squid-access-log-secrepo-sample/test-access.log", "squid"},
		{"elastic-apache-logs/apache_logs.gz", "clf"},
		{"nasa-http-19950801/nasa_19950801.tsv.gz", "nasa-tsv"},
		{"warc-samples/iana.warc.gz", "warc"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			c := Detect(sampleOf(t, tc.file, 20), Config{})
			if len(c) == 0 || c[0].Format != tc.want {
				t.Fatalf("Detect = %+v, want %s first", c, tc.want)
			}
			if tc.want == "worldcup-csv" && !c[0].NeedsZone {
				t.Errorf("worldcup-csv detected without NeedsZone")
			}
			if h := Hint(c); h == "" {
				t.Errorf("empty hint")
			}
		})
	}
}

func TestDetectNothing(t *testing.T) {
	if c := Detect([][]byte{[]byte("\x00\x01 binary junk"), []byte("")}, Config{}); len(c) != 0 {
		t.Fatalf("Detect(junk) = %+v", c)
	}
	if c := Detect([][]byte{[]byte("WARC/1.0"), []byte("WARC-Type: response")}, Config{}); len(c) != 1 || c[0].Format != "warc" {
		t.Fatalf("Detect(WARC) = %+v", c)
	}
}
