package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// TestHTTPRequestTargetLimits: the HTTP server reads every request target
// the query API accepts (API_MAX_REQUEST_BYTES, also above 64 KiB) and a
// longer one up to its header limit, which the API answers with its JSON
// 414; only beyond API_MAX_REQUEST_BYTES + 64 KiB (+ net/http's 4 KiB of
// slack) does net/http answer its own plain-text 431, before any handler.
func TestHTTPRequestTargetLimits(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		target int // bytes of the url parameter
		status int
		reason string // in the JSON body; "" when the body is net/http's text
	}{
		{"default: longer than API_MAX_REQUEST_BYTES", nil, 9000, 414, "longer than 8192 bytes"},
		{"default: longer than 64 KiB", nil, 70_000, 414, "longer than 8192 bytes"},
		{"default: beyond the header limit", nil, 200_000, 431, ""},
		{"API_MAX_REQUEST_BYTES 128KiB: 100 KB is read", []string{"--api-max-request-bytes=128KiB"}, 100_000, 400, "not a URL ingest would accept"}, // (too long for ingest too),
		{"API_MAX_REQUEST_BYTES 128KiB: longer", []string{"--api-max-request-bytes=128KiB"}, 140_000, 414, "longer than 131072 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := newConfig()
			fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			if _, err := cliconfig.LoadFrom(func(string) (string, bool) { return "", false }, envPrefix, &cfg, fs, c.args); err != nil {
				t.Fatal(err)
			}
			if err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			store, err := state.NewMemory(state.MemoryConfig{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			logger := slog.New(slog.DiscardHandler)
			api, err := newQuery(&cfg, store, stream.NewMemorySink(), query.SinglePartition{Topic: stream.TopicObservations}, logger)
			if err != nil {
				t.Fatal(err)
			}
			srv := newHTTPServer("127.0.0.1:0", cfg.maxHeaderBytes(), prometheus.NewRegistry(), nil, logger, api.srv.Register)
			if err := srv.listen(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()

			prefix := "/v1/objects?url=http://a.example/"
			resp, err := http.Get("http://" + srv.Addr() + prefix + strings.Repeat("a", c.target-len(prefix)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.200s", resp.StatusCode, c.status, body)
			}
			if c.reason == "" {
				return
			}
			var eb query.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || eb.Status != c.status || !strings.Contains(eb.Error, c.reason) {
				t.Errorf("body %.200s (%v), want JSON with status %d and %q", body, err, c.status, c.reason)
			}
		})
	}
}
