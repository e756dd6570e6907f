package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// TestRedisDownTopAnswers runs the aggregator binary in service mode on a
// Kafka-protocol broker and a real redis-server, then stops the
// redis-server: /v1/top and / answer 200 from the in-memory index (issue
// 32: both answered 503, reading every listed object's state), with the
// same ranking as before, while /v1/objects, which reads the object's
// state, answers 503.
func TestRedisDownTopAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts a Kafka-protocol broker and a redis-server")
	}
	bin := buildAggregator(t)
	rs := redistest.Start(t)
	kc := kafkatest.Start(t, kafkatest.Topic{Name: "observations", Partitions: 2})
	addr := freeAddr(t)

	// 6 objects on 2 sites, visited daily, changed at every other visit.
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var recs []kafkatest.Record
	for i := 0; i <= 10; i++ {
		for k := 0; k < 6; k++ {
			o := records.Observation{Object: fmt.Sprintf("http://s%d.example/p%d", k%2, k), Time: t0.Add(time.Duration(i) * 24 * time.Hour),
				Kind: records.KindVisit, Changed: records.Unchanged}
			if i%2 == 1 {
				o.Changed = records.Changed
			}
			b, _ := json.Marshal(o)
			recs = append(recs, kafkatest.Record{Key: []byte(o.Object), Value: b})
		}
	}
	kc.Produce(t, "observations", recs...)

	cmd := exec.Command(bin, "--kafka-brokers="+kc.Addr(), "--redis-addrs="+rs.Addr, "--http-addr="+addr,
		"--emit-interval=0", "--kafka-session-timeout=6s", "--kafka-heartbeat=500ms", "--log-level=warn",
		"--kafka-group=redis-down-test", "--redis-require-durable=false", "--drain-timeout=2s")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("the aggregator did not stop within 60s of SIGTERM")
		}
	})

	client := &http.Client{Timeout: 20 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var before query.TopResult
	for deadline := time.Now().Add(90 * time.Second); ; {
		// Every object's last estimate (11 visits) indexed: the ranking
		// puts the objects whose latest record is older first, so no one
		// position tells.
		if st, body := get("/v1/top?limit=100"); st == 200 && json.Unmarshal([]byte(body), &before) == nil &&
			len(before.Objects) == 6 && allObserved(before, 11) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the aggregator exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the aggregator did not publish the 6 estimates: %d ranked\n%s", len(before.Objects), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, _ := get("/v1/objects?url=" + url.QueryEscape("http://s0.example/p0")); st != 200 {
		t.Fatalf("/v1/objects with Redis up: %d", st)
	}

	if err := rs.Stop(); err != nil {
		t.Fatal(err)
	}
	st, body := get("/v1/top?limit=100")
	var after query.TopResult
	if st != 200 || json.Unmarshal([]byte(body), &after) != nil {
		t.Fatalf("/v1/top with Redis stopped: %d %s", st, body)
	}
	if a, b := mustJSON(t, after), mustJSON(t, before); a != b {
		t.Errorf("/v1/top with Redis stopped:\n%s\nwith Redis up:\n%s", a, b)
	}
	st, body = get("/")
	if st != 200 || !strings.Contains(body, "http://s1.example/p1") {
		t.Errorf("/ with Redis stopped: %d\n%s", st, body)
	}
	if st, body := get("/v1/objects?url=" + url.QueryEscape("http://s0.example/p0")); st != http.StatusServiceUnavailable ||
		!strings.Contains(body, "state store unavailable") {
		t.Errorf("/v1/objects with Redis stopped: %d %s, want 503 (the object's state is in Redis)", st, body)
	}
	select {
	case err := <-exited:
		t.Fatalf("the aggregator exited: %v\n%s", err, stderr.String())
	default:
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// allObserved reports whether every ranked record has n observations.
func allObserved(r query.TopResult, n int64) bool {
	for _, o := range r.Objects {
		if o.Observations != n {
			return false
		}
	}
	return true
}
