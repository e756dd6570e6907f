package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// TestConfigErrorsAreUsageErrors checks which failures exit with status 2
// (configuration, as ingest and flag parsing do) and which with 1 (a run
// that failed).
func TestConfigErrorsAreUsageErrors(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		usage bool
	}{
		{"bad number", []string{"--batch-size=x"}, true},
		{"unknown flag", []string{"--no-such-flag"}, true},
		{"positional argument", []string{"obs.jsonl"}, true},
		{"filter and Kafka", []string{"--in=-", "--kafka-brokers=127.0.0.1:1"}, true},
		{"TLS files without TLS", []string{"--kafka-brokers=127.0.0.1:1", "--kafka-tls-ca=ca.pem"}, true},
		{"missing input file", []string{"--in=" + filepath.Join(t.TempDir(), "missing.jsonl")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, nil, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("run succeeded")
			}
			var ue usageError
			if got := errors.As(err, &ue); got != tc.usage {
				t.Fatalf("usage error = %v, want %v (err: %v)", got, tc.usage, err)
			}
		})
	}
}
