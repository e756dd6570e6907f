package query_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// lockedBuffer is a log destination the server's goroutines write while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// brokenStore is a state store whose reads fail with err, or else return
// vals.
type brokenStore struct {
	*state.Memory
	err  error
	vals [][]byte
}

func (b brokenStore) Get(_ context.Context, _ state.Partition, _ []string, dst [][]byte) ([][]byte, error) {
	if b.err != nil {
		return dst, b.err
	}
	return append(dst, b.vals...), nil
}

// TestTopReadsNoStore: /v1/top and / answer from the index alone (issue
// 32: they answered 503 while Redis was down, reading every listed
// object's state): with a store whose every read fails, both answer 200
// with the indexed object, and the store is never read.
func TestTopReadsNoStore(t *testing.T) {
	var reads atomic.Int64
	store := countingStore{brokenStore: brokenStore{Memory: newMemoryStore(t), err: errors.New("state: get: connection refused")}, reads: &reads}
	idx := query.NewIndex(query.IndexConfig{})
	r, ttl := 1e-4, 600.0
	next := t0.Add(time.Hour)
	rec := &records.Estimate{Object: "http://a.example/x", Site: "a.example", Kind: records.EstimateChange, AsOf: t0, RatePerS: &r,
		Estimator: "cgm_improved", CI95: &[2]float64{0, 3e-4}, Observations: 7, Changes: 0, NextVisit: &next, TTLS: &ttl}
	idx.AddEstimate(rec)
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations},
		aggregate.DefaultConfig().Model, idx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, qs)
	var top query.TopResult
	if err := json.Unmarshal(e.get(t, "/v1/top", http.StatusOK), &top); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(top.Objects)
	want, _ := json.Marshal([]*records.Estimate{rec})
	if !bytes.Equal(got, want) {
		t.Errorf("/v1/top objects\n got %s\nwant %s", got, want)
	}
	resp, body := raw(t, e, http.MethodGet, "/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "http://a.example/x") || !strings.Contains(string(body), "cgm_improved") {
		t.Errorf("/: %d\n%s", resp.StatusCode, body)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("the store was read %d times", n)
	}
	// The object's own record needs the store: 503 (TestAPIDependencyUnavailable).
	e.get(t, "/v1/objects?url="+q("http://a.example/x"), http.StatusServiceUnavailable)
	if reads.Load() == 0 {
		t.Error("/v1/objects did not read the store")
	}
}

// countingStore counts the reads of a brokenStore.
type countingStore struct {
	brokenStore
	reads *atomic.Int64
}

func (c countingStore) Get(ctx context.Context, p state.Partition, keys []string, dst [][]byte) ([][]byte, error) {
	c.reads.Add(1)
	return c.brokenStore.Get(ctx, p, keys, dst)
}

// raw requests path without checking it against api/openapi.yaml (pages,
// paths that are not the API's).
func raw(t *testing.T, e *env, method, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	_, resp, body := e.do(t, method, path, header...)
	return resp, body
}

// TestAPIDependencyUnavailable: a state store or a Kafka that cannot be
// reached is a 503 with a generic reason and Retry-After, a state that
// cannot be decoded (a bug) a 500 with a generic reason; the details
// (addresses, the store's and the decoder's errors) go to the log with the
// request's path, never to the client.
func TestAPIDependencyUnavailable(t *testing.T) {
	refused := func(port int) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Err: errors.New("connect: connection refused")}
	}
	redisDown := fmt.Errorf("state: get observations/9: %w", refused(16399))
	kafkaDown := fmt.Errorf("kafka.(*Client).Metadata: %w", refused(19093))
	obj := "http://a.example/x"
	cases := []struct {
		name   string
		store  brokenStore
		kafka  error // the locator's metadata request fails with it
		path   string
		status int
		reason string
		logged []string
	}{
		{"Redis down: object", brokenStore{err: redisDown}, nil, "/v1/objects?url=" + q(obj), 503,
			"state store unavailable, retry later", []string{"path=/v1/objects", "127.0.0.1:16399", "connection refused"}},
		{"Redis down: view", brokenStore{err: redisDown}, nil, "/v1/objects/view?url=" + q(obj), 503,
			"state store unavailable", []string{"path=/v1/objects/view", "127.0.0.1:16399"}},
		{"Redis down: object page", brokenStore{err: redisDown}, nil, "/objects?url=" + q(obj), 503,
			"state store unavailable", []string{"path=/objects", "127.0.0.1:16399"}},
		{"Kafka down: object", brokenStore{}, kafkaDown, "/v1/objects?url=" + q(obj), 503,
			"Kafka unavailable, retry later", []string{"path=/v1/objects", "127.0.0.1:19093", "partitions of observations"}},
		{"Kafka down: object page", brokenStore{}, kafkaDown, "/objects?url=" + q(obj), 503,
			"Kafka unavailable", []string{"path=/objects", "127.0.0.1:19093"}},
		{"undecodable state: object", brokenStore{vals: [][]byte{[]byte("garbage"), nil}}, nil, "/v1/objects?url=" + q(obj), 500,
			"internal error", []string{"path=/v1/objects", "decode"}},
		{"undecodable state: object page", brokenStore{vals: [][]byte{[]byte("garbage"), nil}}, nil, "/objects?url=" + q(obj), 500,
			"internal error", []string{"path=/objects", "decode"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log lockedBuffer
			c.store.Memory = newMemoryStore(t)
			var loc query.Locator = query.SinglePartition{Topic: stream.TopicObservations}
			if c.kafka != nil {
				loc = &query.KafkaLocator{Topic: stream.TopicObservations,
					Partitions: func(context.Context) ([]int, error) { return nil, c.kafka }}
			}
			idx := query.NewIndex(query.IndexConfig{})
			r := 1e-4
			idx.AddEstimate(&records.Estimate{Object: obj, Site: "a.example", Kind: records.EstimateChange, AsOf: t0, RatePerS: &r})
			qs, err := query.NewServer(query.Config{}, c.store, loc, aggregate.DefaultConfig().Model, idx, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			e := serve(t, qs)
			var (
				header http.Header
				body   []byte
			)
			if strings.HasPrefix(c.path, "/v1/") {
				header, body = e.fetch(t, c.path, c.status) // and checked against api/openapi.yaml
				var eb query.ErrorBody
				if err := json.Unmarshal(body, &eb); err != nil || eb.Status != c.status || !strings.Contains(eb.Error, c.reason) {
					t.Errorf("body %s (%v), want status %d and %q", body, err, c.status, c.reason)
				}
			} else {
				resp, b := raw(t, e, http.MethodGet, c.path)
				header, body = resp.Header, b
				if resp.StatusCode != c.status || !strings.Contains(string(body), c.reason) {
					t.Errorf("page: %d %s, want %d and %q", resp.StatusCode, body, c.status, c.reason)
				}
			}
			if got, want := header.Get("Retry-After"), map[bool]string{true: "5"}[c.status == 503]; got != want {
				t.Errorf("Retry-After %q, want %q", got, want)
			}
			for _, secret := range []string{"127.0.0.1", "dial", "refused", "state:", "query:", "kafka", "decode", "garbage"} {
				if strings.Contains(string(body), secret) {
					t.Errorf("response shows %q: %s", secret, body)
				}
			}
			for _, w := range c.logged {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log does not hold %q:\n%s", w, log.String())
				}
			}
		})
	}
}

// TestAPIUnknownPath: what is not an API path or method is answered in
// JSON too (after the token), not with ServeMux's text/plain; the pages'
// paths keep the plain 404.
func TestAPIUnknownPath(t *testing.T) {
	e := newEnv(t, newMemoryStore(t), query.Config{Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	for _, c := range []struct {
		method, path string
		header       []string
		status       int
		reason       string // "" for a response that is not JSON
		allow        string
	}{
		{"GET", "/v1/nothing", auth, 404, "no API path /v1/nothing", ""},
		{"GET", "/v1/", auth, 404, "no API path /v1/", ""},
		{"GET", "/v1/top/extra", auth, 404, "no API path", ""},
		{"GET", "/v1/objects/", auth, 404, "no API path", ""},
		{"GET", "/v1/nothing", nil, 401, "missing or wrong token", ""},
		{"GET", "/v1/nothing?x=" + strings.Repeat("a", 9000), auth, 414, "longer than", ""},
		{"POST", "/v1/top", auth, 405, "method POST not allowed", "GET, HEAD"},
		{"DELETE", "/v1/objects", auth, 405, "method DELETE not allowed", "GET, HEAD"},
		{"GET", "/nothing", auth, 404, "", ""},
	} {
		t.Run(c.method+" "+c.path[:min(len(c.path), 20)], func(t *testing.T) {
			resp, body := raw(t, e, c.method, c.path, c.header...)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if got := resp.Header.Get("Allow"); got != c.allow {
				t.Errorf("Allow %q, want %q", got, c.allow)
			}
			if c.reason == "" {
				return
			}
			var eb query.ErrorBody
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if err := json.Unmarshal(body, &eb); err != nil || eb.Status != c.status || !strings.Contains(eb.Error, c.reason) {
				t.Errorf("body %s (%v), want status %d and %q", body, err, c.status, c.reason)
			}
		})
	}
}

// TestAPIToken: the token as a bearer token or as the Basic password,
// with the scheme in any case (RFC 9110 §11.1), and nothing else.
func TestAPIToken(t *testing.T) {
	e := newEnv(t, newMemoryStore(t), query.Config{Token: "s3cret"})
	basic := func(scheme, user, pw string) string {
		return scheme + " " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
	}
	for _, c := range []struct {
		auth   string
		status int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Bearer s3cre", 401},
		{"Bearer s3cret2", 401},
		{"Bearer ", 401},
		{"Token s3cret", 401},
		{"s3cret", 401},
		{"Bearers3cret", 401},
		{"Bearer s3cret", 200},
		{"bearer s3cret", 200},
		{"BEARER s3cret", 200},
		{"Bearer  s3cret", 200},
		{basic("Basic", "me", "s3cret"), 200},
		{basic("basic", "me", "s3cret"), 200},
		{basic("BASIC", "", "s3cret"), 200},
		{basic("Basic", "me", "wrong"), 401},
		{basic("Basic", "s3cret", ""), 401},
		{"Basic !!!", 401},
	} {
		t.Run(c.auth, func(t *testing.T) {
			var header []string
			if c.auth != "" {
				header = []string{"Authorization", c.auth}
			}
			hdr, _ := e.fetch(t, "/v1/top?limit=1", c.status, header...)
			if c.status == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("API without token: WWW-Authenticate %q", hdr.Get("WWW-Authenticate"))
			}
			// The pages: browsers without JavaScript send Basic auth with
			// the token as the password.
			resp, _ := raw(t, e, http.MethodGet, "/", header...)
			if resp.StatusCode != c.status {
				t.Errorf("page: status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("page without token: WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// slowStore is a state store whose reads wait until their context ends.
type slowStore struct{ *state.Memory }

func (s slowStore) Get(ctx context.Context, _ state.Partition, _ []string, dst [][]byte) ([][]byte, error) {
	<-ctx.Done()
	return dst, ctx.Err()
}

// TestAPITimeout: a request past Config.Timeout is answered 503 with
// Retry-After, as JSON on the API (Content-Type application/json, checked
// against api/openapi.yaml) and as plain text on the pages; without
// timeoutHeaders, http.TimeoutHandler's body went out sniffed as
// text/plain and without Retry-After.
func TestAPITimeout(t *testing.T) {
	obj := "http://a.example/x"
	qs, err := query.NewServer(query.Config{Timeout: 50 * time.Millisecond}, slowStore{newMemoryStore(t)},
		query.SinglePartition{Topic: stream.TopicObservations}, aggregate.DefaultConfig().Model, query.NewIndex(query.IndexConfig{}),
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, qs)
	header, body := e.fetch(t, "/v1/objects?url="+q(obj), http.StatusServiceUnavailable)
	var eb query.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error != "request timed out" || eb.Status != 503 {
		t.Errorf("body %s (%v), want the JSON timeout reason", body, err)
	}
	if ct, ra := header.Get("Content-Type"), header.Get("Retry-After"); ct != "application/json" || ra != "5" {
		t.Errorf("API timeout: Content-Type %q, Retry-After %q; want application/json and 5", ct, ra)
	}
	resp, page := raw(t, e, http.MethodGet, "/objects?url="+q(obj))
	if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		resp.Header.Get("Retry-After") != "5" || strings.TrimSpace(string(page)) != "request timed out" {
		t.Errorf("page timeout: %d %q %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), page)
	}
}
