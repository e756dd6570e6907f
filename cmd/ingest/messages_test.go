package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A one-shot run whose Kafka writes keep failing says so once, with the
// remedy: the error was logged and then printed again (issue 32 item 11).
func TestWriteFailureSaidOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"--format=squid", "--out=kafka", "--kafka-brokers=" + addr, "--write-retry-timeout=300ms", "--dead-letter=/dev/null", p}, nil, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "still failing after"); n != 1 {
		t.Fatalf("the failure is said %d times, want once:\n%s", n, stderr.String())
	}
	if !strings.Contains(stderr.String(), "CHANGERATE_KAFKA_BROKERS (--kafka-brokers)") {
		t.Fatalf("no remedy:\n%s", stderr.String())
	}
}

// A wrong --format: the hint comes before the dead letters, of which the
// first deadLettersShown are printed on stderr and the others counted
// (issue 32 item 5: 10,000 dead letters came before the hint).
func TestWrongFormatHintFirstDeadLettersCounted(t *testing.T) {
	var clf strings.Builder
	for i := range 50 {
		fmt.Fprintf(&clf, "83.149.9.216 - - [17/May/2015:10:05:%02d +0000] \"GET /p/%d HTTP/1.1\" 200 203 \"-\" \"ua\"\n", i, i)
	}
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(clf.String()), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", "--out=-", p}, nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	e := stderr.String()
	hint, firstDL := strings.Index(e, "--format=squid accepts none of the first 20 lines"), strings.Index(e, `"reason":`)
	if hint < 0 || firstDL < 0 || hint > firstDL || !strings.Contains(e[:firstDL], "--format=clf") {
		t.Fatalf("the hint (at %d) does not come before the first dead letter (at %d):\n%s", hint, firstDL, e)
	}
	if n := strings.Count(e, `"reason":`); n != deadLettersShown {
		t.Fatalf("%d dead letters printed, want %d:\n%s", n, deadLettersShown, e)
	}
	if want := fmt.Sprintf("the first %d printed, %d not", deadLettersShown, 50-deadLettersShown); !strings.Contains(e, want) {
		t.Fatalf("summary lacks %q:\n%s", want, e)
	}
	// Into a file, every dead letter is kept.
	dl := filepath.Join(t.TempDir(), "dl.jsonl")
	stderr.Reset()
	run([]string{"--format=squid", "--out=-", "--dead-letter=" + dl, p}, nil, &stdout, &stderr)
	if b, _ := os.ReadFile(dl); strings.Count(string(b), "\n") != 50 || strings.Contains(stderr.String(), "not printed") {
		t.Fatalf("%d dead letters in the file; stderr:\n%s", strings.Count(string(b), "\n"), stderr.String())
	}
}

// Path-only targets without --base-url: ingest says once that they become
// http://localhost/... objects, and names the option (issue 32 item 9);
// with --base-url, or with absolute targets, it says nothing.
func TestLocalhostObjectsSaidOnce(t *testing.T) {
	var clf strings.Builder
	for i := range 30 {
		fmt.Fprintf(&clf, "1.2.3.4 - - [17/May/2015:10:05:%02d +0000] \"GET /p/%d HTTP/1.1\" 200 203\n", i, i)
	}
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(clf.String()), 0o644)
	sq := filepath.Join(t.TempDir(), "squid.log")
	os.WriteFile(sq, []byte(squid), 0o644)
	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"--format=clf", "--batch-size=4", p}, 1},
		{[]string{"--format=clf", "--order=input", "--batch-size=4", p}, 1},
		{[]string{"--format=clf", "--base-url=https://www.example.org", p}, 0},
		{[]string{"--format=squid", sq}, 0},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"--out=-", "--dead-letter=/dev/null"}, c.args...), nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr.String())
		}
		if n := strings.Count(stderr.String(), "http://localhost/PATH"); n != c.n || c.n == 1 && !strings.Contains(stderr.String(), "CHANGERATE_BASE_URL (--base-url)") {
			t.Errorf("%v: said %d times, want %d:\n%s", c.args, n, c.n, stderr.String())
		}
	}
}
