package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// waitLimit bounds every wait for asynchronous progress; it is a failure
// guard, not a timing assertion.
const waitLimit = 60 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("STREAM_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

// testConfig returns a configuration with short group timings, so that
// rebalances in tests take well under a second.
func testConfig(c *kafkatest.Cluster, group string) stream.KafkaConfig {
	return stream.KafkaConfig{
		Brokers:           c.Addrs(),
		ClientID:          "stream-test",
		GroupID:           group,
		SessionTimeout:    3 * time.Second,
		HeartbeatInterval: 100 * time.Millisecond,
		RebalanceTimeout:  3 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		FetchMaxWait:      100 * time.Millisecond,
		RequestTimeout:    10 * time.Second,
		RetryBackoff:      50 * time.Millisecond,
		CommitInterval:    50 * time.Millisecond,
		Linger:            time.Millisecond,
	}
}

func newSink(t testing.TB, cfg stream.KafkaConfig, reg prometheus.Registerer) *stream.KafkaSink {
	t.Helper()
	s, err := stream.NewKafkaSink(cfg, testLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newSource(t testing.TB, cfg stream.KafkaConfig, topic string, reg prometheus.Registerer) *stream.KafkaSource {
	t.Helper()
	s, err := stream.NewKafkaSource(cfg, []string{topic}, testLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// runSource runs src.Run in a goroutine; the returned stop cancels it and
// returns Run's error.
func runSource(t testing.TB, src stream.Source, handle func(context.Context, stream.Claim) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx, handle) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(waitLimit):
				err = errors.New("Run did not return after cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitFor polls cond until it holds, failing t after waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// collector is a handler that seeks to a per-partition start offset
// (earliest by default) and records every fetched message.
type collector struct {
	mu     sync.Mutex
	start  map[int32]int64 // offset to seek to; absent: earliest
	msgs   []stream.Message
	claims []claimInfo
	ends   []error // Fetch errors that ended handlers
}

type claimInfo struct {
	partition  int32
	generation int64
}

func (c *collector) handle(ctx context.Context, cl stream.Claim) error {
	c.mu.Lock()
	c.claims = append(c.claims, claimInfo{cl.Partition(), cl.Generation()})
	off, ok := c.start[cl.Partition()]
	c.mu.Unlock()
	if !ok {
		off = -1
	}
	if err := cl.Seek(off); err != nil {
		return err
	}
	for {
		msgs, err := cl.Fetch(ctx, 100)
		if err != nil {
			c.mu.Lock()
			c.ends = append(c.ends, err)
			c.mu.Unlock()
			return err
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, msgs...)
		c.mu.Unlock()
		cl.MarkCommitted(msgs[len(msgs)-1].Offset + 1)
	}
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *collector) messages() []stream.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]stream.Message(nil), c.msgs...)
}

func keyedMessages(topic string, keys, perKey int) []stream.Message {
	var msgs []stream.Message
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			msgs = append(msgs, stream.Message{
				Topic: topic,
				Key:   []byte(fmt.Sprintf("object-%d", k)),
				Value: []byte(fmt.Sprintf("object-%d:%d", k, i)),
			})
		}
	}
	return msgs
}

// checkPerKeyOrder checks that every key lives in one partition, that its
// sequence numbers (value "key:seq") appear exactly once each in order, and
// returns the partition of each key.
func checkPerKeyOrder(t *testing.T, msgs []stream.Message, keys, perKey int) map[string]int32 {
	t.Helper()
	part := map[string]int32{}
	next := map[string]int{}
	for _, m := range msgs {
		k := string(m.Key)
		if p, ok := part[k]; ok && p != m.Partition {
			t.Fatalf("key %s in partitions %d and %d", k, p, m.Partition)
		}
		part[k] = m.Partition
		prefix, seqs, _ := strings.Cut(string(m.Value), ":")
		seq, err := strconv.Atoi(seqs)
		if err != nil || prefix != k {
			t.Fatalf("bad value %q for key %s", m.Value, k)
		}
		if seq != next[k] {
			t.Fatalf("key %s: got sequence %d, want %d", k, seq, next[k])
		}
		next[k]++
	}
	if len(next) != keys {
		t.Fatalf("saw %d keys, want %d", len(next), keys)
	}
	for k, n := range next {
		if n != perKey {
			t.Fatalf("key %s: %d messages, want %d", k, n, perKey)
		}
	}
	return part
}

func TestKafkaRoundTripOrderPerKey(t *testing.T) {
	const topic, keys, perKey = "observations", 20, 50
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 4}, kafkatest.Topic{Name: "reference", Partitions: 4})
	cfg := testConfig(c, "roundtrip")
	reg := prometheus.NewRegistry()
	sink := newSink(t, cfg, reg)
	ctx := context.Background()
	msgs := keyedMessages(topic, keys, perKey)
	// Several Write calls, to check order across calls too.
	for i := 0; i < len(msgs); i += 100 {
		if err := sink.Write(ctx, msgs[i:i+100]...); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricSum(t, reg, "changerate_kafka_messages_written_total"); got != float64(len(msgs)) {
		t.Errorf("messages written metric = %v, want %d", got, len(msgs))
	}

	// What the broker holds, read with franz-go.
	var stored []stream.Message
	for _, r := range c.ReadAll(t, topic) {
		stored = append(stored, stream.Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
	}
	part := checkPerKeyOrder(t, stored, keys, perKey)

	// Java-compatible partitioning: franz-go's murmur2 partitioner (the Java
	// client's algorithm) puts every key in the same partition.
	var ref []kafkatest.Record
	for k := 0; k < keys; k++ {
		ref = append(ref, kafkatest.Record{Key: []byte(fmt.Sprintf("object-%d", k)), Value: []byte("x")})
	}
	used := map[int32]bool{}
	for _, r := range c.Produce(t, "reference", ref...) {
		if part[string(r.Key)] != r.Partition {
			t.Errorf("key %s: kafka-go partition %d, Java/franz-go partition %d", r.Key, part[string(r.Key)], r.Partition)
		}
		used[r.Partition] = true
	}
	if len(used) < 2 {
		t.Errorf("20 keys landed in %d partition(s); the balancer does not spread keys", len(used))
	}

	// And what a source reads.
	src := newSource(t, cfg, topic, reg)
	col := &collector{}
	stop := runSource(t, src, col.handle)
	waitFor(t, "all messages", func() bool { return col.count() >= len(msgs) })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	got := col.messages()
	if len(got) != len(msgs) {
		t.Fatalf("source read %d messages, want %d", len(got), len(msgs))
	}
	part2 := checkPerKeyOrder(t, got, keys, perKey)
	for k, p := range part {
		if part2[k] != p {
			t.Errorf("key %s: source saw partition %d, broker has %d", k, part2[k], p)
		}
	}
	for _, m := range got {
		if m.Topic != topic || m.Time.IsZero() {
			t.Fatalf("message %+v: want topic %s and a timestamp", m, topic)
		}
	}
	// Committed offsets (lag monitoring) reach the end of each partition.
	bounds := c.Offsets(t, topic)
	committed := c.GroupOffsets(t, "roundtrip", topic)
	for p, b := range bounds {
		if committed[p] != b.End {
			t.Errorf("partition %d: committed %d, end %d", p, committed[p], b.End)
		}
	}
}

// metricSum sums the counter or gauge values of a metric family in reg.
func metricSum(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
