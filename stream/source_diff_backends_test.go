package stream_test

// The two sources of TestSourceDifferential and how each plays the broker
// and the group coordinator.

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// diffBackend is one Source under test, with the actions a broker and a
// group coordinator take in the scripts.
type diffBackend interface {
	source() stream.Source
	// appendTo appends values to partition p in one write and returns the
	// offset of the first.
	appendTo(t *testing.T, p int32, values []string) int64
	// rebalance ends the current generation of every partition; after it
	// the source assigns every partition again in a later generation.
	rebalance(t *testing.T, h *diffHarness)
	// committed returns the committed offset of partition p (-1: none),
	// waiting a bounded time for it to equal want.
	committed(t *testing.T, h *diffHarness, p int32, want int64) int64
}

// memoryBackend: the caller plays the coordinator (Assign, Revoke).
type memoryBackend struct{ src *stream.MemorySource }

func openMemoryBackend(t *testing.T, _ string) diffBackend {
	src := stream.NewMemorySource()
	for p := int32(0); p < diffPartitions; p++ {
		src.Assign(diffTopic, p, 1)
	}
	return &memoryBackend{src: src}
}

func (b *memoryBackend) source() stream.Source { return b.src }

func (b *memoryBackend) appendTo(_ *testing.T, p int32, values []string) int64 {
	msgs := make([]stream.Message, len(values))
	for i, v := range values {
		msgs[i] = stream.Message{Value: []byte(v)}
	}
	return b.src.Append(diffTopic, p, msgs...)
}

// rebalance revokes every partition and assigns all of them at the next
// generation, as a coordinator does for a member that keeps its
// partitions.
func (b *memoryBackend) rebalance(t *testing.T, h *diffHarness) {
	gen := h.currentGeneration(t) + 1
	for p := int32(0); p < diffPartitions; p++ {
		b.src.Revoke(diffTopic, p)
	}
	for p := int32(0); p < diffPartitions; p++ {
		b.src.Assign(diffTopic, p, gen)
	}
}

// committed is the highest mark of any claim of p (a later generation's
// claim starts without one; Kafka keeps the group's offset).
func (b *memoryBackend) committed(t *testing.T, h *diffHarness, p int32, _ int64) int64 {
	best := int64(-1)
	for _, c := range h.claimsOf(p) {
		mc, ok := c.cl.(*stream.MemoryClaim)
		if !ok {
			t.Fatalf("memory source handed out a %T", c.cl)
		}
		if next, calls := mc.Committed(); calls > 0 {
			best = max(best, next)
		}
	}
	return best
}

// kafkaBackend: a one-member consumer group on kfake.
type kafkaBackend struct {
	c     *kafkatest.Cluster
	group string
	src   *stream.KafkaSource
}

func openKafkaBackend(t *testing.T, scenario string) diffBackend {
	c := kafkatest.Start(t, kafkatest.Topic{Name: diffTopic, Partitions: diffPartitions})
	group := "diff-" + strings.TrimSuffix(scenario, filepath.Ext(scenario))
	return &kafkaBackend{c: c, group: group, src: newSource(t, testConfig(c, group), diffTopic, nil)}
}

func (b *kafkaBackend) source() stream.Source { return b.src }

func (b *kafkaBackend) appendTo(t *testing.T, p int32, values []string) int64 {
	recs := make([]kafkatest.Record, len(values))
	for i, v := range values {
		recs[i] = kafkatest.Record{Value: []byte(v)}
	}
	out := b.c.ProduceTo(t, diffTopic, p, recs...)
	for i := 1; i < len(out); i++ {
		if out[i].Offset != out[0].Offset+int64(i) {
			t.Fatalf("kfake gave offsets %d and %d to consecutive records of one write", out[0].Offset, out[i].Offset)
		}
	}
	return out[0].Offset
}

// rebalance makes an idle handler fail: the member ends the generation
// (all its claims are revoked) and rejoins, as for any handler error.
func (b *kafkaBackend) rebalance(t *testing.T, h *diffHarness) {
	for p := int32(0); p < diffPartitions; p++ {
		c := h.claimOf(t, p)
		if c.busy.Load() {
			continue
		}
		select {
		case c.fail <- errors.New("diff: injected handler error (rebalance)"):
			return
		case <-c.done:
		}
	}
	t.Fatal("rebalance: no idle handler to fail")
}

func (b *kafkaBackend) committed(t *testing.T, _ *diffHarness, p int32, want int64) int64 {
	deadline := time.Now().Add(15 * time.Second) // commits every CommitInterval (50ms)
	for {
		got, ok := b.c.GroupOffsets(t, b.group, diffTopic)[p]
		if !ok {
			got = -1
		}
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}
