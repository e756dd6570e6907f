package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
	"github.com/prometheus/client_golang/prometheus"
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

// TestReadyz: /readyz is 200 only while the consumer runs, the member is
// in a consumer-group generation (with or without partitions) and the
// store answers; otherwise 503 with the reason. /healthz stays 200.
func TestReadyz(t *testing.T) {
	mem, err := state.NewMemory(state.MemoryConfig{Now: time.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := aggregate.NewProcessor(aggregate.DefaultConfig(), mem, stream.NewMemorySink(), slog.New(slog.DiscardHandler), prometheus.NewRegistry(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	for _, tc := range []struct {
		name     string
		running  bool
		gen      int64
		parts    int
		storeErr error
		status   int
		body     string
	}{
		{"starting", false, 0, 0, nil, 503, "not ready: consumer not running"},
		{"not joined", true, 0, 0, nil, 503, "not ready: not a member of a consumer-group generation"},
		{"joined", true, 3, 2, nil, 200, "ready"},
		{"joined without partitions", true, 3, 0, nil, 200, "ready"},
		{"store down", true, 3, 2, down, 503, "not ready: state store unreachable: dial tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newHTTPServer("127.0.0.1:0", 1<<20, prometheus.NewRegistry(), proc, slog.New(slog.DiscardHandler))
			srv.setReady(tc.running)
			srv.source = func() (int64, int) { return tc.gen, tc.parts }
			srv.store = newStoreProbe(func(context.Context) error { return tc.storeErr }, time.Minute, time.Now)
			for path, want := range map[string]int{"/readyz": tc.status, "/healthz": 200} {
				rec := httptest.NewRecorder()
				srv.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				body, _ := io.ReadAll(rec.Body)
				if rec.Code != want {
					t.Errorf("%s: status %d, want %d (body %q)", path, rec.Code, want, body)
				}
				if path == "/readyz" && !strings.HasPrefix(string(body), tc.body) {
					t.Errorf("%s: body %q, want it to start with %q", path, body, tc.body)
				}
			}
		})
	}
}

// TestStoreProbeCaches: the readiness probe's store check reuses a result,
// success or failure, for the interval, so probes cost at most one store
// round trip per interval.
func TestStoreProbeCaches(t *testing.T) {
	now := time.Unix(0, 0)
	var pings int
	var fail error
	p := newStoreProbe(func(context.Context) error { pings++; return fail }, 2*time.Second, func() time.Time { return now })
	for _, step := range []struct {
		advance time.Duration
		fail    error
		pings   int
		err     bool
	}{
		{0, nil, 1, false},
		{time.Second, errors.New("down"), 1, false}, // cached success
		{time.Second, errors.New("down"), 2, true},  // interval over: checked again
		{time.Second, nil, 2, true},                 // cached failure
		{time.Second, nil, 3, false},
	} {
		now = now.Add(step.advance)
		fail = step.fail
		err := p.check(context.Background())
		if pings != step.pings || (err != nil) != step.err {
			t.Fatalf("at %v: %d pings, err %v; want %d pings, error %v", now.Sub(time.Unix(0, 0)), pings, err, step.pings, step.err)
		}
	}
}

// readyz returns /readyz's status and body (status 0: no answer).
func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
