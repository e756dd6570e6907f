package stream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

func TestKafkaSinkClosed(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 1})
	sink := newSink(t, testConfig(c, "g"), nil)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := sink.Write(context.Background(), stream.Message{Topic: "t"}); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
}

// A Write larger than BatchSize and BatchBytes is split into several
// requests per partition, in order.
func TestKafkaSinkSplitsLargeWrites(t *testing.T) {
	forEachSinkMode(t, func(t *testing.T, linger time.Duration) {
		c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 2})
		cfg := testConfig(c, "g")
		cfg.Linger = linger
		cfg.BatchSize = 7
		cfg.BatchBytes = 500
		sink := newSink(t, cfg, nil)
		msgs := keyedMessages("t", 3, 40)
		if err := sink.Write(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
		var stored []stream.Message
		for _, r := range c.ReadAll(t, "t") {
			stored = append(stored, stream.Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		}
		checkPerKeyOrder(t, stored, 3, 40)
	})
}

func TestKafkaSinkRejectsMessageWithoutTopic(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 1})
	sink := newSink(t, testConfig(c, "g"), nil)
	if err := sink.Write(context.Background(), stream.Message{Value: []byte("x")}); err == nil {
		t.Fatal("Write without a topic succeeded")
	}
}

func TestKafkaSourceCloseStopsRun(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 2})
	src := newSource(t, testConfig(c, "close"), "t", nil)
	o := newOwners(t)
	errc := make(chan error, 1)
	go func() { errc <- src.Run(context.Background(), o.handler("A")) }()
	waitFor(t, "claims", func() bool { return len(o.active()) == 2 })
	if err := src.Run(context.Background(), o.handler("again")); err == nil {
		t.Fatal("a second concurrent Run succeeded")
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Run after Close returned %v, want ErrClosed", err)
	}
	if act := o.active(); len(act) != 0 {
		t.Fatalf("handlers still running after Run returned: %v", act)
	}
	if err := src.Run(context.Background(), o.handler("B")); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Run on a closed source: %v, want ErrClosed", err)
	}
}

// A handler error that is not fatal ends the generation; the member
// rejoins and the partition is handled again in a later generation, from
// the offset the handler seeks to.
func TestKafkaHandlerErrorRejoins(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 2})
	c.ProduceTo(t, "t", 0, kafkatest.Record{Value: []byte("a")}, kafkatest.Record{Value: []byte("b")})
	src := newSource(t, testConfig(c, "rejoin"), "t", nil)
	var mu sync.Mutex
	var calls []claimInfo
	failed := false
	second := make(chan []stream.Message, 1)
	stop := runSource(t, src, func(ctx context.Context, cl stream.Claim) error {
		mu.Lock()
		calls = append(calls, claimInfo{cl.Partition(), cl.Generation()})
		fail := cl.Partition() == 0 && !failed
		failed = failed || fail
		mu.Unlock()
		if err := cl.SeekTo(-1); err != nil {
			return err
		}
		msgs, err := cl.Fetch(ctx, 10)
		if err != nil {
			return err
		}
		if fail {
			return errors.New("transient failure")
		}
		if cl.Partition() == 0 {
			second <- msgs
		}
		<-ctx.Done()
		return ctx.Err()
	})
	var msgs []stream.Message
	select {
	case msgs = <-second:
	case <-time.After(waitLimit):
		t.Fatal("partition 0 was not handled again after the error")
	}
	if len(msgs) != 2 || string(msgs[0].Value) != "a" {
		t.Fatalf("re-handled partition 0 read %v", msgs)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v (a non-fatal handler error must not stop Run)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var g0 []int64
	for _, ci := range calls {
		if ci.partition == 0 {
			g0 = append(g0, ci.generation)
		}
	}
	if len(g0) != 2 || g0[1] <= g0[0] {
		t.Fatalf("partition 0 handled in generations %v, want two increasing", g0)
	}
}

// The lag gauge is the high watermark minus the fetched position, per
// partition. With one record per fetch, the fetcher runs exactly two
// fetches ahead of a handler that holds on to its first record (one
// response buffered, one in flight that cannot be delivered), so the lag
// settles at N-3; after the handler read everything it is 0.
func TestKafkaLagMetric(t *testing.T) {
	const n = 20
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 1})
	for i := 0; i < n; i++ { // one batch per record
		c.ProduceTo(t, "t", 0, kafkatest.Record{Value: []byte(strconv.Itoa(i))})
	}
	cfg := testConfig(c, "lag")
	cfg.FetchMaxBytes = 1 // a fetch returns one (the first) batch
	reg := prometheus.NewRegistry()
	src := newSource(t, cfg, "t", reg)
	gotOne, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	runSource(t, src, func(ctx context.Context, cl stream.Claim) error {
		err := func() error {
			if err := cl.SeekTo(0); err != nil {
				return err
			}
			msgs, err := cl.Fetch(ctx, 100)
			if err != nil {
				return err
			}
			if len(msgs) != 1 {
				return fmt.Errorf("fetched %d messages, want 1", len(msgs))
			}
			close(gotOne)
			<-release
			for next := int64(1); next < n; {
				msgs, err := cl.Fetch(ctx, 100)
				if err != nil {
					return err
				}
				if msgs[0].Offset != next {
					return fmt.Errorf("got offset %d, want %d", msgs[0].Offset, next)
				}
				next = msgs[len(msgs)-1].Offset + 1
			}
			return nil
		}()
		done <- err
		<-ctx.Done()
		return err
	})
	select {
	case <-gotOne:
	case err := <-done:
		t.Fatal(err)
	}
	waitFor(t, "lag N-3", func() bool { return metricSum(t, reg, "changerate_kafka_consumer_lag_messages") == n-3 })
	if got := metricSum(t, reg, "changerate_kafka_messages_read_total"); got != 3 {
		t.Errorf("records fetched while the handler waits: %v, want 3", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if lag := metricSum(t, reg, "changerate_kafka_consumer_lag_messages"); lag != 0 {
		t.Errorf("lag after reading everything: %v, want 0", lag)
	}
	if got := metricSum(t, reg, "changerate_kafka_owned_partitions"); got != 1 {
		t.Errorf("owned partitions: %v, want 1", got)
	}
}

// A source started before its topic exists idles (no rejoin storm) and
// takes the partitions once the topic is created; added partitions are
// picked up the same way.
func TestKafkaSourceTopicCreatedLater(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(c, "late")
	cfg.MetadataInterval = 50 * time.Millisecond
	reg := prometheus.NewRegistry()
	o := newOwners(t)
	stop := runSource(t, newSource(t, cfg, "late", reg), o.handler("A"))
	waitFor(t, "the first generation", func() bool { return metricSum(t, reg, "changerate_kafka_group_generations_total") >= 1 })
	// Several metadata intervals without the topic.
	for i := 0; i < 5; i++ {
		c.Partitions(t, "late")
		time.Sleep(cfg.MetadataInterval)
	}
	if n := metricSum(t, reg, "changerate_kafka_group_generations_total"); n != 1 {
		t.Fatalf("%v generations while the topic is missing, want 1 (no rejoin loop)", n)
	}
	c.CreateTopic(t, "late", 3)
	waitFor(t, "3 claims", func() bool { return len(o.active()) == 3 })
	if n := metricSum(t, reg, "changerate_kafka_group_generations_total"); n != 2 {
		t.Errorf("%v generations after the topic appeared, want 2", n)
	}
	c.AddPartitions(t, "late", 5)
	waitFor(t, "5 claims", func() bool { return len(o.active()) == 5 })
	if n := metricSum(t, reg, "changerate_kafka_group_generations_total"); n != 3 {
		t.Errorf("%v generations after partitions were added, want 3", n)
	}
	_ = stop()
}

// The sink waits (up to 2×MetadataInterval) for a topic created after its
// metadata was cached, and fails for one that never appears.
func TestKafkaSinkWaitsForNewTopic(t *testing.T) {
	forEachSinkMode(t, func(t *testing.T, linger time.Duration) { testSinkWaitsForNewTopic(t, linger) })
}

func testSinkWaitsForNewTopic(t *testing.T, linger time.Duration) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "early", Partitions: 1})
	cfg := testConfig(c, "g")
	cfg.Linger = linger
	cfg.MetadataInterval = 200 * time.Millisecond
	sink := newSink(t, cfg, nil)
	ctx := context.Background()
	if err := sink.Write(ctx, stream.Message{Topic: "early", Value: []byte("1")}); err != nil {
		t.Fatal(err) // caches the metadata
	}
	c.CreateTopic(t, "late", 2)
	if err := sink.Write(ctx, stream.Message{Topic: "late", Key: []byte("k"), Value: []byte("1")}); err != nil {
		t.Fatalf("write to a topic created after the sink started: %v", err)
	}
	if got := c.ReadAll(t, "late"); len(got) != 1 {
		t.Fatalf("late topic holds %d records, want 1", len(got))
	}
	if err := sink.Write(ctx, stream.Message{Topic: "never", Value: []byte("1")}); err == nil {
		t.Fatal("write to a missing topic succeeded")
	}
}

// A broker restart (same port and data directory) interrupts the sink, the
// fetches and the group; all recover, and a handler that seeks to its
// stored offset continues exactly where it was.
func TestKafkaBrokerRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	opts := kafkatest.Options{
		Topics: []kafkatest.Topic{{Name: "t", Partitions: 2}},
		Extra:  []kfake.Opt{kfake.Ports(port), kfake.DataDir(t.TempDir())},
	}
	c := kafkatest.StartWith(t, opts)
	cfg := testConfig(c, "restart")
	sink := newSink(t, cfg, nil)
	store := &fencedStore{next: map[int32]int64{}, gen: map[int32]int64{}, applied: map[string]int{}}
	stop := runSource(t, newSource(t, cfg, "t", nil), store.handler)
	write := func(from, n int) {
		t.Helper()
		var msgs []stream.Message
		for i := from; i < from+n; i++ {
			msgs = append(msgs, stream.Message{Topic: "t", Key: []byte(strconv.Itoa(i % 7)), Value: []byte(strconv.Itoa(i))})
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := sink.Write(ctx, msgs...); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	applied := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.applied)
	}
	write(0, 100)
	waitFor(t, "the first 100", func() bool { return applied() == 100 })
	c.Kfake().Close()
	opts.Topics = nil // reloaded from the data directory
	kafkatest.StartWith(t, opts)
	write(100, 100)
	waitFor(t, "all 200", func() bool { return applied() == 200 })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for v, n := range store.applied {
		if n != 1 {
			t.Errorf("message %s applied %d times", v, n)
		}
	}
}
