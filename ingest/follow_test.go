package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

func squidLine(name string) string {
	return fmt.Sprintf("1157689320.327 1 1.2.3.4 TCP_MISS/200 1 GET http://a.example/%s - - -\n", name)
}

// waitFor polls until the sink holds n observations; the deadline only
// guards against a hung test, it is not a timing assertion.
func waitFor(t *testing.T, s *stream.MemorySink, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(s.Messages(stream.TopicObservations)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("have %d observations, waiting for %d: %v", len(s.Messages(stream.TopicObservations)), n, objects(t, s))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestFollowRotationTruncationPartialLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	appendTo(t, p, squidLine("1"))
	sink := stream.NewMemorySink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cp := filepath.Join(dir, "cp.json")
	cfg := Config{Format: "squid", Paths: []string{p}, Follow: true, PollInterval: 5 * time.Millisecond, CheckpointPath: cp, ProgressInterval: -1}
	var sum Summary
	go func() {
		var err error
		sum, err = Run(ctx, cfg, sink, nil, nil)
		done <- err
	}()
	waitFor(t, sink, 1)

	// Growth, including a line written in two parts.
	appendTo(t, p, squidLine("2"))
	half := squidLine("3")
	appendTo(t, p, half[:20])
	time.Sleep(30 * time.Millisecond) // several polls see the partial line
	appendTo(t, p, half[20:])
	waitFor(t, sink, 3)

	// Rotation: the writer renames the file, still writes one line to the
	// old one, then opens a new file.
	old := p + ".1"
	if err := os.Rename(p, old); err != nil {
		t.Fatal(err)
	}
	appendTo(t, old, squidLine("4-late-in-old"))
	appendTo(t, p, squidLine("5-new"))
	waitFor(t, sink, 5)

	// Truncation (copytruncate): the file is emptied and written again.
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, squidLine("6"))
	waitFor(t, sink, 6)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted {
		t.Fatal("summary not marked interrupted")
	}
	got := objects(t, sink)
	want := []string{"1", "2", "3", "4-late-in-old", "5-new", "6"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, w := range want {
		if got[i] != "http://a.example/"+w {
			t.Fatalf("observation %d = %s, want %s (all: %v)", i, got[i], w, got)
		}
	}
	// Sources: the rotated file is another source (another inode); the
	// truncated one gets an epoch; offsets grow within each source.
	last := map[string]int64{}
	var sources []string
	for _, m := range sink.Messages(stream.TopicObservations) {
		o, _ := records.DecodeObservation(m.Value)
		if o.Offset <= last[o.Source] {
			t.Fatalf("offset %d of %s does not grow (last %d)", o.Offset, o.Source, last[o.Source])
		}
		if _, ok := last[o.Source]; !ok {
			sources = append(sources, o.Source)
		}
		last[o.Source] = o.Offset
	}
	if len(sources) != 3 {
		t.Fatalf("sources %v, want 3 (original, rotated-to, truncated)", sources)
	}

	// A restart with the checkpoint reads nothing again; new lines come.
	appendTo(t, p, squidLine("7"))
	sink2 := stream.NewMemorySink()
	cfg.Follow = false
	if _, err := Run(context.Background(), cfg, sink2, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := objects(t, sink2); len(got) != 1 || got[0] != "http://a.example/7" {
		t.Fatalf("after restart: %v", got)
	}
}

func TestFollowManyFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	appendTo(t, a, squidLine("a1"))
	appendTo(t, b, squidLine("b1"))
	sink := stream.NewMemorySink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Format: "squid", Paths: []string{a, b}, Follow: true, PollInterval: 5 * time.Millisecond, ProgressInterval: -1}, sink, nil, nil)
		done <- err
	}()
	waitFor(t, sink, 2)
	appendTo(t, b, squidLine("b2"))
	appendTo(t, a, squidLine("a2"))
	waitFor(t, sink, 4)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// logRecorder is a slog.Handler that keeps the messages logged, with
// their "input" attribute, for tests to wait for an event.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string // "level message input=... old=... "
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.Key + "=" + a.Value.String()
		return true
	})
	s += " "
	h.mu.Lock()
	h.msgs = append(h.msgs, s)
	h.mu.Unlock()
	return nil
}

// find returns the first message holding every one of parts.
func (h *logRecorder) find(parts ...string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(m, p)
		}
		if all {
			return m, true
		}
	}
	return "", false
}

// waitLog waits for a message holding every one of parts (the deadline
// only guards against a hung test).
func (h *logRecorder) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := h.find(parts...); ok {
			return
		}
		if time.Now().After(deadline) {
			h.mu.Lock()
			defer h.mu.Unlock()
			t.Fatalf("no log message with %q; have:\n%s", parts, strings.Join(h.msgs, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitObjects waits until the sink holds an observation of every one of
// objs (names of squidLine).
func waitObjects(t *testing.T, s *stream.MemorySink, objs ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		have := map[string]bool{}
		for _, o := range objects(t, s) {
			have[o] = true
		}
		missing := 0
		for _, o := range objs {
			if !have["http://a.example/"+o] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %v; have %v", objs, objects(t, s))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startFollow runs Run in follow mode until the returned stop is called.
func startFollow(t *testing.T, cfg Config, sink *stream.MemorySink, log *logRecorder, reg prometheus.Registerer) (stop func() Summary) {
	t.Helper()
	cfg.Follow, cfg.ProgressInterval = true, -1
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var sum Summary
	go func() {
		var err error
		sum, err = Run(ctx, cfg, sink, slog.New(log), reg)
		done <- err
	}()
	return func() Summary {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return sum
	}
}

// countEach counts the observations of each object and fails on any seen
// more than once or missing from want.
func countEach(t *testing.T, s *stream.MemorySink, want ...string) {
	t.Helper()
	n := map[string]int{}
	for _, o := range objects(t, s) {
		n[strings.TrimPrefix(o, "http://a.example/")]++
	}
	for _, w := range want {
		if n[w] != 1 {
			t.Errorf("%s read %d times, want once (all: %v)", w, n[w], objects(t, s))
		}
	}
	if got := len(objects(t, s)); got != len(want) {
		t.Errorf("%d observations, want %d: %v", got, len(want), objects(t, s))
	}
}

// TestFollowNumberedRotation follows a directory rotated the numbered way
// (a.log.1 -> a.log.2, a.log -> a.log.1, new a.log): the file now named
// a.log.1 is the one read as a.log, and a.log.2 the one read as a.log.1;
// each line is read once, and a restart with the checkpoint reads none
// again.
func TestFollowNumberedRotation(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	os.Mkdir(logs, 0o755)
	a := filepath.Join(logs, "a.log")
	appendTo(t, a+".1", squidLine("y1")+squidLine("y2"))
	appendTo(t, a, squidLine("x1")+squidLine("x2"))
	cfg := Config{Format: "squid", Paths: []string{logs}, CheckpointPath: filepath.Join(dir, "cp.json")}
	sink, log := stream.NewMemorySink(), &logRecorder{}
	stop := startFollow(t, cfg, sink, log, nil)
	waitObjects(t, sink, "y1", "y2", "x1", "x2")

	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, squidLine("z1"))
	// Both readers saw the rotation and moved on: a line appended now to
	// each old file comes after whatever they read of it again.
	log.waitLog(t, "rotated; reading the new one", "input="+a+" ")
	log.waitLog(t, "rotated; reading the new one", "input="+a+".1")
	appendTo(t, a+".1", squidLine("x3"))
	appendTo(t, a+".2", squidLine("y3"))
	appendTo(t, a, squidLine("z2"))
	waitObjects(t, sink, "x3", "y3", "z2")
	stop()
	countEach(t, sink, "y1", "y2", "y3", "x1", "x2", "x3", "z1", "z2")

	// The checkpoint knows each file under its name now.
	appendTo(t, a+".1", squidLine("x4"))
	sink2 := stream.NewMemorySink()
	cfg.Follow = false
	if _, err := Run(context.Background(), cfg, sink2, nil, nil); err != nil {
		t.Fatal(err)
	}
	countEach(t, sink2, "x4")
}

// TestFollowFindsNewFiles: following, the globs and directories are
// expanded again: a file that appears later is read from its start; a
// rotated copy of a followed file is not read again.
func TestFollowFindsNewFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(dir string) string
	}{
		{"glob", func(dir string) string { return filepath.Join(dir, "*.log*") }},
		{"directory", func(dir string) string { return dir }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
			appendTo(t, a, squidLine("a1"))
			sink, log := stream.NewMemorySink(), &logRecorder{}
			stop := startFollow(t, Config{Format: "squid", Paths: []string{tc.path(dir)}}, sink, log, nil)
			waitObjects(t, sink, "a1")
			appendTo(t, b, squidLine("b1"))
			waitObjects(t, sink, "b1")
			appendTo(t, b, squidLine("b2"))
			// A rotated copy is found as a new name of a file being read.
			if err := os.Rename(a, a+".1"); err != nil {
				t.Fatal(err)
			}
			appendTo(t, a, squidLine("a2"))
			log.waitLog(t, "following a new file", "input="+a+".1")
			log.waitLog(t, "rotated; reading the new one", "input="+a+" ")
			appendTo(t, a+".1", squidLine("a1-late"))
			waitObjects(t, sink, "b2", "a2", "a1-late")
			stop()
			countEach(t, sink, "a1", "b1", "b2", "a2", "a1-late")
		})
	}
}

// TestFollowRotatedWhileStopped: a followed file rotated while ingest was
// stopped is read to its end from the checkpoint before the new one; when
// it is not found, the loss is logged and counted.
func TestFollowRotatedWhileStopped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gone    bool // the rotated file was deleted
		want    []string
		wantLog []string
	}{
		{"found beside", false, []string{"3", "4", "5"}, []string{"rotated while ingest was stopped; reading the rest of the old one first", "old="}},
		{"deleted", true, []string{"5"}, []string{"WARN", "old one is not found", "offset="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "access.log")
			cfg := Config{Format: "squid", Paths: []string{p}, CheckpointPath: filepath.Join(dir, "cp.json")}
			appendTo(t, p, squidLine("1")+squidLine("2"))
			sink := stream.NewMemorySink()
			stop := startFollow(t, cfg, sink, &logRecorder{}, nil)
			waitObjects(t, sink, "1", "2")
			stop()

			appendTo(t, p, squidLine("3")+squidLine("4"))
			if err := os.Rename(p, p+".1"); err != nil {
				t.Fatal(err)
			}
			appendTo(t, p, squidLine("5"))
			if tc.gone {
				// After the new file was created: its inode is not
				// the old one's.
				os.Remove(p + ".1")
			}
			sink2, log := stream.NewMemorySink(), &logRecorder{}
			reg := prometheus.NewRegistry()
			stop = startFollow(t, cfg, sink2, log, reg)
			waitObjects(t, sink2, tc.want...)
			stop()
			got := objects(t, sink2)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i] != "http://a.example/"+w {
					t.Fatalf("got %v, want %v in this order", got, tc.want)
				}
			}
			if _, ok := log.find(tc.wantLog...); !ok {
				t.Errorf("no log message with %q: %v", tc.wantLog, log.msgs)
			}
			lost := testutil.ToFloat64(newMetrics(reg, "squid").lostFiles)
			if want := map[bool]float64{false: 0, true: 1}[tc.gone]; lost != want {
				t.Errorf("lost_files_total = %v, want %v", lost, want)
			}
		})
	}
}

// TestFollowTruncatedAndRefilled: a followed file truncated and written
// again past the read position between two polls (copytruncate, then a
// burst) is read again from its start: no line lost, no fragment parsed.
func TestFollowTruncatedAndRefilled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	appendTo(t, p, squidLine("1")+squidLine("2"))
	sink, log := stream.NewMemorySink(), &logRecorder{}
	// A long poll: the truncation and the refill land between two polls.
	stop := startFollow(t, Config{Format: "squid", Paths: []string{p}, PollInterval: 300 * time.Millisecond}, sink, log, nil)
	waitObjects(t, sink, "1", "2")
	refill := squidLine("refilled-a") + squidLine("refilled-b") + squidLine("refilled-c")
	if err := os.WriteFile(p, []byte(refill), 0o644); err != nil { // O_TRUNC and one write
		t.Fatal(err)
	}
	waitObjects(t, sink, "refilled-a", "refilled-b", "refilled-c")
	stop()
	countEach(t, sink, "1", "2", "refilled-a", "refilled-b", "refilled-c")
	if n := len(sink.Messages(stream.TopicDeadLetter)); n != 0 {
		t.Errorf("%d dead letters: %s", n, sink.Messages(stream.TopicDeadLetter)[0].Value)
	}
	if _, ok := log.find("truncated; reading from the start"); !ok {
		t.Error("no truncation logged")
	}
}

// Following an idle file logs no progress line every ProgressInterval
// (issue 32 item 11: one every 10 s, "lines_per_s 0", while nothing
// came); lines read again are reported again.
func TestFollowIdleNoProgressLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	appendTo(t, p, squidLine("a1"))
	sink := stream.NewMemorySink()
	rec := &logRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Format: "squid", Paths: []string{p}, Follow: true, PollInterval: 5 * time.Millisecond,
			ProgressInterval: 10 * time.Millisecond}, sink, slog.New(rec), nil)
		done <- err
	}()
	waitFor(t, sink, 1)
	count := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, m := range rec.msgs {
			if strings.Contains(m, "ingest progress") {
				n++
			}
		}
		return n
	}
	// Idle for 50 ticks (at least: a loaded machine makes fewer).
	time.Sleep(500 * time.Millisecond)
	if n := count(); n > 1 {
		t.Errorf("%d progress lines while idle, want at most the one after the first line", n)
	}
	appendTo(t, p, squidLine("a2"))
	waitFor(t, sink, 2)
	rec.waitLog(t, "ingest progress", "lines=2")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
