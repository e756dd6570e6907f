package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSummaryCountsWritten: after a Kafka write that failed, the summary
// says how many observations were produced and that none was written
// (acknowledged), instead of passing the produced ones for written.
func TestSummaryCountsWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"--format=squid", "--log-level=error", "--out=kafka", "--kafka-brokers=127.0.0.1:1", "--write-retry-timeout=1ms", p}, nil, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	out := stderr.String()
	if !regexp.MustCompile(`(?m)^  written +0 +acknowledged by topic observations; \d+ NOT WRITTEN$`).MatchString(out) ||
		!strings.Contains(out, "0 of the ") {
		t.Errorf("summary does not say that nothing was written:\n%s", out)
	}
}
