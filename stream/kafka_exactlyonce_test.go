package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// fencedStore models the state layer's atomic step: per partition it keeps
// the next offset and the generation of the last writer, and applies a
// batch only if the batch starts at the stored offset and comes from the
// stored generation or a newer one.
type fencedStore struct {
	mu      sync.Mutex
	next    map[int32]int64
	gen     map[int32]int64
	applied map[string]int // value → times applied
	fenced  atomic.Int64   // rejected batches
}

var errFenced = errors.New("fenced")

func (s *fencedStore) offset(p int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.next[p]; ok {
		return n
	}
	return -1
}

func (s *fencedStore) apply(p int32, gen int64, msgs []stream.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if next, ok := s.next[p]; (ok && msgs[0].Offset != next) || gen < s.gen[p] {
		s.fenced.Add(1)
		return fmt.Errorf("partition %d: batch at %d from generation %d, stored next %d generation %d: %w",
			p, msgs[0].Offset, gen, s.next[p], s.gen[p], errFenced)
	}
	for _, m := range msgs {
		s.applied[string(m.Value)]++
	}
	s.next[p] = msgs[len(msgs)-1].Offset + 1
	s.gen[p] = gen
	return nil
}

func (s *fencedStore) handler(ctx context.Context, cl stream.Claim) error {
	if err := cl.SeekTo(s.offset(cl.Partition())); err != nil {
		return err
	}
	for {
		msgs, err := cl.Fetch(ctx, 37)
		if err != nil {
			return err
		}
		if err := s.apply(cl.Partition(), cl.Generation(), msgs); err != nil {
			return err // the member rejoins and re-reads the stored offset
		}
		cl.MarkCommitted(msgs[len(msgs)-1].Offset + 1)
	}
}

// TestKafkaEffectivelyOnceThroughRebalancesAndAZombie drives the source the
// way the aggregator does (seek to the stored offset; apply each batch with
// a compare-and-set of offset and generation) while members join, a member
// is paused past its session timeout and resumes, and another leaves; every
// message must be applied exactly once.
func TestKafkaEffectivelyOnceThroughRebalancesAndAZombie(t *testing.T) {
	const topic = "observations"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 4})
	paused, _ := pauseFirstMember(c)
	cfg := testConfig(c, "exactly-once")
	cfg.SessionTimeout = time.Second
	cfg.RebalanceTimeout = time.Second
	store := &fencedStore{next: map[int32]int64{}, gen: map[int32]int64{}, applied: map[string]int{}}

	// Produce continuously until told to stop.
	sink := newSink(t, cfg, nil)
	stopProducing := make(chan struct{})
	var produced atomic.Int64
	producerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i += 20 {
			select {
			case <-stopProducing:
				producerDone <- nil
				return
			default:
			}
			var msgs []stream.Message
			for j := i; j < i+20; j++ {
				msgs = append(msgs, stream.Message{Topic: topic, Key: []byte(fmt.Sprint("obj-", j%97)), Value: []byte(fmt.Sprint(j))})
			}
			if err := sink.Write(context.Background(), msgs...); err != nil {
				producerDone <- err
				return
			}
			produced.Add(20)
			time.Sleep(time.Millisecond)
		}
	}()
	applied := func() int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return len(store.applied)
	}
	maxGen := func() (lo, hi int64) {
		store.mu.Lock()
		defer store.mu.Unlock()
		lo = 1 << 62
		for p := int32(0); p < 4; p++ {
			lo, hi = min(lo, store.gen[p]), max(hi, store.gen[p])
		}
		return lo, hi
	}

	// A commits no offsets to the group during the test: a failed offset
	// commit would tell it that its generation ended, and the zombie
	// must learn nothing until its batches are fenced.
	cfgA := cfg
	cfgA.CommitInterval = time.Hour
	stopA := runSource(t, newSource(t, cfgA, topic, nil), store.handler)
	waitFor(t, "A to apply", func() bool { return applied() > 200 })
	stopB := runSource(t, newSource(t, cfg, topic, nil), store.handler)
	waitFor(t, "A and B to apply", func() bool { return applied() > 600 })

	// A stops heart-beating (SIGSTOP); C joins. Once A's session expires,
	// B and C write every partition in a newer generation while A, unaware,
	// keeps fetching: its next batch must be rejected.
	_, before := maxGen()
	paused.Store(true)
	stopC := runSource(t, newSource(t, cfg, topic, nil), store.handler)
	waitFor(t, "every partition written in a newer generation", func() bool { lo, _ := maxGen(); return lo > before })
	waitFor(t, "a fenced batch", func() bool { return store.fenced.Load() > 0 })
	paused.Store(false)
	n := applied()
	waitFor(t, "progress after A resumed", func() bool { return applied() > n+200 })
	if err := stopB(); !errors.Is(err, context.Canceled) {
		t.Fatalf("B: %v", err)
	}
	n = applied()
	waitFor(t, "progress after B left", func() bool { return applied() > n+200 })
	close(stopProducing)
	if err := <-producerDone; err != nil {
		t.Fatal(err)
	}
	total := int(produced.Load())
	waitFor(t, "every message", func() bool { return applied() == total })
	for _, stop := range []func() error{stopA, stopC} {
		if err := stop(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for v, k := range store.applied {
		if k != 1 {
			t.Errorf("message %s applied %d times", v, k)
		}
	}
	for p, b := range c.Offsets(t, topic) {
		if store.next[p] != b.End {
			t.Errorf("partition %d: stored next offset %d, end %d", p, store.next[p], b.End)
		}
	}
	t.Logf("%d messages; %d batches rejected by the compare-and-set", total, store.fenced.Load())
}
