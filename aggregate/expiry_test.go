package aggregate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
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

// keepLog is a state.Store that records the writes of each Commit.
type keepLog struct {
	state.Store
	writes [][]state.Write
}

func (s *keepLog) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	s.writes = append(s.writes, slices.Clone(writes))
	return s.Store.Commit(ctx, p, epoch, from, to, writes)
}

// TestProcessorKeepsExpiryWithinGrace: with the default IdleTTL an object's
// first write refreshes its expiry and its later ones (in this quick run,
// all within the grace) keep it; a store without expiry is never asked to
// keep one.
func TestProcessorKeepsExpiryWithinGrace(t *testing.T) {
	in, _ := truthLog(13, 4, 3)
	for _, ttl := range []time.Duration{720 * time.Hour, 0} {
		mem, err := state.NewMemory(state.MemoryConfig{IdleTTL: ttl}, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		st := &keepLog{Store: mem}
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
				case w.KeepExpiry && ttl == 0:
					t.Fatalf("no expiry: commit %d keeps the expiry of %s", i, w.Object)
				case w.KeepExpiry && !written[w.Object]:
					t.Fatalf("commit %d keeps the expiry of %s, written for the first time", i, w.Object)
				case !w.KeepExpiry && ttl > 0 && written[w.Object] && !strings.HasPrefix(w.Object, "#") && w.Object != reorderObject:
					t.Fatalf("commit %d refreshes the expiry of %s again within the grace", i, w.Object)
				case w.KeepExpiry:
					keeps++
				default:
					refreshes++
				}
				written[w.Object] = true
			}
		}
		if ttl > 0 && keeps == 0 {
			t.Fatalf("no write kept its expiry in %d commits (%d refreshes)", len(st.writes), refreshes)
		}
	}
}
