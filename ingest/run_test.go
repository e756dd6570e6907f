package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

const squidLines = `1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 text/html
1157689320.343   1357 10.105.21.199 TCP_REFRESH_HIT/304 214 GET http://www.goonernews.com/styles.css badeyek DIRECT/175.16.199.61 -
1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.yahoo.com:443 badeyek DIRECT/175.16.199.115 -
this line is broken
1157689321.315      1 10.105.21.199 TCP_HIT/200 1464 GET http://www.goonernews.com/styles.css badeyek NONE/- text/css
`

func writeFile(t *testing.T, dir, name, content string, gz bool) string {
	t.Helper()
	p := filepath.Join(dir, name)
	var b []byte
	if gz {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write([]byte(content))
		w.Close()
		b = buf.Bytes()
	} else {
		b = []byte(content)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func objects(t *testing.T, s *stream.MemorySink) []string {
	t.Helper()
	var out []string
	for _, m := range s.Messages(stream.TopicObservations) {
		o, err := records.DecodeObservation(m.Value)
		if err != nil {
			t.Fatalf("bad observation %s: %v", m.Value, err)
		}
		if string(m.Key) != o.Object {
			t.Fatalf("key %q != object %q", m.Key, o.Object)
		}
		out = append(out, o.Object)
	}
	return out
}

func deadLetters(t *testing.T, s *stream.MemorySink) []records.DeadLetter {
	t.Helper()
	var out []records.DeadLetter
	for _, m := range s.Messages(stream.TopicDeadLetter) {
		var d records.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestRunPlainAndGzip(t *testing.T) {
	dir := t.TempDir()
	plain := writeFile(t, dir, "a.log", squidLines, false)
	gz := writeFile(t, dir, "b.log.gz", squidLines, true)
	sink := stream.NewMemorySink()
	reg := prometheus.NewRegistry()
	sum, err := Run(context.Background(), Config{Format: "squid", Paths: []string{plain, gz}, BatchSize: 2, ProgressInterval: -1}, sink, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://www.goonernews.com/", "http://www.goonernews.com/styles.css", "http://www.goonernews.com/styles.css"}
	got := objects(t, sink)
	if fmt.Sprint(got) != fmt.Sprint(append(want, want...)) {
		t.Fatalf("objects %v", got)
	}
	var lastOff int64
	for i, m := range sink.Messages(stream.TopicObservations)[:3] {
		o, _ := records.DecodeObservation(m.Value)
		if !strings.HasPrefix(o.Source, plain+"@") || o.Offset <= lastOff {
			t.Fatalf("observation %d: source %q offset %d (previous %d)", i, o.Source, o.Offset, lastOff)
		}
		lastOff = o.Offset
	}
	if want := int64(len(strings.SplitAfterN(squidLines, "\n", 3)[0]) + len(strings.SplitAfterN(squidLines, "\n", 3)[1])); lastOff <= want {
		t.Fatalf("third offset %d", lastOff)
	}
	dl := deadLetters(t, sink)
	if len(dl) != 2 || dl[0].Reason != "fields" || dl[0].Position != plain+":4" || dl[0].Input != "this line is broken" || dl[1].Position != gz+":4" {
		t.Fatalf("dead letters %+v", dl)
	}
	if len(sum.Inputs) != 2 || sum.Inputs[1].Lines != 5 || sum.Inputs[1].Observations != 3 || sum.Inputs[1].Skipped["connect"] != 1 || sum.Inputs[1].Rejects["fields"] != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if v := metricValue(t, reg, "changerate_ingest_rejects_total", "squid", "fields"); v != 2 {
		t.Fatalf("rejects metric %v", v)
	}
	if v := metricValue(t, reg, "changerate_ingest_lines_total", "squid"); v != 10 {
		t.Fatalf("lines metric %v", v)
	}
	if v := metricValue(t, reg, "changerate_ingest_observations_total", "squid"); v != 6 {
		t.Fatalf("observations metric %v", v)
	}
	// Two URLs, each seen three times over the two files: 2 fast-path
	// canonicalisations, 4 cache hits.
	if f, c := metricValue(t, reg, "changerate_ingest_url_canonicalisations_total", "squid", "fast"),
		metricValue(t, reg, "changerate_ingest_url_canonicalisations_total", "squid", "cache"); f != 2 || c != 4 {
		t.Fatalf("canonicalisations: fast %v cache %v", f, c)
	}
}

func TestRunDirectoryGlobAndMissing(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "logs")
	os.Mkdir(sub, 0o755)
	writeFile(t, sub, "2.log", squidLines, false)
	writeFile(t, sub, "1.log", squidLines, false)
	writeFile(t, sub, ".hidden", "garbage\n", false)
	sink := stream.NewMemorySink()
	sum, err := Run(context.Background(), Config{Format: "squid", Paths: []string{sub, filepath.Join(sub, "1.*"), filepath.Join(dir, "missing.log")}, ProgressInterval: -1}, sink, nil, nil)
	if !errors.Is(err, ErrInput) {
		t.Fatalf("err = %v, want ErrInput", err)
	}
	if len(sum.Inputs) != 3 || filepath.Base(sum.Inputs[0].Name) != "1.log" || filepath.Base(sum.Inputs[1].Name) != "2.log" ||
		sum.Inputs[2].Err == "" {
		t.Fatalf("inputs %+v", sum.Inputs)
	}
	if n := len(objects(t, sink)); n != 6 {
		t.Fatalf("%d observations, want 6: %+v", n, sum)
	}
	if _, err := Run(context.Background(), Config{Format: "squid", Paths: []string{filepath.Join(dir, "*.nothing")}}, sink, nil, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty glob: %v", err)
	}
}

// TestInputsLeadingNowhere: a glob that matches nothing and a directory
// without a file to read are configuration errors, found before reading
// (Inputs, and Run before any input); a missing file is an input.
func TestInputsLeadingNowhere(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	hidden := filepath.Join(dir, "hidden")
	os.Mkdir(hidden, 0o755)
	writeFile(t, hidden, ".keep", "", false)
	logs := filepath.Join(dir, "logs")
	os.Mkdir(logs, 0o755)
	writeFile(t, logs, "a.log", squidLines, false)
	for _, tc := range []struct {
		name  string
		paths []string
		want  string // "": no error
	}{
		{"glob matching nothing", []string{logs, filepath.Join(dir, "*.nomatch")}, `Paths: glob "` + filepath.Join(dir, "*.nomatch") + `" matches nothing`},
		{"empty directory", []string{empty}, `Paths: directory "` + empty + `" holds no file`},
		{"hidden files only", []string{logs, hidden}, `Paths: directory "` + hidden + `" holds no file`},
		{"glob of empty directories", []string{filepath.Join(dir, "[eh]*")}, "matches only directories that hold no file"},
		{"directory with a file", []string{logs, filepath.Join(dir, "l*")}, ""},
		{"missing file", []string{filepath.Join(dir, "missing.log")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inputs(tc.paths)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Inputs: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Inputs: %v, want ErrConfig and %q", err, tc.want)
			}
			sink := stream.NewMemorySink()
			sum, err := Run(context.Background(), Config{Format: "squid", Paths: tc.paths, ProgressInterval: -1}, sink, nil, nil)
			if !errors.Is(err, ErrConfig) || len(sum.Inputs) != 0 || len(sink.Messages(stream.TopicObservations)) != 0 {
				t.Fatalf("Run: %v, %d inputs read, want ErrConfig before reading", err, len(sum.Inputs))
			}
		})
	}
}

func TestRunLongLinesAndNoFinalNewline(t *testing.T) {
	dir := t.TempDir()
	long := "1157689320.327 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/" + strings.Repeat("x", 500) + " - - -"
	content := long + "\n" + strings.TrimSuffix(squidLines, "\n") // no final newline
	p := writeFile(t, dir, "a.log", content, false)
	sink := stream.NewMemorySink()
	sum, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, MaxLineBytes: 200, ProgressInterval: -1}, sink, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dl := deadLetters(t, sink)
	if len(dl) != 2 || dl[0].Reason != ReasonTooLong || len(dl[0].Input) != 200 || dl[0].Position != p+":1" {
		t.Fatalf("dead letters %+v", dl)
	}
	if sum.Inputs[0].Lines != 6 || len(objects(t, sink)) != 3 {
		t.Fatalf("summary %+v", sum.Inputs[0])
	}
}

// failingSink fails every write after the first n.
type failingSink struct {
	*stream.MemorySink
	n int
}

func (s *failingSink) Write(ctx context.Context, msgs ...stream.Message) error {
	if s.n <= 0 {
		return errors.New("broker down")
	}
	s.n--
	return s.MemorySink.Write(ctx, msgs...)
}

func TestCheckpointResumeNeitherLosesNorRepeats(t *testing.T) {
	dir := t.TempDir()
	var all strings.Builder
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&all, "1157689320.%03d 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/%d - - -\n", i, i)
	}
	p := writeFile(t, dir, "a.log", all.String(), false)
	gz := writeFile(t, dir, "b.log.gz", all.String(), true)
	cp := filepath.Join(dir, "cp.json")
	cfg := Config{Format: "squid", Paths: []string{p, gz}, BatchSize: 10, CheckpointPath: cp, ProgressInterval: -1,
		WriteRetryTimeout: time.Nanosecond} // fail at once, not after retrying

	// First run: the sink acknowledges two batches (20 lines), then fails.
	s1 := &failingSink{MemorySink: stream.NewMemorySink(), n: 2}
	if _, err := Run(context.Background(), cfg, s1, nil, nil); err == nil || !strings.Contains(err.Error(), "broker down") {
		t.Fatalf("err = %v", err)
	}
	// Second run resumes after the acknowledged lines.
	s2 := stream.NewMemorySink()
	if _, err := Run(context.Background(), cfg, s2, nil, nil); err != nil {
		t.Fatal(err)
	}
	got := append(objects(t, s1.MemorySink), objects(t, s2)...)
	if len(got) != 50 {
		t.Fatalf("%d observations over two runs, want 50: %v", len(got), got)
	}
	for i := 0; i < 50; i++ {
		if want := fmt.Sprintf("http://a.example/%d", i%25); got[i] != want {
			t.Fatalf("observation %d = %s, want %s", i, got[i], want)
		}
	}
	// Third run: nothing new. Then append lines: only those come.
	s3 := stream.NewMemorySink()
	if _, err := Run(context.Background(), cfg, s3, nil, nil); err != nil || len(objects(t, s3)) != 0 {
		t.Fatalf("third run: %v, %v", err, objects(t, s3))
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("1157689399.000 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/new - - -\n")
	f.Close()
	s4 := stream.NewMemorySink()
	if _, err := Run(context.Background(), cfg, s4, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, s4); len(got) != 1 || got[0] != "http://a.example/new" {
		t.Fatalf("after append: %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Format: "nope", Paths: []string{"-"}},
		{Format: "squid"},
		{Format: "squid", Paths: []string{"-", "-"}},
		{Format: "squid", Paths: []string{"-"}, MaxLineBytes: 10},
		{Format: "squid", Paths: []string{"-"}, BatchSize: -1},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// metricValue returns the value of the counter name whose label values are
// labels (in label-name order).
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetValue() != labels[i] {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func TestDecompressionCapAndCorruptGzip(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&big, "1157689320.%03d 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/%d - - -\n", i%1000, i)
	}
	gz := writeFile(t, dir, "big.log.gz", big.String(), true)
	small := writeFile(t, dir, "small.log.gz", squidLines+squidLines, true)
	b, _ := os.ReadFile(small)
	trunc := filepath.Join(dir, "trunc.log.gz")
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	ok := writeFile(t, dir, "ok.log", squidLines, false)
	sink := stream.NewMemorySink()
	sum, err := Run(context.Background(), Config{Format: "squid", Paths: []string{gz, trunc, ok}, MaxDecompressedBytes: 10000, ProgressInterval: -1}, sink, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Inputs[0].Rejects[ReasonTooLarge] != 1 || sum.Inputs[0].Observations == 0 || sum.Inputs[0].Observations > 200 {
		t.Fatalf("capped input: %+v", sum.Inputs[0])
	}
	if sum.Inputs[1].Rejects[ReasonCorrupt] != 1 {
		t.Fatalf("truncated input: %+v", sum.Inputs[1])
	}
	if sum.Inputs[2].Observations != 3 {
		t.Fatalf("next input not read: %+v", sum.Inputs[2])
	}
	var reasons []string
	for _, d := range deadLetters(t, sink) {
		reasons = append(reasons, d.Reason)
	}
	if fmt.Sprint(reasons) != "[too-large corrupt fields]" {
		t.Fatalf("dead letters %v", reasons)
	}
}

func TestWARCResumeByRecords(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	for i := 0; i < 30; i++ {
		zw := gzip.NewWriter(&buf)
		block := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nbody"
		fmt.Fprintf(zw, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.example/%d\r\nWARC-Date: 2014-01-26T20:06:24Z\r\n"+
			"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, len(block), block)
		if i%3 == 0 { // a request record between responses
			fmt.Fprintf(zw, "WARC/1.0\r\nWARC-Type: request\r\nWARC-Target-URI: http://a.example/%d\r\nWARC-Date: 2014-01-26T20:06:24Z\r\nContent-Length: 0\r\n\r\n\r\n\r\n", i)
		}
		zw.Close()
	}
	p := filepath.Join(dir, "a.warc.gz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	cfg := Config{Format: "warc", Paths: []string{p}, BatchSize: 7, CheckpointPath: filepath.Join(dir, "cp.json"), ProgressInterval: -1}
	s1 := &failingSink{MemorySink: stream.NewMemorySink(), n: 2}
	if _, err := Run(context.Background(), cfg, s1, nil, nil); err == nil {
		t.Fatal("first run did not fail")
	}
	s2 := stream.NewMemorySink()
	sum, err := Run(context.Background(), cfg, s2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := append(objects(t, s1.MemorySink), objects(t, s2)...)
	if len(got) != 30 {
		t.Fatalf("%d observations over two runs: %v", len(got), got)
	}
	for i, o := range got {
		if o != fmt.Sprintf("http://a.example/%d", i) {
			t.Fatalf("observation %d = %s", i, o)
		}
	}
	if sum.Inputs[0].Skipped["record-type"] == 0 {
		t.Fatalf("summary %+v", sum.Inputs[0])
	}
}

func TestOversizedObservationIsDeadLettered(t *testing.T) {
	dir := t.TempDir()
	huge := `{"object":"http://a.example/","time":"2024-01-02T03:04:05Z","kind":"visit","digest":"` + strings.Repeat("d", MaxMessageBytes) + `"}`
	p := writeFile(t, dir, "a.jsonl", huge+"\n"+`{"object":"http://b.example/","time":"2024-01-02T03:04:05Z","kind":"visit"}`+"\n", false)
	sink := stream.NewMemorySink()
	sum, err := Run(context.Background(), Config{Format: "jsonl", Paths: []string{p}, ProgressInterval: -1}, sink, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := objects(t, sink); len(got) != 1 || got[0] != "http://b.example/" || sum.Inputs[0].Rejects[ReasonTooLarge] != 1 || sum.Inputs[0].Observations != 1 {
		t.Fatalf("%v %+v", got, sum.Inputs[0])
	}
	if dl := deadLetters(t, sink); len(dl) != 1 || dl[0].Position != p+":1" {
		t.Fatalf("%+v", dl)
	}
}

// TestFailedWriteStopsWriting: after a failed write, no later batch is
// written (which would move the checkpoint past the lost one), also not by
// the final flush.
func TestFailedWriteStopsWriting(t *testing.T) {
	dir := t.TempDir()
	var all strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&all, "1157689320.%03d 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/%d - - -\n", i, i)
	}
	p := writeFile(t, dir, "a.log", all.String(), false)
	cp := filepath.Join(dir, "cp.json")
	sink := &flakySink{MemorySink: stream.NewMemorySink(), failAt: 2}
	if _, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, BatchSize: 10, CheckpointPath: cp, ProgressInterval: -1,
		WriteRetryTimeout: time.Nanosecond}, sink, nil, nil); err == nil {
		t.Fatal("no error")
	}
	got := objects(t, sink.MemorySink)
	if len(got) != 20 {
		t.Fatalf("%d observations written, want the 20 of the two batches before the failure", len(got))
	}
	s2 := stream.NewMemorySink()
	if _, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, BatchSize: 10, CheckpointPath: cp, ProgressInterval: -1}, s2, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got2 := objects(t, s2); len(got2) != 30 || got2[0] != "http://a.example/20" {
		t.Fatalf("resumed with %d observations from %v", len(got2), got2[:1])
	}
}

// flakySink fails its failAt-th write (0-based) and succeeds otherwise.
type flakySink struct {
	*stream.MemorySink
	n, failAt int
}

func (s *flakySink) Write(ctx context.Context, msgs ...stream.Message) error {
	defer func() { s.n++ }()
	if s.n == s.failAt {
		return errors.New("broker hiccup")
	}
	return s.MemorySink.Write(ctx, msgs...)
}
