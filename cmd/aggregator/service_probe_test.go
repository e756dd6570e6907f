package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
)

// lockedBuffer is a bytes.Buffer safe for the aggregator's goroutines to
// write while the test reads it.
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

// freeAddr returns a free local TCP address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startService runs the aggregator in service mode until the test ends.
func startService(t *testing.T, stderr io.Writer, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("aggregator: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the aggregator did not stop within 60s of its cancellation")
		}
	})
}

// waitReadyz waits (at most 60s) until /readyz answers with status and a
// body containing want, and fails the test otherwise.
func waitReadyz(t *testing.T, addr string, status int, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, body := readyz(addr)
		if st == status && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q; want %d with %q", st, body, status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadinessWithoutKafka: with a broker that accepts connections and
// never answers, the aggregator joins no generation and /readyz is 503
// from its first answer on.
func TestReadinessWithoutKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	rs := redistest.Start(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	addr := freeAddr(t)
	startService(t, io.Discard, "--kafka-brokers="+silent.Addr().String(), "--create-topics=false", "--redis-addrs="+rs.Addr,
		"--redis-require-durable=false", "--http-addr="+addr, "--kafka-group=probe-silent", "--log-level=error")
	waitReadyz(t, addr, 503, "")
	if st, body := readyz(addr); st != 503 || !strings.Contains(body, "consumer-group generation") {
		t.Fatalf("/readyz with a silent broker: %d %q; want 503 naming the consumer-group generation", st, body)
	}
}

// TestRedisOutage: a running aggregator whose Redis goes down reports not
// ready (the store is unreachable) and keeps its group membership: no
// handler fails and no member rejoins (a rebalance storm before); when
// Redis is back, it is ready again and processes new input.
func TestRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka-protocol broker and a redis-server")
	}
	rs := redistest.Start(t, redistest.WithAOF())
	kc := kafkatest.Start(t, kafkatest.Topic{Name: "observations", Partitions: 4})
	addr := freeAddr(t)
	var logs lockedBuffer
	startService(t, &logs, "--kafka-brokers="+kc.Addr(), "--redis-addrs="+rs.Addr, "--http-addr="+addr,
		"--emit-interval=0", "--kafka-session-timeout=6s", "--kafka-heartbeat=500ms", "--kafka-group=probe-redis",
		"--idle-check=100ms", "--log-level=warn", "--log-format=json")
	waitReadyz(t, addr, 200, "owns observations/3")

	rs.Kill()
	waitReadyz(t, addr, 503, "state store unreachable")
	// Outlast several idle checks and claim retries while Redis is down.
	time.Sleep(2 * time.Second)
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, addr, 200, "owns observations/3")

	o, _ := json.Marshal(records.Observation{Object: "http://a.example/", Time: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		Kind: records.KindVisit, Changed: records.Unchanged})
	produced := kc.Produce(t, "observations", kafkatest.Record{Key: []byte("http://a.example/"), Value: o})
	p := state.Partition{Topic: "observations", ID: produced[0].Partition}
	cfg := newConfig()
	rc := cfg.redisConfig()
	rc.ExpiryEvents = state.ExpiryEventsOff
	store, err := state.NewRedisFromClient(rs.Client, rc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		snap, err := store.Snapshot(context.Background(), p)
		if err == nil && snap.Next == produced[0].Offset+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %v: stored %+v (err %v), want next offset %d", p, snap, err, produced[0].Offset+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "rejoining the group"); n > 0 {
		t.Errorf("%d handlers failed and rejoined the group during the Redis outage:\n%s", n, logs.String())
	}
}

// TestRefusedStoreCreatesNoTopics: an aggregator that refuses its Redis
// (not durable) does so before creating the topics on the brokers.
func TestRefusedStoreCreatesNoTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka-protocol broker and a redis-server")
	}
	rs := redistest.Start(t) // no AOF
	kc := kafkatest.Start(t)
	err := run(context.Background(), []string{"--kafka-brokers=" + kc.Addr(), "--redis-addrs=" + rs.Addr, "--http-addr=", "--kafka-group=refused"},
		strings.NewReader(""), io.Discard, io.Discard)
	if !errors.Is(err, state.ErrNotDurable) {
		t.Fatalf("err = %v, want ErrNotDurable", err)
	}
	for _, topic := range topicSpecs(ptr(newConfig())) {
		if n := kc.Partitions(t, topic.Name); n != 0 {
			t.Errorf("topic %s was created (%d partitions) by an aggregator that refused its store", topic.Name, n)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRedisClientLogIsStructured: with Redis down at start, go-redis's own
// lines (its connection pool's dial failures) go through the aggregator's
// logger, not as "redis: 2026/..." lines in the middle of the JSON log.
// It runs main (which installs the logger) in a child process.
func TestRedisClientLogIsStructured(t *testing.T) {
	if os.Getenv("AGGREGATOR_TEST_MAIN") == "1" {
		os.Args = append([]string{"aggregator"}, strings.Fields(os.Getenv("AGGREGATOR_TEST_ARGS"))...)
		main()
		return
	}
	down := freeAddr(t) // nothing listens
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedisClientLogIsStructured$")
	cmd.Env = append(os.Environ(), "AGGREGATOR_TEST_MAIN=1", "AGGREGATOR_TEST_ARGS=--kafka-brokers=127.0.0.1:1 --create-topics=false "+
		"--redis-addrs="+down+" --http-addr= --log-format=json --log-level=debug")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	routed := false
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(line, "aggregator: ") { // the error main prints
			continue
		}
		var rec struct {
			Msg, Component string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON log record: %q", line)
			continue
		}
		if rec.Component == "redis-client" && strings.Contains(rec.Msg, "failed to dial") {
			routed = true
		}
	}
	if !routed {
		t.Errorf("no record of go-redis's dial failures in the log:\n%s", stderr.String())
	}
}
