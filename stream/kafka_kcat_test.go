package stream_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// TestKafkaKcatReadsSink checks interoperability with librdkafka: kcat
// reads exactly what the sink wrote, per partition in order.
func TestKafkaKcatReadsSink(t *testing.T) {
	kafkatest.KcatPath(t)
	forEachSinkMode(t, testKcatReadsSink)
}

func testKcatReadsSink(t *testing.T, linger time.Duration) {
	const topic, keys, perKey = "estimates", 8, 25
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 3})
	cfg := testConfig(c, "kcat")
	cfg.Linger = linger
	sink := newSink(t, cfg, nil)
	msgs := keyedMessages(topic, keys, perKey)
	if err := sink.Write(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	out := kafkatest.RunKcat(t, "-b", c.Addr(), "-C", "-t", topic, "-e", "-o", "beginning",
		"-f", "%p\t%o\t%k\t%s\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(msgs) {
		t.Fatalf("kcat printed %d lines, want %d:\n%s", len(lines), len(msgs), out)
	}
	var got []stream.Message
	for _, l := range lines {
		var p int32
		var o int64
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("bad kcat line %q", l)
		}
		if _, err := fmt.Sscan(f[0], &p); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(f[1], &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, stream.Message{Partition: p, Offset: o, Key: []byte(f[2]), Value: []byte(f[3])})
	}
	// kcat interleaves partitions; order within each partition by offset.
	sort.SliceStable(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	checkPerKeyOrder(t, got, keys, perKey)

	// The plain format of the brief.
	out = kafkatest.RunKcat(t, "-b", c.Addr(), "-C", "-t", topic, "-e", "-o", "beginning", "-f", "%k\t%s\n")
	if n := strings.Count(out, "\n"); n != len(msgs) {
		t.Fatalf("kcat -f '%%k\\t%%s\\n' printed %d lines, want %d", n, len(msgs))
	}
}

// TestKafkaSourceReadsKcat checks the other direction: the source reads
// what kcat produced (librdkafka's partitioner for keyed messages).
func TestKafkaSourceReadsKcat(t *testing.T) {
	kafkatest.KcatPath(t)
	const topic = "observations"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 2})
	var in strings.Builder
	const n = 300
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "object-%d\tobject-%d:%d\n", i%10, i%10, i/10)
	}
	// -K sets the key delimiter; murmur2_random is the Java-compatible
	// partitioner, so kcat and kafka-go agree on key placement.
	kafkatest.RunKcatInput(t, in.String(), "-b", c.Addr(), "-P", "-t", topic, "-K", "\t",
		"-X", "partitioner=murmur2_random")

	src := newSource(t, testConfig(c, "from-kcat"), topic, nil)
	col := &collector{}
	stop := runSource(t, src, col.handle)
	waitFor(t, "all kcat messages", func() bool { return col.count() >= n })
	_ = stop()
	got := col.messages()
	sort.SliceStable(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	part := checkPerKeyOrder(t, got, 10, n/10)
	used := map[int32]bool{}
	for _, p := range part {
		used[p] = true
	}
	if len(used) != 2 {
		t.Errorf("10 keys used %d of 2 partitions", len(used))
	}

	// The sink places the same keys in the same partitions as kcat did.
	sink := newSink(t, testConfig(c, "from-kcat"), nil)
	var again []stream.Message
	for k := 0; k < 10; k++ {
		again = append(again, stream.Message{Topic: topic, Key: []byte(fmt.Sprint("object-", k)), Value: []byte("again")})
	}
	if err := sink.Write(context.Background(), again...); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.ReadAll(t, topic) {
		if string(r.Value) == "again" && part[string(r.Key)] != r.Partition {
			t.Errorf("key %s: kcat used partition %d, the sink %d", r.Key, part[string(r.Key)], r.Partition)
		}
	}
}
