package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// freePort returns a port of 127.0.0.1 on which nothing listens (for now).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// kafkaSink returns a direct-mode KafkaSink to addrs that gives up quickly,
// closed by t.Cleanup.
func kafkaSink(t *testing.T, addrs ...string) *stream.KafkaSink {
	t.Helper()
	s, err := stream.NewKafkaSink(stream.KafkaConfig{Brokers: addrs, WriteAttempts: 2, RetryBackoff: 10 * time.Millisecond,
		RequestTimeout: 2 * time.Second, MetadataInterval: 100 * time.Millisecond}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eventually waits for cond; the deadline only guards against a hung test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// followUntil runs a follow-mode Run of cfg on sink in the background; the
// returned function cancels it and returns its result.
func followUntil(t *testing.T, cfg Config, sink stream.Sink, reg *prometheus.Registry) func() (Summary, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Run(ctx, cfg, sink, nil, reg)
		done <- result{sum, err}
	}()
	t.Cleanup(cancel)
	return func() (Summary, error) {
		select {
		case r := <-done: // ended by itself: the failure under test
			cancel()
			return r.sum, fmt.Errorf("Run ended before it was cancelled: %w", r.err)
		default:
		}
		cancel()
		r := <-done
		return r.sum, r.err
	}
}

// TestFollowSurvivesKafkaDown: in follow mode a sink write that fails
// because Kafka is unreachable (here: not started yet) is retried with
// backoff until the broker answers, counted in write_retries_total; then
// the observations are written and checkpointed, and Run ends cleanly on
// cancellation.
func TestFollowSurvivesKafkaDown(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	for i := 0; i < 5; i++ {
		appendTo(t, p, squidLine(fmt.Sprint(i)))
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	reg := prometheus.NewRegistry()
	cp := filepath.Join(dir, "cp.json")
	cfg := Config{Format: "squid", Paths: []string{p}, Follow: true, PollInterval: 5 * time.Millisecond, CheckpointPath: cp,
		CheckpointInterval: -1, ProgressInterval: -1, RetryBackoff: 20 * time.Millisecond}
	RegisterMetrics(reg, "squid")
	if v := metricValue(t, reg, "changerate_ingest_write_retries_total"); v != 0 {
		t.Fatalf("write_retries_total starts at %v", v)
	}
	stop := followUntil(t, cfg, kafkaSink(t, addr), reg)
	eventually(t, "3 retries", func() bool { return metricValue(t, reg, "changerate_ingest_write_retries_total") >= 3 })
	if _, err := os.Stat(cp); err == nil {
		if b, _ := os.ReadFile(cp); strings.Contains(string(b), `"offset":`) && !strings.Contains(string(b), `"offset":0`) {
			t.Errorf("checkpoint moved before anything was acknowledged: %s", b)
		}
	}
	c := kafkatest.StartWith(t, kafkatest.Options{Topics: []kafkatest.Topic{{Name: stream.TopicObservations, Partitions: 1},
		{Name: stream.TopicDeadLetter, Partitions: 1}}, Extra: []kfake.Opt{kfake.Ports(port)}})
	eventually(t, "5 observations in Kafka", func() bool { return len(c.ReadAll(t, stream.TopicObservations)) >= 5 })
	appendTo(t, p, squidLine("5"))
	eventually(t, "the 6th observation", func() bool { return len(c.ReadAll(t, stream.TopicObservations)) >= 6 })
	sum, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Written != 6 || !sum.Interrupted {
		t.Errorf("summary: written %d, interrupted %v; want 6, true", sum.Written, sum.Interrupted)
	}
	cpf, err := loadCheckpoint(cp, "squid")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(p)
	fi, _ := os.Stat(p)
	if pos, ok := cpf.get(abs); !ok || pos.Offset != fi.Size() {
		t.Errorf("checkpoint %+v (found %v), want offset %d", pos, ok, fi.Size())
	}
}

// TestRejectedObservationIsDeadLettered: an observation that the topic
// refuses permanently (larger than its max.message.bytes) is replaced by a
// dead letter with reason output_rejected (key = position, naming topic,
// key, size and reason, the start of the value), counted; the other
// observations are written, the run succeeds and checkpoints, and a rerun
// writes nothing again. Parse rejects' dead letters have their position
// as key too.
func TestRejectedObservationIsDeadLettered(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: stream.TopicDeadLetter, Partitions: 1})
	c.CreateTopic(t, stream.TopicObservations, 1, "max.message.bytes", "4000")
	dir := t.TempDir()
	var in strings.Builder
	var after35 int // offset just after the long line
	for i := 0; i < 40; i++ {
		if i == 35 {
			in.WriteString(squidLine(strings.Repeat("x", 6000)))
			after35 = in.Len()
			continue
		}
		in.WriteString(squidLine(fmt.Sprint(i)))
	}
	in.WriteString("garbage\n")
	p := writeFile(t, dir, "a.log", in.String(), false)
	cp := filepath.Join(dir, "cp.json")
	reg := prometheus.NewRegistry()
	cfg := Config{Format: "squid", Paths: []string{p}, CheckpointPath: cp, ProgressInterval: -1, BatchSize: 100}
	sum, err := Run(context.Background(), cfg, kafkaSink(t, c.Addrs()...), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Written != 39 || sum.OutputRejected != 1 {
		t.Errorf("written %d, rejected %d; want 39, 1", sum.Written, sum.OutputRejected)
	}
	if v := metricValue(t, reg, "changerate_ingest_rejects_total", "squid", ReasonOutputRejected); v != 1 {
		t.Errorf("rejects_total{output_rejected} = %v", v)
	}
	if n := len(c.ReadAll(t, stream.TopicObservations)); n != 39 {
		t.Errorf("%d observations in Kafka, want 39", n)
	}
	dls := c.ReadAll(t, stream.TopicDeadLetter)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dls))
	}
	var rejected bool
	for _, r := range dls {
		var dl records.DeadLetter
		if err := json.Unmarshal(r.Value, &dl); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != dl.Position || dl.Position == "" {
			t.Errorf("dead letter key %q, position %q", r.Key, dl.Position)
		}
		if dl.Reason != ReasonOutputRejected {
			continue
		}
		rejected = true
		if dl.Format != stream.TopicObservations || !strings.Contains(dl.Error, "MESSAGE_TOO_LARGE") ||
			!strings.Contains(dl.Error, "topic observations") || !strings.Contains(dl.Error, "bytes") ||
			len(dl.Input) != records.MaxRejectedShown || !strings.HasSuffix(dl.Position, fmt.Sprintf("#%d", after35)) {
			t.Errorf("dead letter %+v", dl)
		}
	}
	if !rejected {
		t.Error("no output_rejected dead letter")
	}
	sum, err = Run(context.Background(), cfg, kafkaSink(t, c.Addrs()...), nil, nil)
	if err != nil || sum.Written != 0 || len(c.ReadAll(t, stream.TopicObservations)) != 39 {
		t.Errorf("rerun: %v, written %d", err, sum.Written)
	}
}

// rejectAll refuses every message permanently.
type rejectAll struct{ writes int }

func (s *rejectAll) Write(_ context.Context, msgs ...stream.Message) error {
	s.writes++
	rej := &stream.RejectedError{}
	for i := range msgs {
		rej.Rejected = append(rej.Rejected, stream.Rejection{Index: i, Reason: "POLICY_VIOLATION", Err: errors.New("refused")})
	}
	return rej
}
func (s *rejectAll) Close() error { return nil }

// TestRejectedDeadLetterStops: a dead letter that the sink refuses cannot
// be replaced: Run stops with an error saying so.
func TestRejectedDeadLetterStops(t *testing.T) {
	p := writeFile(t, t.TempDir(), "a.log", squidLine("1"), false)
	_, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, ProgressInterval: -1}, &rejectAll{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "dead letter") || !errors.Is(err, stream.ErrRejected) {
		t.Fatalf("err = %v", err)
	}
}

// TestMissingTopic: a one-shot run to a topic that does not exist fails
// naming it and the remedy; in follow mode the run waits for it (the
// aggregator may be starting) and goes on once it exists.
func TestMissingTopic(t *testing.T) {
	c := kafkatest.Start(t)
	p := writeFile(t, t.TempDir(), "a.log", squidLine("1"), false)
	_, err := Run(context.Background(), Config{Format: "squid", Paths: []string{p}, ProgressInterval: -1}, kafkaSink(t, c.Addrs()...), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "topic "+stream.TopicObservations+" does not exist") ||
		!strings.Contains(err.Error(), "CREATE_TOPICS=true") {
		t.Fatalf("err = %v", err)
	}
	reg := prometheus.NewRegistry()
	RegisterMetrics(reg, "squid")
	stop := followUntil(t, Config{Format: "squid", Paths: []string{p}, Follow: true, PollInterval: 5 * time.Millisecond,
		ProgressInterval: -1, RetryBackoff: 20 * time.Millisecond}, kafkaSink(t, c.Addrs()...), reg)
	eventually(t, "a retry", func() bool { return metricValue(t, reg, "changerate_ingest_write_retries_total") >= 1 })
	c.CreateTopic(t, stream.TopicObservations, 1)
	eventually(t, "the observation", func() bool { return len(c.ReadAll(t, stream.TopicObservations)) == 1 })
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
}

// downSink fails every write, recording when each attempt was made.
type downSink struct{ attempts []time.Time }

func (s *downSink) Write(context.Context, ...stream.Message) error {
	s.attempts = append(s.attempts, time.Now())
	return errors.New("broker down")
}
func (s *downSink) Close() error { return nil }

// A one-shot run retries a failing write for WriteRetryTimeout, as the
// warning says ("for up to 1.5s"), not until the next backoff wait would
// pass it: with waits 0.3, 0.6, 1.2 s (±50 % jitter) it gave up after the
// second wait, at 0.45-1.35 s. The last attempt is made at or after the
// timeout (a lower bound of the retry semantics, not a speed assertion).
func TestOneShotRetriesForTheWholeTimeout(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	var logs strings.Builder
	down := &downSink{}
	s := NewDeliverySink(down, Config{Format: "squid", RetryBackoff: 300 * time.Millisecond, WriteRetryTimeout: timeout},
		slog.New(slog.NewTextHandler(&logs, nil)), nil)
	start := time.Now()
	err := s.Write(context.Background(), stream.Message{Topic: "observations", Key: []byte("k"), Value: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "broker down") {
		t.Fatalf("err = %v", err)
	}
	last := down.attempts[len(down.attempts)-1]
	if last.Sub(start) < timeout {
		t.Fatalf("gave up after %v (%d attempts), before the %v the warning promised: %s", last.Sub(start), len(down.attempts), timeout, logs.String())
	}
	if !strings.Contains(logs.String(), "for up to 1.5s") || !strings.Contains(err.Error(), "WRITE_RETRY_TIMEOUT, 1.5s") {
		t.Fatalf("log %s\nerr %v", logs.String(), err)
	}
}
