package state_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
)

// crashBatch is batch k of the deterministic workload of the crash test:
// it moves the offset from 10k-1 to 10k+9 (batch 0 from -1) and writes
// objects o<j> for j ≡ k (mod 7) and j ≡ 0 (mod k%5+2), deleting those with
// j ≡ 3 (mod 11) every third batch.
func crashBatch(k int) (from, to int64, w []state.Write) {
	from = int64(10*k) - 1
	to = int64(10*k) + 9
	for j := 0; j < 300; j++ {
		switch {
		case k%3 == 2 && j%11 == 3:
			w = append(w, state.Write{Object: fmt.Sprintf("o%d", j), Value: nil})
		case j%7 == k%7 || j%(k%5+2) == 0:
			w = append(w, state.Write{Object: fmt.Sprintf("o%d", j), Value: []byte(fmt.Sprintf("batch %d object %d", k, j))})
		}
	}
	return from, to, w
}

// batchesBefore returns how many batches were applied given the stored next
// offset (-1: none).
func batchesBefore(next int64) int {
	if next < 0 {
		return 0
	}
	return int((next + 1) / 10)
}

// reference applies batches [0, n) to a fresh Memory store and returns its
// snapshot.
func reference(t *testing.T, n int) state.PartitionSnapshot {
	t.Helper()
	m, err := state.NewMemory(state.MemoryConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < n; k++ {
		from, to, w := crashBatch(k)
		if err := m.Commit(ctx, part, 1, from, to, w); err != nil {
			t.Fatal(err)
		}
	}
	s, err := m.Snapshot(ctx, part)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func equalSnapshots(a, b state.PartitionSnapshot) error {
	if a.Next != b.Next {
		return fmt.Errorf("next offset %d vs %d", a.Next, b.Next)
	}
	if len(a.Objects) != len(b.Objects) {
		return fmt.Errorf("%d vs %d objects", len(a.Objects), len(b.Objects))
	}
	for k, v := range a.Objects {
		if w, ok := b.Objects[k]; !ok || !bytes.Equal(v, w) {
			return fmt.Errorf("object %s: %q vs %q", k, v, w)
		}
	}
	return nil
}

// TestAOFKillRestart kills redis-server (SIGKILL, AOF appendfsync everysec)
// while commits are in flight, restarts it on the same directory, and
// checks that the values and the offset rewound together: the recovered
// state equals, object by object, the state of a clean run of exactly the
// batches below the recovered offset; nothing committed before the last
// fsync is lost; and replaying from the recovered offset restores the
// clean run's final state.
func TestAOFKillRestart(t *testing.T) {
	const total = 200
	for round := 0; round < 3; round++ {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			s := redistest.Start(t, redistest.WithAOF())
			r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatReadable, ExpiryEvents: state.ExpiryEventsOff})
			if _, err := r.Claim(ctx, part, 1); err != nil {
				t.Fatal(err)
			}
			// Phase 1: commit, then wait past two fsync periods.
			durable := 40 + 20*round
			for k := 0; k < durable; k++ {
				from, to, w := crashBatch(k)
				if err := r.Commit(ctx, part, 1, from, to, w); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2200 * time.Millisecond)
			// Phase 2: commit in a goroutine and SIGKILL Redis midway.
			acked := make(chan int, total)
			go func() {
				defer close(acked)
				for k := durable; k < total; k++ {
					from, to, w := crashBatch(k)
					if err := r.Commit(ctx, part, 1, from, to, w); err != nil {
						return
					}
					acked <- k
				}
			}()
			lastAcked := durable - 1
			for k := range acked {
				lastAcked = k
				if k == durable+10+7*round {
					s.Kill()
				}
			}
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			next, err := r.Claim(ctx, part, 1)
			if err != nil {
				t.Fatal(err)
			}
			n := batchesBefore(next)
			t.Logf("durable %d batches, acknowledged %d, recovered %d (next offset %d)", durable, lastAcked+1, n, next)
			if n < durable || n > lastAcked+2 {
				t.Fatalf("recovered %d batches; want between %d and %d", n, durable, lastAcked+2)
			}
			checkRecoveredThenReplay(t, r, part, n, next, total)
		})
	}
}

// TestAOFTornTail simulates losing the tail of the AOF that was never
// fsynced (an OS crash): it cuts the AOF at several points, which may fall
// inside a commit's MULTI/EXEC block, and checks that Redis (with its
// default aof-load-truncated yes) loads whole commits only, so that values
// and offset agree, and that a replay restores the clean run's state.
func TestAOFTornTail(t *testing.T) {
	const total = 60
	for _, frac := range []float64{0.35, 0.5, 0.77, 0.9, 0.999} {
		t.Run(fmt.Sprint(frac), func(t *testing.T) {
			s := redistest.Start(t, redistest.WithAOF())
			r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatReadable, ExpiryEvents: state.ExpiryEventsOff})
			if _, err := r.Claim(ctx, part, 1); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < total; k++ {
				from, to, w := crashBatch(k)
				if err := r.Commit(ctx, part, 1, from, to, w); err != nil {
					t.Fatal(err)
				}
			}
			s.Kill()
			aof := incrAOF(t, s.Dir)
			fi, err := os.Stat(aof)
			if err != nil {
				t.Fatal(err)
			}
			cut := int64(float64(fi.Size()) * frac)
			if err := os.Truncate(aof, cut); err != nil {
				t.Fatal(err)
			}
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
			next, err := r.Claim(ctx, part, 1)
			if err != nil {
				t.Fatal(err)
			}
			n := batchesBefore(next)
			t.Logf("AOF cut at %d of %d bytes: recovered %d of %d batches", cut, fi.Size(), n, total)
			if frac < 0.99 && n >= total {
				t.Fatalf("recovered all %d batches from a cut AOF", n)
			}
			checkRecoveredThenReplay(t, r, part, n, next, total)
		})
	}
}

// incrAOF returns the incremental AOF file of a Redis 7 multi-part AOF (or
// the single appendonly.aof of older versions).
func incrAOF(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if len(m) == 1 {
		return m[0]
	}
	if p := filepath.Join(dir, "appendonly.aof"); fileExists(p) {
		return p
	}
	t.Fatalf("no AOF found in %s (%v)", dir, m)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// checkRecoveredThenReplay checks that the state recovered after a restart
// is exactly the reference state after n batches (the stored offset next),
// then replays batches n..total−1 and checks that the final state equals a
// clean run.
func checkRecoveredThenReplay(t *testing.T, r *state.Redis, part state.Partition, n int, next int64, total int) {
	t.Helper()
	ctx := context.Background()
	got, err := r.Snapshot(ctx, part)
	if err != nil {
		t.Fatal(err)
	}
	if err := equalSnapshots(got, reference(t, n)); err != nil {
		t.Fatalf("state after restart does not match offset %d: %v", next, err)
	}
	for k := n; k < total; k++ {
		from, to, w := crashBatch(k)
		if err := r.Commit(ctx, part, 1, from, to, w); err != nil {
			t.Fatalf("replay batch %d: %v", k, err)
		}
	}
	if got, err = r.Snapshot(ctx, part); err != nil {
		t.Fatal(err)
	}
	if err := equalSnapshots(got, reference(t, total)); err != nil {
		t.Fatalf("after replay: %v", err)
	}
}
