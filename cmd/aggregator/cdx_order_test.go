package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/stream"
)

// ingestLines runs ingest (library) on path with format and returns the
// observations as JSON lines, in the order ingest wrote them.
func ingestLines(t *testing.T, format, path string) []byte {
	t.Helper()
	var obs, dead bytes.Buffer
	sink := stream.NewWriterSink(map[string]io.Writer{stream.TopicObservations: &obs, stream.TopicDeadLetter: &dead}, nil)
	if _, err := ingest.Run(context.Background(), ingest.Config{Format: format, Paths: []string{path}, ProgressInterval: -1}, sink, nil, prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if dead.Len() > 0 {
		t.Fatalf("dead letters: %s", dead.String())
	}
	return obs.Bytes()
}

// TestCDXInputOrder: a CDX (sorted by URL key, so each object's captures
// in time order and the stream as a whole not) gives, read in input order
// through the reorder buffer (--sort=false: no sort of the stream), the
// same final estimates as the same captures sorted by event time.
func TestCDXInputOrder(t *testing.T) {
	path := realData(t, filepath.Join("..", "cdx-samples", "wayback-cdx-api-edgi.cdx"))
	in := ingestLines(t, "cdx", path)
	lines := strings.Split(strings.TrimSpace(string(in)), "\n")
	type tl struct {
		t    time.Time
		obj  string
		line string
	}
	var byTime []tl
	backwards := 0
	var prev time.Time
	for _, l := range lines {
		var o struct {
			Object string    `json:"object"`
			Time   time.Time `json:"time"`
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.Time.Before(prev) {
			backwards++
		}
		prev = o.Time
		byTime = append(byTime, tl{o.Time, o.Object, l})
	}
	if backwards == 0 {
		t.Fatal("the CDX's observations are in time order: the test would not test the input order")
	}
	sort.SliceStable(byTime, func(i, j int) bool {
		if !byTime[i].t.Equal(byTime[j].t) {
			return byTime[i].t.Before(byTime[j].t)
		}
		return byTime[i].obj < byTime[j].obj
	})
	var sorted bytes.Buffer
	for _, x := range byTime {
		sorted.WriteString(x.line + "\n")
	}
	final := func(input []byte, extra ...string) string {
		var out, errb bytes.Buffer
		args := append([]string{"--in=-", "--store=memory", "--out=-", "--emit=final", "--log-level=error"}, extra...)
		if err := run(context.Background(), args, bytes.NewReader(input), &out, &errb); err != nil {
			t.Fatalf("aggregator %v: %v\n%s", extra, err, errb.String())
		}
		ls := strings.Split(strings.TrimSpace(out.String()), "\n")
		sort.Strings(ls)
		return strings.Join(ls, "\n")
	}
	streamed := final(in, "--sort=false")
	timeOrder := final(sorted.Bytes(), "--sort=false")
	if streamed != timeOrder {
		t.Fatalf("estimates differ:\ninput order:\n%s\ntime order:\n%s", streamed, timeOrder)
	}
	rates := 0
	for _, l := range strings.Split(streamed, "\n") {
		if strings.Contains(l, `"rate_per_s"`) && strings.Contains(l, `"kind":"change"`) {
			rates++
		}
	}
	for _, u := range []string{"http://www.cnn.com/", "http://www.zew.de/", "http://www.nasa.gov/"} {
		if !strings.Contains(streamed, `"object":"`+u+`"`) {
			t.Errorf("no estimate of %s", u)
		}
	}
	t.Logf("%d observations (%d out of time order in the CDX), %d change rates, identical in both orders", len(lines), backwards, rates)
}
