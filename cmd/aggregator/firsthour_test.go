package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// visitsJSONL returns visits of object whose digests are given (a new
// digest is a change), as observation JSON lines: the i-th at hours[i]
// hours after t0, or after i days when hours is nil.
func visitsJSONL(object string, hours []int, digests ...string) string {
	var b strings.Builder
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range digests {
		h := 24 * i
		if hours != nil {
			h = hours[i]
		}
		fmt.Fprintf(&b, `{"object":%q,"time":%q,"kind":"visit","digest":"sha1:%s","status":200}`+"\n", object, t0.Add(time.Duration(h)*time.Hour).Format(time.RFC3339), d)
	}
	return b.String()
}

// The summary's "objects with a rate" counts the objects whose estimates
// carry rate_per_s > 0; an object never seen changed (rate_per_s 0) and one
// with too few visits for a best estimate (2 visits, 1 change: kb.dk in the
// Heritrix logs) are counted on their own lines, which add up to the
// objects (issue 32 item 8: the rate-0 object counted as "with a rate").
func TestSummaryObjectsWithARate(t *testing.T) {
	// Irregular visits without a change: the best estimator
	// (cgm_irregular_mle) says 0, as for raeder.dk:83/robots.txt.
	irregular := []int{0, 1, 5, 30}
	in := visitsJSONL("http://changing.example/", nil, "A", "B", "C", "C", "D") +
		visitsJSONL("http://static.example/", irregular, "S", "S", "S", "S") +
		visitsJSONL("http://www.kb.dk/", nil, "K1", "K2")
	out, stderr, err := filter(t, []byte(in))
	if err != nil {
		t.Fatal(err, stderr)
	}
	rate := map[string]*float64{}
	for _, e := range estimates(t, out) {
		rate[e.Object] = e.RatePerS
	}
	if r := rate["http://changing.example/"]; r == nil || *r <= 0 {
		t.Fatalf("changing: rate %v", r)
	}
	if r := rate["http://static.example/"]; r == nil || *r != 0 {
		t.Fatalf("static: rate %v", r)
	}
	if r := rate["http://www.kb.dk/"]; r != nil {
		t.Fatalf("kb.dk: rate %v", *r)
	}
	for label, want := range map[string]int64{"objects": 3, "objects with a rate": 1, "objects rated 0": 1, "objects without a rate": 1} {
		if got := summaryCount(t, stderr, label); got != want {
			t.Errorf("%s: %d, want %d:\n%s", label, got, want, stderr)
		}
	}
	if !strings.Contains(stderr, "rate_per_s > 0") || !strings.Contains(stderr, "fewer than 2 intervals") {
		t.Errorf("the summary does not say what it counts:\n%s", stderr)
	}
	// Every object rated 0 still used something: exit 0.
	if _, stderr, err := filter(t, []byte(visitsJSONL("http://static.example/", irregular, "S", "S", "S", "S"))); err != nil {
		t.Errorf("rated 0 only: %v\n%s", err, stderr)
	}
}

// boundedLines cuts a line at max bytes and says so, skips the rest of
// it, and reads the lines after it; line endings \n and \r\n, and a last
// line without one.
func TestBoundedLines(t *testing.T) {
	long := strings.Repeat("x", 200_000) // beyond the 64 KiB buffer
	in := "a\r\nbb\n" + strings.Repeat("y", 10) + "\n" + strings.Repeat("z", 11) + "\n" + long + "\nlast"
	b := newBoundedLines(strings.NewReader(in), 10)
	type got struct {
		line    string
		tooLong bool
	}
	want := []got{{"a", false}, {"bb", false}, {strings.Repeat("y", 10), false}, {strings.Repeat("z", 10), true}, {strings.Repeat("x", 10), true}, {"last", false}}
	for i, w := range want {
		l, tl, err := b.next()
		if err != nil || string(l) != w.line || tl != w.tooLong {
			t.Fatalf("line %d: %q %v %v, want %q %v", i+1, l, tl, err, w.line, w.tooLong)
		}
	}
	if _, _, err := b.next(); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
}

// A line over 1 MiB is dead-lettered with reason too-long, as ingest
// does, and the run goes on (it aborted with "bufio.Scanner: token too
// long" and no summary); filter mode does not log the Kafka-only
// "partition claimed ... next_offset=-1" at info (issue 32 item 11).
func TestFilterLongLineDeadLettered(t *testing.T) {
	in := visitsJSONL("http://a.example/", nil, "A", "B") +
		`{"object":"http://a.example/","time":"2026-03-10T00:00:00Z","kind":"visit","digest":"sha1:` + strings.Repeat("L", 1<<21) + "\"}\n" +
		visitsJSONL("http://b.example/", nil, "A", "B", "C")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--in=-", "--store=memory", "--out=-", "--emit=final", "--log-level=info"}, strings.NewReader(in), &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	e := stderr.String()
	if !strings.Contains(e, `"reason":"too-long"`) || !strings.Contains(e, `"position":"stdin:3"`) || !strings.Contains(e, "too-long: 1 (dead letters)") {
		t.Errorf("the long line is not dead-lettered and counted:\n%.3000s", e)
	}
	if got := summaryCount(t, e, "observations"); got != 5 {
		t.Errorf("%d observations, want the 5 other lines", got)
	}
	if strings.Contains(e, "partition claimed") {
		t.Errorf("filter mode logs the claim of its input:\n%.3000s", e)
	}
}

// --demo-exit prints the estimates and exits: it does not bind the
// default HTTP address, so :8080 in use does not fail it (issue 32 item
// 11). The test holds :8080 itself when it is free.
func TestDemoExitBindsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process Kafka broker")
	}
	t.Setenv("CHANGERATE_HTTP_ADDR", "") // unset below: the default applies
	os.Unsetenv("CHANGERATE_HTTP_ADDR")
	if ln, err := net.Listen("tcp", ":8080"); err == nil {
		defer ln.Close()
	} // else :8080 is in use by another process: the same test
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := run(ctx, []string{"--demo-exit", "--demo-pages=1", "--demo-days=2", "--log-level=warn", "--partitions=1",
		"--kafka-session-timeout=6s", "--kafka-heartbeat=500ms"}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("demo with :8080 in use: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "change rates") || strings.Contains(stdout.String(), "Serving http") {
		t.Errorf("demo output:\n%s", stdout.String())
	}
}
