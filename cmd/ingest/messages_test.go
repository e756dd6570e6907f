package main

import (
	"bytes"
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
