package aggregate

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

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
