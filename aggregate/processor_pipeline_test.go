package aggregate

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// failingStore fails the commit number failAt (1-based) with err and
// records every commit's range; it checks that calls for one partition
// never overlap (the Store contract).
type failingStore struct {
	state.Store
	failAt int
	err    error

	mu      sync.Mutex
	commits [][2]int64
	active  atomic.Int32
	overlap atomic.Bool
}

func (s *failingStore) enter() func() {
	if s.active.Add(1) > 1 {
		s.overlap.Store(true)
	}
	return func() { s.active.Add(-1) }
}

func (s *failingStore) Get(ctx context.Context, p state.Partition, objects []string, dst [][]byte) ([][]byte, error) {
	defer s.enter()()
	return s.Store.Get(ctx, p, objects, dst)
}

func (s *failingStore) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	defer s.enter()()
	s.mu.Lock()
	n := len(s.commits) + 1
	s.commits = append(s.commits, [2]int64{from, to})
	s.mu.Unlock()
	if n == s.failAt {
		return s.err
	}
	return s.Store.Commit(ctx, p, epoch, from, to, writes)
}

// TestPipelineStopsAtFailedCommit: when a batch's commit is fenced, no later
// batch is committed, Handle ends quietly, Committed counts only the
// batches before, and the stored states equal those of a run that stopped
// at the same offset.
func TestPipelineStopsAtFailedCommit(t *testing.T) {
	in, _ := truthLog(21, 15, 4)
	cfg := DefaultConfig()
	cfg.BatchSize, cfg.CacheObjects, cfg.Model.EmitInterval = 50, 4, 0
	cfg.DisableReorder = true // batch mechanics: each batch applies its own observations
	fs := &failingStore{Store: newMemory(t), failAt: 4, err: state.ErrFenced}
	p, _ := newTestProcessor(t, cfg, fs)
	runReader(t, p, in)
	if fs.overlap.Load() {
		t.Error("store calls for one partition overlapped")
	}
	if len(fs.commits) != 4 {
		t.Fatalf("%d commits attempted after the 4th failed, want exactly 4: %v", len(fs.commits), fs.commits)
	}
	if p.Committed() != 150 {
		t.Fatalf("Committed() = %d, want 150 (3 batches of 50)", p.Committed())
	}
	for i, c := range fs.commits {
		from := int64(i * 50)
		if i == 0 {
			from = -1 // nothing stored yet
		}
		if c != [2]int64{from, int64((i + 1) * 50)} {
			t.Errorf("commit %d covers %v, want [%d %d]", i, c, from, (i+1)*50)
		}
	}
	// A clean run over the first 150 lines stores the same states.
	lines := bytes.SplitAfterN(in, []byte("\n"), 151)
	ref := newMemory(t)
	pr, _ := newTestProcessor(t, cfg, ref)
	runReader(t, pr, bytes.Join(lines[:150], nil))
	part := state.Partition{Topic: stream.TopicObservations, ID: 0}
	got, err := fs.Store.(*state.Memory).Snapshot(context.Background(), part)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Snapshot(context.Background(), part)
	if err != nil {
		t.Fatal(err)
	}
	if got.Next != 150 || !reflect.DeepEqual(got.Objects, want.Objects) {
		t.Errorf("after the failed commit: next %d (want 150), states equal to a clean run of 150: %v", got.Next, reflect.DeepEqual(got.Objects, want.Objects))
	}
}

// slowStore delays every commit, so that later batches are applied while
// earlier ones are in flight.
type slowStore struct{ state.Store }

func (s slowStore) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	time.Sleep(time.Millisecond)
	return s.Store.Commit(ctx, p, epoch, from, to, writes)
}

// TestPipelineSlowCommitsTinyCache: with commits slower than applying and a
// cache far smaller than a batch (so uncommitted states are evicted while
// in flight), the stored states and the published estimates equal those of
// unbatched processing.
func TestPipelineSlowCommitsTinyCache(t *testing.T) {
	in, _ := truthLog(22, 25, 5)
	part := state.Partition{Topic: stream.TopicObservations, ID: 0}
	run := func(batch, cache int, slow bool) (map[string][]byte, map[string][]byte) {
		cfg := DefaultConfig()
		cfg.BatchSize, cfg.CacheObjects, cfg.Model.EmitInterval = batch, cache, time.Hour
		mem := newMemory(t)
		var st state.Store = mem
		if slow {
			st = slowStore{mem}
		}
		p, sink := newTestProcessor(t, cfg, st)
		runReader(t, p, in)
		snap, err := mem.Snapshot(context.Background(), part)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Objects, sink.Latest(stream.TopicEstimates)
	}
	wantState, wantEst := run(1, 0, false)
	for _, c := range []struct{ batch, cache int }{{7, 1}, {40, 3}, {300, 2}} {
		gotState, gotEst := run(c.batch, c.cache, true)
		if !reflect.DeepEqual(gotState, wantState) {
			t.Errorf("batch %d, cache %d: stored states differ from unbatched processing", c.batch, c.cache)
		}
		if !reflect.DeepEqual(gotEst, wantEst) {
			t.Errorf("batch %d, cache %d: latest estimates differ from unbatched processing", c.batch, c.cache)
		}
	}
}
