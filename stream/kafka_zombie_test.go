package stream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// memberLog records, per member, the claims started and the active ones.
type memberLog struct {
	mu     sync.Mutex
	active map[string]map[int32]int64 // member → partition → generation
	ends   map[string][]error
}

func (l *memberLog) handler(member string) func(context.Context, stream.Claim) error {
	return func(ctx context.Context, cl stream.Claim) error {
		l.mu.Lock()
		if l.active[member] == nil {
			l.active[member] = map[int32]int64{}
		}
		l.active[member][cl.Partition()] = cl.Generation()
		l.mu.Unlock()
		err := cl.SeekTo(-1)
		for err == nil {
			_, err = cl.Fetch(ctx, 1000)
		}
		l.mu.Lock()
		delete(l.active[member], cl.Partition())
		l.ends[member] = append(l.ends[member], err)
		l.mu.Unlock()
		return err
	}
}

func (l *memberLog) snapshot(member string) map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int32]int64{}
	for p, g := range l.active[member] {
		out[p] = g
	}
	return out
}

func gens(m map[int32]int64) (lo, hi int64) {
	lo, hi = 1<<62, -1
	for _, g := range m {
		lo, hi = min(lo, g), max(hi, g)
	}
	return lo, hi
}

// TestKafkaPausedMemberIsFencedByGeneration reproduces a paused consumer
// (SIGSTOP past the session timeout): the broker stops seeing member A's
// heartbeats while A itself believes it is healthy. The group moves A's
// partitions to B in a later generation while A still fetches them: the
// context cannot fence a paused process, only Claim.Generation can (the
// state layer's compare-and-set must reject the older generation). When A
// "resumes", its next heartbeat fails, its handlers see ErrRevoked, and it
// rejoins in a newer generation.
func TestKafkaPausedMemberIsFencedByGeneration(t *testing.T) {
	const topic = "observations"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 4})
	var recs []kafkatest.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")})
	}
	c.Produce(t, topic, recs...)

	// Heartbeat interception: the first member seen is A; while paused,
	// A's heartbeats are answered "OK" without reaching the coordinator.
	paused, memberA := pauseFirstMember(c)

	cfg := testConfig(c, "zombie")
	cfg.SessionTimeout = time.Second
	cfg.RebalanceTimeout = time.Second
	l := &memberLog{active: map[string]map[int32]int64{}, ends: map[string][]error{}}

	stopA := runSource(t, newSource(t, cfg, topic, nil), l.handler("A"))
	waitFor(t, "A owns 4 partitions", func() bool { return len(l.snapshot("A")) == 4 && memberA.Load() != nil })
	_, g1 := gens(l.snapshot("A"))

	paused.Store(true)
	stopB := runSource(t, newSource(t, cfg, topic, nil), l.handler("B"))
	waitFor(t, "B owns all 4 partitions after A's session expired", func() bool { return len(l.snapshot("B")) == 4 })
	a, b := l.snapshot("A"), l.snapshot("B")
	if len(a) != 4 {
		t.Fatalf("paused A's handlers: %v, want all 4 still running (A cannot know yet)", a)
	}
	if _, hiA := gens(a); hiA != g1 {
		t.Fatalf("A's generation changed to %d while paused", hiA)
	}
	g2, _ := gens(b)
	if g2 <= g1 {
		t.Fatalf("B's generation %d is not above A's %d: no fencing epoch", g2, g1)
	}

	// A resumes: its next heartbeat reaches the coordinator and fails.
	paused.Store(false)
	waitFor(t, "A and B share the partitions in a new generation", func() bool {
		a, b := l.snapshot("A"), l.snapshot("B")
		loA, hiA := gens(a)
		loB, hiB := gens(b)
		return len(a) == 2 && len(b) == 2 && loA == hiA && loB == hiB && hiA == hiB && hiA > g2
	})
	l.mu.Lock()
	endsA := append([]error(nil), l.ends["A"]...)
	l.mu.Unlock()
	if len(endsA) < 4 {
		t.Fatalf("A's zombie handlers ended %d times, want 4", len(endsA))
	}
	for _, err := range endsA[:4] {
		if !errors.Is(err, stream.ErrRevoked) {
			t.Errorf("zombie handler ended with %v, want ErrRevoked", err)
		}
	}
	if err := stopB(); !errors.Is(err, context.Canceled) {
		t.Errorf("B: %v", err)
	}
	if err := stopA(); !errors.Is(err, context.Canceled) {
		t.Errorf("A: %v", err)
	}
}
