package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/records"
)

const squid = `1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 text/html
broken
1157689320.343   1357 10.105.21.199 TCP_REFRESH_HIT/304 214 GET http://www.goonernews.com/styles.css badeyek DIRECT/175.16.199.61 -
`

func TestRunOutStdout(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	dl := filepath.Join(dir, "dead.jsonl")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--format=squid", "--out=-", "--dead-letter=" + dl, "--report", p}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout: %q", stdout.String())
	}
	o, err := records.DecodeObservation([]byte(lines[1]))
	if err != nil || o.Kind != records.KindRevalidation || o.Changed != records.Unchanged {
		t.Fatalf("%+v %v", o, err)
	}
	b, _ := os.ReadFile(dl)
	if !strings.Contains(string(b), `"reason":"fields"`) || !strings.Contains(string(b), `"position":"`+p+`:2"`) {
		t.Fatalf("dead letters: %s", b)
	}
	if !strings.Contains(stderr.String(), "fields:1") {
		t.Fatalf("report missing: %s", stderr.String())
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	emptyDir := t.TempDir()
	for _, c := range []struct {
		env, val string
		args     []string
		want     string
	}{
		{"CHANGERATE_BATCH_SIZE", "x", []string{"--format=squid", "a"}, "CHANGERATE_BATCH_SIZE"},
		{"CHANGERATE_BATCH_SIZE", "0", []string{"--format=squid", "a"}, "CHANGERATE_BATCH_SIZE"},
		{"CHANGERATE_ZONE", "Mars/Olympus", []string{"--format=squid", "a"}, "CHANGERATE_ZONE"},
		{"CHANGERATE_FORMAT", "bogus", []string{"a"}, "CHANGERATE_FORMAT"},
		{"CHANGERATE_OUT", "kafka", []string{"--format=squid", "a"}, "CHANGERATE_KAFKA_BROKERS (--kafka-brokers)"},
		{"CHANGERATE_KAFKA_SASL_MECHANISM", "MAGIC", []string{"--format=squid", "--out=kafka", "--kafka-brokers=h:1", "a"}, "CHANGERATE_KAFKA_SASL_MECHANISM (--kafka-sasl-mechanism)"},
		{"CHANGERATE_KAFKA_LINGER", "soon", []string{"--format=squid", "a"}, "CHANGERATE_KAFKA_LINGER"},
		{"CHANGERATE_PROFILE", "odd", []string{"--format=squid", "a"}, "CHANGERATE_PROFILE"},
		{"CHANGERATE_LOG_LEVEL", "loud", []string{"--format=squid", "a"}, "CHANGERATE_LOG_LEVEL"},
		{"CHANGERATE_FORMAT", "worldcup-csv", []string{"a"}, "CHANGERATE_ZONE (--zone)"},
		{"CHANGERATE_KAFKA_TLS_CA", "ca.pem", []string{"--format=squid", "--out=kafka", "--kafka-brokers=h:1", "a"}, "CHANGERATE_KAFKA_TLS (--kafka-tls)"},
		// Found at start, not after reading (and writing) every input.
		{"CHANGERATE_CHECKPOINT", "/nonexistent/cp", []string{"--format=squid", "a"}, "CHANGERATE_CHECKPOINT (--checkpoint) \"/nonexistent/cp\": its directory"},
		{"CHANGERATE_SORT_DIR", "/nonexistent", []string{"--format=squid", "--sort-memory=100000", "a"}, "CHANGERATE_SORT_DIR (--sort-dir)"},
		{"CHANGERATE_SORT_MEMORY", "1MiB", []string{"--format=squid", "--sort-dir=/nonexistent", "a"}, "CHANGERATE_SORT_DIR (--sort-dir)"},
		{"CHANGERATE_PATHS", "/nonexistent/*.nomatch", []string{"--format=squid"}, "CHANGERATE_PATHS (--paths): glob \"/nonexistent/*.nomatch\" matches nothing"},
		{"CHANGERATE_FORMAT", "squid", []string{"/nonexistent/*.nomatch"}, "FILE arguments or CHANGERATE_PATHS (--paths): glob"},
		{"CHANGERATE_FORMAT", "auto", []string{emptyDir}, "FILE arguments or CHANGERATE_PATHS (--paths): directory \"" + emptyDir + "\" holds no file"},
	} {
		t.Run(c.env+"="+c.val, func(t *testing.T) {
			t.Setenv(c.env, c.val)
			var stdout, stderr bytes.Buffer
			if code := run(c.args, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %s", code, stderr.String(), c.want)
			}
			if strings.Contains(stderr.String(), "summary") || stdout.Len() > 0 {
				t.Errorf("output or a summary before the configuration error:\n%s%s", stdout.String(), stderr.String())
			}
		})
	}
}

func TestFlagsOverrideEnv(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	t.Setenv("CHANGERATE_FORMAT", "heritrix")
	t.Setenv("CHANGERATE_PATHS", "/nonexistent")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", "--dead-letter=/dev/null", p}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 {
		t.Fatalf("%d observations", n)
	}
}

// TestSIGTERMDrains follows a file, sends SIGTERM to the process and
// checks that ingest exits 0 with every line written and the checkpoint at
// the end of the file.
func TestSIGTERMDrains(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	cp := filepath.Join(dir, "cp.json")
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--format=squid", "--follow", "--poll-interval=5ms", "--checkpoint=" + cp, "--dead-letter=/dev/null", p}, nil, &stdout, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(stdout.String(), "\n") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no output: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ingest did not stop on SIGTERM")
	}
	b, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), fmt.Sprintf(`"offset":%d`, len(squid))) {
		t.Fatalf("checkpoint %s does not point at the end (%d)", b, len(squid))
	}
	// Following, SIGTERM is the normal way to stop: said plainly.
	if want := "stopped (SIGTERM or SIGINT) while following; positions saved in the checkpoint " + cp; !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOutKafka ingests into a Kafka-protocol broker (kfake): observations
// are keyed by object, so each object lands on one partition, and the dead
// letter goes to its own topic.
func TestOutKafka(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "observations", Partitions: 4}, kafkatest.Topic{Name: "dead-letter", Partitions: 1})
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	var lines strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&lines, "1157689320.%03d 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/%d - - -\n", i, i%7)
	}
	lines.WriteString("broken\n")
	os.WriteFile(p, []byte(lines.String()), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", "--out=kafka", "--kafka-brokers=" + c.Addr(), "--batch-size=8", p}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	recs := c.ReadAll(t, "observations")
	if len(recs) != 40 {
		t.Fatalf("%d observations", len(recs))
	}
	partOf := map[string]int32{}
	for _, r := range recs {
		o, err := records.DecodeObservation(r.Value)
		if err != nil || o.Object != string(r.Key) {
			t.Fatalf("record %s key %s: %v", r.Value, r.Key, err)
		}
		if q, ok := partOf[o.Object]; ok && q != r.Partition {
			t.Fatalf("object %s on partitions %d and %d", o.Object, q, r.Partition)
		}
		partOf[o.Object] = r.Partition
	}
	if dl := c.ReadAll(t, "dead-letter"); len(dl) != 1 || !strings.Contains(string(dl[0].Value), `"reason":"fields"`) {
		t.Fatalf("dead letters %v", dl)
	}
}

// TestStdinGzip reads gzip-compressed lines from stdin ("-").
func TestStdinGzip(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	go func() {
		zw := gzip.NewWriter(w)
		zw.Write([]byte(squid))
		zw.Close()
		w.Close()
	}()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", "--dead-letter=/dev/null", "-"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || strings.Contains(stdout.String(), `"source"`) {
		t.Fatalf("stdout %q", stdout.String())
	}
}

// TestNothingUsableHints: a file of another format than --format gives no
// observation: exit 1, and stderr names the format that accepts its lines.
func TestNothingUsableHints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"--format=heritrix-json", "--dead-letter=/dev/null", p}, nil, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "nothing could be used") || !strings.Contains(stderr.String(), "--format=squid") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	// --format=auto reads it.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--format=auto", "--dead-letter=/dev/null", p}, nil, &stdout, &stderr); code != 0 || strings.Count(stdout.String(), "\n") != 2 {
		t.Fatalf("auto: exit %d, %d observations; stderr:\n%s", code, strings.Count(stdout.String(), "\n"), stderr.String())
	}
	if !strings.Contains(stderr.String(), "format=squid") || !strings.Contains(stderr.String(), "ingest summary") {
		t.Errorf("auto: stderr lacks the detected format or the summary:\n%s", stderr.String())
	}
}

// TestUsageSynopsis: -h starts with what the program does, its modes and
// examples, and names no Go internals.
func TestUsageSynopsis(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	h := stderr.String()
	if !strings.HasPrefix(h, "ingest reads logs") || !strings.Contains(h, "examples:") || !strings.Contains(h, "--format=auto") {
		t.Errorf("-h does not start with the synopsis:\n%.600s", h)
	}
	for _, bad := range []string{"Config.", "NewRecordReader", "Go value of type"} {
		if strings.Contains(h, bad) {
			t.Errorf("-h mentions %q", bad)
		}
	}
}

// TestFilesMergedByTime: two rotated logs given newest first, one of them
// written newest first too, come out as one stream in event-time order
// (--order=time, the default for files read once); --order=input keeps
// the input order.
func TestFilesMergedByTime(t *testing.T) {
	dir := t.TempDir()
	line := func(ts int) string {
		return fmt.Sprintf("%d.000 10 10.0.0.1 TCP_MISS/200 100 GET http://a.example/%d - DIRECT/1.2.3.4 text/html\n", ts, ts%3)
	}
	old, cur := filepath.Join(dir, "access.log.1"), filepath.Join(dir, "access.log")
	os.WriteFile(old, []byte(line(1000)+line(1003)+line(1001)), 0o644)
	os.WriteFile(cur, []byte(line(2005)+line(2004)+line(1002)), 0o644) // newest first
	times := func(out string) []int64 {
		var ts []int64
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			o, err := records.DecodeObservation([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, o.Time.Unix())
		}
		return ts
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", cur, old}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := fmt.Sprint(times(stdout.String())); got != "[1000 1001 1002 1003 2004 2005]" {
		t.Errorf("--order=time: times %s", got)
	}
	if !strings.Contains(stderr.String(), "sorted by event time") {
		t.Errorf("summary does not say the output is sorted:\n%s", stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--format=squid", "--order=input", cur, old}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got := fmt.Sprint(times(stdout.String())); got != "[2005 2004 1002 1000 1003 1001]" {
		t.Errorf("--order=input: times %s", got)
	}
}

// TestProgressIntervalNoneAsHelpSays: the value -h gives for "no progress
// line" is accepted.
func TestProgressIntervalNoneAsHelpSays(t *testing.T) {
	var stdout, stderr bytes.Buffer
	run([]string{"-h"}, nil, &stdout, &stderr)
	var none string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if i := strings.Index(l, "progress log line"); i >= 0 {
			// "...; a negative duration (e.g. -1s): none"
			if _, after, ok := strings.Cut(l[i:], "e.g. "); ok {
				none, _, _ = strings.Cut(after, ")")
			}
		}
	}
	if none == "" {
		t.Fatalf("-h gives no example of a negative --progress-interval:\n%s", stderr.String())
	}
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--format=squid", "--dead-letter=/dev/null", "--progress-interval=" + none, p}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--progress-interval=%s: exit %d: %s", none, code, stderr.String())
	}
}

// TestSummaryStopped: the summary says how a run stopped by a signal
// ended; following, that is the normal way to stop.
func TestSummaryStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    ingest.Config
		want   string
		reject string
	}{
		{"follow with checkpoint", ingest.Config{Format: "squid", Follow: true, CheckpointPath: "/var/lib/cp"},
			"stopped (SIGTERM or SIGINT) while following; positions saved in the checkpoint /var/lib/cp", "interrupted"},
		{"follow without checkpoint", ingest.Config{Format: "squid", Follow: true},
			"no checkpoint (CHANGERATE_CHECKPOINT (--checkpoint)): a restart reads every file from the start", "interrupted"},
		{"read once", ingest.Config{Format: "squid"}, "interrupted before every input was read", "following"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeSummary(&b, config{options.Ingest{Out: "-", DeadLetter: "-"}}, tc.cfg, ingest.Summary{Interrupted: true}, nil, 0)
			if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.reject) {
				t.Errorf("summary lacks %q (or has %q):\n%s", tc.want, tc.reject, b.String())
			}
		})
	}
}
