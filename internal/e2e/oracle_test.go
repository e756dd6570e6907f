package e2e

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// memClaim serves one partition's messages in batches of 97 (or batch),
// then io.EOF-less idleness: it reports revocation, so the reorder buffer
// is not flushed (as a service partition that is caught up).
type memClaim struct {
	msgs  []stream.Message
	pos   int
	batch int
}

func (c *memClaim) Topic() string         { return obsTopic }
func (c *memClaim) Partition() int32      { return 0 }
func (c *memClaim) Generation() int64     { return 1 }
func (c *memClaim) MarkCommitted(_ int64) {}
func (c *memClaim) SeekTo(off int64) error {
	c.pos = int(max(off, 0))
	return nil
}
func (c *memClaim) Fetch(_ context.Context, n int) ([]stream.Message, error) {
	if c.pos >= len(c.msgs) {
		return nil, stream.ErrRevoked
	}
	b := c.batch
	if b == 0 {
		b = 97
	}
	k := min(c.pos+min(n, b), len(c.msgs))
	out := c.msgs[c.pos:k]
	c.pos = k
	return out, nil
}

// TestOracleMatchesProcessor checks the fault tests' oracle (its model of
// the reorder buffer included) against the processor in process, on the
// out-of-order workload, in a second: the process-level tests rely on it.
func TestOracleMatchesProcessor(t *testing.T) {
	w := genWorkload(seedFromEnv()+3, 20000)
	disorder(w, seedFromEnv()+3)
	msgs := make([]stream.Message, len(w.Obs))
	place := map[int32][]placed{}
	for i := range w.Obs {
		msgs[i] = stream.Message{Topic: obsTopic, Offset: int64(i), Key: []byte(w.Obs[i].Object), Value: w.Values[i]}
		place[0] = append(place[0], placed{int64(i), i})
	}
	st, err := state.NewMemory(state.MemoryConfig{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg := aggregate.DefaultConfig()
	cfg.Model.EmitInterval, cfg.Model.ReportPeriod = emitInterval, reportPeriod
	cfg.IdleRelease = 0
	p, err := aggregate.NewProcessor(cfg, st, stream.NewMemorySink(), slog.New(slog.DiscardHandler), prometheus.NewRegistry(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(context.Background(), &memClaim{msgs: msgs}); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	want := oracle(w, obsTopic, place, map[int32]int64{0: int64(len(msgs))})
	part := state.Partition{Topic: obsTopic}
	s := p.Stats()
	t.Logf("processor: %+v", s)
	if s.Late == 0 || s.Reordered == 0 {
		t.Errorf("the workload has %d late and %d reordered observations; want some of each", s.Late, s.Reordered)
	}
	bad := 0
	for i := range w.Obs {
		name := w.Obs[i].Object
		k := objectKey(obsTopic, 0, name)
		v, _ := st.Get(context.Background(), part, []string{name}, nil)
		if string(v[0]) != want[k] {
			bad++
			if bad == 1 {
				var a, b aggregate.Object
				_ = a.DecodeBinary(v[0])
				_ = b.DecodeBinary([]byte(want[k]))
				t.Errorf("%s: processor and oracle differ:\nprocessor %.300v\noracle    %.300v", name, a, b)
			}
		}
	}
	v, _ := st.Get(context.Background(), part, []string{aggregate.ReorderObject}, nil)
	if string(v[0]) != want[objectKey(obsTopic, 0, aggregate.ReorderObject)] {
		t.Errorf("reorder position %x, oracle %x", v[0], want[objectKey(obsTopic, 0, aggregate.ReorderObject)])
	}
	if bad > 0 {
		t.Errorf("%d observations' objects differ", bad)
	}
}
