package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
