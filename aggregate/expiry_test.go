package aggregate

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
	"github.com/prometheus/client_golang/prometheus"
)

func TestExpiryClockKeep(t *testing.T) {
	start := time.Unix(1_800_000_000, 900_000_000) // .9 s past a whole second
	const grace = 10 * time.Second
	for _, c := range []struct {
		name      string
		grace     time.Duration
		refreshed int64 // Unix seconds; 0: none
		keep      bool
	}{
		{"no refresh yet", grace, 0, false},
		{"refreshed this second", grace, 1_800_000_000, true},
		// Refreshed at 1_799_999_991.0 at the earliest: 9.9 s ago.
		{"8 s ago by the seconds, under 10 s", grace, 1_800_000_000 - 8, true},
		// At the earliest 10.9 s ago: refresh again.
		{"9 s ago by the seconds, maybe over", grace, 1_800_000_000 - 9, false},
		{"long ago", grace, 1_700_000_000, false},
		{"after now (the clock was set back)", grace, 1_800_000_000 + 1, false},
		{"grace under 2 s", 1999 * time.Millisecond, 1_800_000_000, false},
		{"no expiry", 0, 1_800_000_000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &entry{refreshed: uint32(c.refreshed)}
			if got := newExpiryClock(start, c.grace).keep(e); got != c.keep {
				t.Fatalf("keep = %v; want %v", got, c.keep)
			}
			want := uint32(c.refreshed)
			if !c.keep && c.grace >= 2*time.Second {
				want = uint32(start.Unix()) // this write refreshes
			}
			if e.refreshed != want {
				t.Fatalf("refreshed = %d; want %d", e.refreshed, want)
			}
		})
	}
}

// keepLog is a state.Store that records the writes of each Commit, with
// the ExpiryGrace of a per-object Redis layout (IdleTTL/16) when perKey.
type keepLog struct {
	state.Store
	writes [][]state.Write
	grace  time.Duration
}

func (s *keepLog) ExpiryGrace() time.Duration { return s.grace }

func (s *keepLog) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	s.writes = append(s.writes, slices.Clone(writes))
	return s.Store.Commit(ctx, p, epoch, from, to, writes)
}

// TestProcessorKeepsExpiryWithinGrace: with the default IdleTTL and a
// store with a grace (Redis's per-object layouts) an object's first write
// refreshes its expiry and its later ones (in this quick run, all within
// the grace) keep it; a store without expiry, or whose expiry is measured
// from every write (grace 0: the bucketed layout, Memory), is never asked
// to keep one.
func TestProcessorKeepsExpiryWithinGrace(t *testing.T) {
	in, _ := truthLog(13, 4, 3)
	for _, c := range []struct{ ttl, grace time.Duration }{{720 * time.Hour, 45 * time.Hour}, {0, 0}, {720 * time.Hour, 0}} {
		ttl := c.ttl
		mem, err := state.NewMemory(state.MemoryConfig{IdleTTL: ttl}, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		if g := mem.ExpiryGrace(); g != 0 {
			t.Fatalf("Memory.ExpiryGrace = %v; want 0", g)
		}
		st := &keepLog{Store: mem, grace: c.grace}
		cfg := DefaultConfig()
		cfg.BatchSize = 20
		p, _ := newTestProcessor(t, cfg, st)
		runReader(t, p, in)
		if len(st.writes) < 3 {
			t.Fatalf("IdleTTL %v: %d commits; want several", ttl, len(st.writes))
		}
		written := map[string]bool{}
		var keeps, refreshes int
		for i, ws := range st.writes {
			for _, w := range ws {
				switch {
				case w.KeepExpiry && c.grace == 0:
					t.Fatalf("grace 0: commit %d keeps the expiry of %s", i, w.Object)
				case w.KeepExpiry && !written[w.Object]:
					t.Fatalf("commit %d keeps the expiry of %s, written for the first time", i, w.Object)
				case !w.KeepExpiry && c.grace > 0 && written[w.Object] && !strings.HasPrefix(w.Object, "#") && w.Object != reorderObject:
					t.Fatalf("commit %d refreshes the expiry of %s again within the grace", i, w.Object)
				case w.KeepExpiry:
					keeps++
				default:
					refreshes++
				}
				written[w.Object] = true
			}
		}
		if c.grace > 0 && keeps == 0 {
			t.Fatalf("no write kept its expiry in %d commits (%d refreshes)", len(st.writes), refreshes)
		}
	}
}

// TestIdleSweep: a partition without input still deletes its idle objects
// (store with the bucketed layout's sweep: state.Memory): at its idle
// checks the handler commits an empty batch when the store has a sweep
// due, fenced and at its committed offset, until a whole pass deleted
// every object idle for IdleTTL. Without the idle sweep nothing would
// delete them (no batch commits).
func TestIdleSweep(t *testing.T) {
	lines := disordered(23, 10, 3)
	msgs := messages(lines)
	p0, _ := newTestProcessor(t, DefaultConfig(), newMemory(t))
	if err := (&sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: 100, rng: rand.New(rand.NewPCG(1, 2))}).Run(context.Background(), p0.Handle); err != nil {
		t.Fatal(err)
	}
	want := p0.Stats().Applied
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	const ttl = 16 * time.Hour // sweep period 1 h
	st, err := state.NewMemory(state.MemoryConfig{IdleTTL: ttl, Now: clock, Buckets: 8}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.IdleRelease, cfg.IdleCheck = 10*time.Millisecond, 10*time.Millisecond
	p, _ := newTestProcessor(t, cfg, st)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: 100, rng: rand.New(rand.NewPCG(1, 2)), block: true}).Run(ctx, p.Handle)
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("timed out waiting for %s (len %d, expired %d, due %v, stored %v)", what, st.Len(), st.Expired(), st.SweepDue(state.Partition{Topic: stream.TopicObservations}), st.Partitions())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("the input to be applied and released", func() bool { return p.Stats().Applied == want })
	time.Sleep(100 * time.Millisecond) // idle checks, the commit of the release; no time passed: nothing due
	if st.Expired() != 0 {
		t.Fatalf("expired %d before IdleTTL", st.Expired())
	}
	mu.Lock()
	now = now.Add(ttl + time.Hour) // everything idle, a whole pass earned
	mu.Unlock()
	wait("the idle sweep", func() bool { return st.Len() == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.Expired() == 0 {
		t.Fatal("nothing counted as expired")
	}
}
