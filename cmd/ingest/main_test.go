package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, c := range []struct {
		env, val string
		args     []string
		want     string
	}{
		{"CHANGERATE_INGEST_BATCH_SIZE", "x", []string{"--format=squid", "a"}, "CHANGERATE_INGEST_BATCH_SIZE"},
		{"CHANGERATE_INGEST_BATCH_SIZE", "0", []string{"--format=squid", "a"}, "CHANGERATE_INGEST_BATCH_SIZE"},
		{"CHANGERATE_INGEST_ZONE", "Mars/Olympus", []string{"--format=squid", "a"}, "CHANGERATE_INGEST_ZONE"},
		{"CHANGERATE_INGEST_FORMAT", "bogus", []string{"a"}, "CHANGERATE_INGEST_FORMAT"},
		{"CHANGERATE_INGEST_OUT", "kafka", []string{"--format=squid", "a"}, "CHANGERATE_KAFKA"},
		{"CHANGERATE_INGEST_PROFILE", "odd", []string{"--format=squid", "a"}, "CHANGERATE_INGEST_PROFILE"},
		{"CHANGERATE_INGEST_LOG_LEVEL", "loud", []string{"--format=squid", "a"}, "CHANGERATE_INGEST_LOG_LEVEL"},
	} {
		t.Run(c.env+"="+c.val, func(t *testing.T) {
			t.Setenv(c.env, c.val)
			var stdout, stderr bytes.Buffer
			if code := run(c.args, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %s", code, stderr.String(), c.want)
			}
		})
	}
}

func TestFlagsOverrideEnv(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte(squid), 0o644)
	t.Setenv("CHANGERATE_INGEST_FORMAT", "heritrix")
	t.Setenv("CHANGERATE_INGEST_PATHS", "/nonexistent")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--format=squid", "--dead-letter=/dev/null", p}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 {
		t.Fatalf("%d observations", n)
	}
}
