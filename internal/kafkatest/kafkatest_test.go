package kafkatest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/kafkatest"
)

func TestProduceReadOffsets(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 3})
	if n := c.Partitions(t, "t"); n != 3 {
		t.Fatalf("Partitions = %d, want 3", n)
	}
	if n := c.Partitions(t, "missing"); n != 0 {
		t.Fatalf("Partitions(missing) = %d, want 0", n)
	}
	var recs []kafkatest.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint("k", i%5)), Value: []byte(fmt.Sprint(i))})
	}
	out := c.Produce(t, "t", recs...)
	part := map[string]int32{}
	for _, r := range out {
		if p, ok := part[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		part[string(r.Key)] = r.Partition
	}
	got := c.ReadAll(t, "t")
	if len(got) != 30 {
		t.Fatalf("ReadAll returned %d records, want 30", len(got))
	}
	total := int64(0)
	for p, b := range c.Offsets(t, "t") {
		if b.Start != 0 {
			t.Errorf("partition %d starts at %d", p, b.Start)
		}
		total += b.End
	}
	if total != 30 {
		t.Fatalf("end offsets sum to %d, want 30", total)
	}

	c.ProduceTo(t, "t", 2, kafkatest.Record{Value: []byte("x")}, kafkatest.Record{Value: []byte("y")})
	end := c.Offsets(t, "t")[2].End
	c.DeleteRecords(t, "t", 2, end-1)
	if b := c.Offsets(t, "t")[2]; b.Start != end-1 || b.End != end {
		t.Fatalf("after DeleteRecords: %+v, want start %d end %d", b, end-1, end)
	}
	c.AddPartitions(t, "t", 4)
	if n := c.Partitions(t, "t"); n != 4 {
		t.Fatalf("after AddPartitions: %d partitions", n)
	}
	c.CreateTopic(t, "compacted", 2, "cleanup.policy", "compact")
	if cfg := c.TopicConfig(t, "compacted"); cfg["cleanup.policy"] != "compact" {
		t.Fatalf("TopicConfig = %v", cfg)
	}
	if offs := c.GroupOffsets(t, "nobody", "t"); len(offs) != 0 {
		t.Fatalf("GroupOffsets of an unknown group: %v", offs)
	}
}

func TestRunKcat(t *testing.T) {
	kafkatest.KcatPath(t)
	c := kafkatest.Start(t, kafkatest.Topic{Name: "t", Partitions: 1})
	kafkatest.RunKcatInput(t, "a:1\nb:2\n", "-b", c.Addr(), "-P", "-t", "t", "-K", ":")
	out := kafkatest.RunKcat(t, "-b", c.Addr(), "-C", "-t", "t", "-e", "-o", "beginning", "-f", "%k=%s\n")
	if out != "a=1\nb=2\n" {
		t.Fatalf("kcat output %q", out)
	}
	meta := kafkatest.RunKcat(t, "-b", c.Addr(), "-L", "-t", "t")
	if !strings.Contains(meta, `topic "t" with 1 partitions`) {
		t.Fatalf("kcat -L output:\n%s", meta)
	}
}
