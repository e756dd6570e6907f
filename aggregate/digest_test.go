package aggregate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/changerate/changerate/state"
)

// digestLog is a Memory store (a state.DigestGetter) that checks every
// digest it is given against state.DigestOf of its name and records the
// writes of each Commit.
type digestLog struct {
	*state.Memory
	t      *testing.T
	reads  int // objects read with a digest
	writes [][]state.Write
}

func (s *digestLog) GetDigests(ctx context.Context, p state.Partition, objects []string, digests []state.Digest, dst [][]byte) ([][]byte, error) {
	for i, o := range objects {
		if digests[i] != state.DigestOf(o) {
			s.t.Errorf("GetDigests of %q with digest %x; want %x", o, digests[i], state.DigestOf(o))
		}
		s.reads++
	}
	return s.Memory.GetDigests(ctx, p, objects, digests, dst)
}

func (s *digestLog) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	for _, w := range writes {
		if w.Digest != (state.Digest{}) && w.Digest != state.DigestOf(w.Object) {
			s.t.Errorf("write of %q with digest %x; want %x", w.Object, w.Digest, state.DigestOf(w.Object))
		}
	}
	s.writes = append(s.writes, slices.Clone(writes)) // the batch reuses writes
	return s.Memory.Commit(ctx, p, epoch, from, to, writes)
}

// TestWritesCarryDigests: the processor reads the objects it does not
// have cached by their digests and writes every object's state with its
// name's digest (computed once, kept in the cache entry, and kept with an
// evicted uncommitted state), so that the store does not hash the name
// at every commit; the sites' states and the reorder position may leave
// it to the store. A cache of 5 objects makes entries come and go.
func TestWritesCarryDigests(t *testing.T) {
	in, _ := truthLog(35, 40, 3)
	for _, limit := range []int{0, 5} {
		st := &digestLog{Memory: newMemory(t), t: t}
		cfg := DefaultConfig()
		cfg.BatchSize = 20
		cfg.CacheObjects = limit
		p, _ := newTestProcessor(t, cfg, st)
		runReader(t, p, in)
		if st.reads == 0 {
			t.Fatalf("cache limit %d: no object read with its digest", limit)
		}
		var objects int
		for i, ws := range st.writes {
			for _, w := range ws {
				if strings.HasPrefix(w.Object, "#") || w.Object == reorderObject {
					continue
				}
				objects++
				if w.Digest == (state.Digest{}) {
					t.Fatalf("cache limit %d: commit %d writes %s without its digest", limit, i, w.Object)
				}
			}
		}
		if objects == 0 {
			t.Fatalf("cache limit %d: no object written in %d commits", limit, len(st.writes))
		}
	}
}
