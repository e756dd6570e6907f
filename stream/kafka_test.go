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
	"github.com/twmb/franz-go/pkg/kmsg"
	"sync/atomic"
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
	}
}

// sinkModes are the two KafkaSink modes (see KafkaConfig.Linger).
var sinkModes = []struct {
	name   string
	linger time.Duration
}{{"direct", 0}, {"batched", time.Millisecond}}

// forEachSinkMode runs f as a subtest per sink mode.
func forEachSinkMode(t *testing.T, f func(t *testing.T, linger time.Duration)) {
	for _, m := range sinkModes {
		t.Run(m.name, func(t *testing.T) { f(t, m.linger) })
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

// readSource runs a source on topic from the earliest offsets until it has
// read n messages, stops it (Run must return context.Canceled) and returns
// them; it fails t on more or fewer.
func readSource(t testing.TB, cfg stream.KafkaConfig, topic string, reg prometheus.Registerer, n int) []stream.Message {
	t.Helper()
	col := &collector{}
	stop := runSource(t, newSource(t, cfg, topic, reg), col.handle)
	waitFor(t, "all messages", func() bool { return col.count() >= n })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	got := col.messages()
	if len(got) != n {
		t.Fatalf("source read %d messages, want %d", len(got), n)
	}
	return got
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
	if err := cl.SeekTo(off); err != nil {
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

func TestKafkaRoundTripOrderPerKey(t *testing.T) { forEachSinkMode(t, testRoundTripOrderPerKey) }

func testRoundTripOrderPerKey(t *testing.T, linger time.Duration) {
	const topic, keys, perKey = "observations", 20, 50
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 4}, kafkatest.Topic{Name: "reference", Partitions: 4})
	cfg := testConfig(c, "roundtrip")
	cfg.Linger = linger
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
	got := readSource(t, cfg, topic, reg, len(msgs))
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

	// A later generation reports the committed offsets (GroupCommitter).
	src2 := newSource(t, cfg, topic, nil)
	var mu sync.Mutex
	seen := map[int32]int64{}
	stop2 := runSource(t, src2, func(ctx context.Context, cl stream.Claim) error {
		off, ok := cl.(stream.GroupCommitter).GroupOffset()
		if !ok {
			off = -100
		}
		mu.Lock()
		seen[cl.Partition()] = off
		mu.Unlock()
		<-ctx.Done()
		return nil
	})
	waitFor(t, "claims", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == len(bounds) })
	_ = stop2()
	for p, b := range bounds {
		if seen[p] != b.End {
			t.Errorf("partition %d: GroupOffset %d, want %d", p, seen[p], b.End)
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

// owners tracks which member handles each partition right now, and fails
// the test if two handlers of one partition overlap.
type owners struct {
	t       *testing.T
	mu      sync.Mutex
	current map[int32]string
	gens    map[string][]claimInfo // per member, every claim ever started
	ends    map[string][]error     // per member, the errors handlers returned
}

func newOwners(t *testing.T) *owners {
	return &owners{t: t, current: map[int32]string{}, gens: map[string][]claimInfo{}, ends: map[string][]error{}}
}

func (o *owners) handler(member string) func(context.Context, stream.Claim) error {
	return func(ctx context.Context, cl stream.Claim) error {
		p := cl.Partition()
		o.mu.Lock()
		if other, ok := o.current[p]; ok {
			o.t.Errorf("partition %d claimed by %s (generation %d) while %s still handles it", p, member, cl.Generation(), other)
		}
		o.current[p] = member
		o.gens[member] = append(o.gens[member], claimInfo{p, cl.Generation()})
		o.mu.Unlock()
		err := func() error {
			if err := cl.SeekTo(-1); err != nil {
				return err
			}
			for {
				if _, err := cl.Fetch(ctx, 1000); err != nil {
					return err
				}
			}
		}()
		o.mu.Lock()
		delete(o.current, p)
		o.ends[member] = append(o.ends[member], err)
		o.mu.Unlock()
		return err
	}
}

// latest returns the member's highest generation and its partitions in it.
func (o *owners) latest(member string) (int64, map[int32]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var g int64 = -1
	for _, c := range o.gens[member] {
		g = max(g, c.generation)
	}
	ps := map[int32]bool{}
	for _, c := range o.gens[member] {
		if c.generation == g {
			ps[c.partition] = true
		}
	}
	return g, ps
}

func (o *owners) active() map[int32]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int32]string{}
	for p, m := range o.current {
		out[p] = m
	}
	return out
}

func TestKafkaGroupTwoMembersShareFourPartitions(t *testing.T) {
	const topic = "observations"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 4})
	var recs []kafkatest.Record
	for i := 0; i < 200; i++ {
		recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")})
	}
	c.Produce(t, topic, recs...)
	cfg := testConfig(c, "share")
	o := newOwners(t)

	regA := prometheus.NewRegistry()
	srcA := newSource(t, cfg, topic, regA)
	if g, n := srcA.Status(); g != 0 || n != 0 {
		t.Errorf("Status before Run = %d, %d", g, n)
	}
	stopA := runSource(t, srcA, o.handler("A"))
	waitFor(t, "A owns all 4 partitions", func() bool { return len(o.active()) == 4 })
	g1, psA := o.latest("A")
	if len(psA) != 4 {
		t.Fatalf("A alone owns %v in generation %d, want 4 partitions", psA, g1)
	}
	if got := metricSum(t, regA, "changerate_kafka_owned_partitions"); got != 4 {
		t.Errorf("owned partitions metric = %v, want 4", got)
	}
	if g, n := srcA.Status(); g != g1 || n != 4 {
		t.Errorf("A.Status() = %d, %d; want %d, 4", g, n, g1)
	}

	stopB := runSource(t, newSource(t, cfg, topic, nil), o.handler("B"))
	waitFor(t, "A and B share the partitions", func() bool {
		gA, pA := o.latest("A")
		gB, pB := o.latest("B")
		act := o.active()
		return gA == gB && gA > g1 && len(pA) == 2 && len(pB) == 2 && len(act) == 4
	})
	g2, pA := o.latest("A")
	_, pB := o.latest("B")
	for p := range pA {
		if pB[p] {
			t.Errorf("partition %d assigned to both members in generation %d", p, g2)
		}
	}
	// A's first-generation handlers ended with ErrRevoked.
	o.mu.Lock()
	endsA := append([]error(nil), o.ends["A"]...)
	o.mu.Unlock()
	if len(endsA) != 4 {
		t.Errorf("A's handlers ended %d times after the rebalance, want 4", len(endsA))
	}
	for _, err := range endsA {
		if !errors.Is(err, stream.ErrRevoked) {
			t.Errorf("A's revoked handler got %v, want ErrRevoked", err)
		}
	}

	// B leaves: A gets all partitions back in a later generation.
	if err := stopB(); !errors.Is(err, context.Canceled) {
		t.Fatalf("B's Run returned %v", err)
	}
	waitFor(t, "A owns all partitions again", func() bool {
		g, ps := o.latest("A")
		return g > g2 && len(ps) == 4 && len(o.active()) == 4
	})
	// B left without rejoining first: exactly one more rebalance.
	if g3, _ := o.latest("A"); g3 != g2+1 {
		t.Errorf("generation after B left: %d, want %d (B rejoined before leaving?)", g3, g2+1)
	}
	if err := stopA(); !errors.Is(err, context.Canceled) {
		t.Fatalf("A's Run returned %v", err)
	}
	if act := o.active(); len(act) != 0 {
		t.Errorf("handlers still active after Run returned: %v", act)
	}
	if g, n := srcA.Status(); g != 0 || n != 0 {
		t.Errorf("Status after Run = %d, %d", g, n)
	}
}

// fetchUntil seeks cl to from and fetches until it has seen offset last.
func fetchUntil(ctx context.Context, cl stream.Claim, from, last int64) ([]stream.Message, error) {
	if err := cl.SeekTo(from); err != nil {
		return nil, err
	}
	var out []stream.Message
	for len(out) == 0 || out[len(out)-1].Offset < last {
		msgs, err := cl.Fetch(ctx, 7) // small max: exercises buffering
		if err != nil {
			return out, err
		}
		if len(msgs) == 0 || len(msgs) > 7 {
			return out, fmt.Errorf("Fetch returned %d messages, want 1..7", len(msgs))
		}
		out = append(out, msgs...)
	}
	return out, nil
}

func TestKafkaSeek(t *testing.T) {
	const topic = "seek"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 1})
	var recs []kafkatest.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, kafkatest.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	c.ProduceTo(t, topic, 0, recs...)
	c.DeleteRecords(t, topic, 0, 10) // log start offset 10

	cases := []struct {
		name      string
		seek      int64
		wantFirst int64
		wantFatal bool
	}{
		{"stored offset", 37, 37, false},
		{"log start", 10, 10, false},
		{"last", 99, 99, false},
		{"negative means earliest", -1, 10, false},
		{"earliest constant", -2, 10, false},
		{"below log start", 9, 0, true},
		{"beyond high watermark", 101, 0, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, testConfig(c, fmt.Sprint("seek-", i)), topic, nil)
			type result struct {
				msgs []stream.Message
				err  error
			}
			res := make(chan result, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runErrc := make(chan error, 1)
			go func() {
				runErrc <- src.Run(ctx, func(ctx context.Context, cl stream.Claim) error {
					msgs, err := fetchUntil(ctx, cl, tc.seek, 99)
					res <- result{msgs, err}
					return err
				})
			}()
			var r result
			select {
			case r = <-res:
			case <-time.After(waitLimit):
				t.Fatal("no result")
			}
			if !tc.wantFatal {
				cancel() // a fatal error stops Run by itself
			}
			var runErr error
			select {
			case runErr = <-runErrc:
			case <-time.After(waitLimit):
				t.Fatal("Run did not return")
			}
			if tc.wantFatal {
				if !errors.Is(r.err, stream.ErrFatal) {
					t.Fatalf("Fetch error %v, want ErrFatal", r.err)
				}
				if !errors.Is(runErr, stream.ErrFatal) {
					t.Fatalf("Run returned %v, want the fatal error", runErr)
				}
				if len(r.msgs) != 0 {
					t.Fatalf("got %d messages before the fatal error", len(r.msgs))
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if !errors.Is(runErr, context.Canceled) {
				t.Fatalf("Run returned %v", runErr)
			}
			for j, m := range r.msgs {
				want := tc.wantFirst + int64(j)
				if m.Offset != want || string(m.Value) != strconv.Itoa(int(want)) || m.Partition != 0 {
					t.Fatalf("message %d: offset %d value %q, want offset and value %d", j, m.Offset, m.Value, want)
				}
			}
			if n := int64(len(r.msgs)); n != 100-tc.wantFirst {
				t.Fatalf("got %d messages, want %d", n, 100-tc.wantFirst)
			}
		})
	}
}

// pauseFirstMember intercepts the group's heartbeats: the first member seen
// is "A"; while the returned flag is set, A's heartbeats are answered "OK"
// without reaching the coordinator, as if A were paused (SIGSTOP) while
// believing itself alive, so its session expires and the group rebalances
// without it. memberA holds A's member ID once A has heart-beaten.
func pauseFirstMember(c *kafkatest.Cluster) (paused *atomic.Bool, memberA *atomic.Value) {
	memberA, paused = new(atomic.Value), new(atomic.Bool)
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		hb := req.(*kmsg.HeartbeatRequest)
		memberA.CompareAndSwap(nil, hb.MemberID)
		if paused.Load() && hb.MemberID == memberA.Load() {
			kf.KeepControl()
			return hb.ResponseKind(), nil, true
		}
		return nil, nil, false
	})
	return paused, memberA
}
