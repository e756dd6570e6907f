package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// sliceSource is a one-partition Source over messages in memory whose
// claim can be cut: Fetch returns batches of random sizes (1..maxBatch)
// and, at offset stop, ErrRevoked (the partition is taken away, as in a
// crash or rebalance: nothing more is fetched, nothing flushed); at the
// end of the messages io.EOF. SeekTo goes anywhere, like a Kafka claim.
type sliceSource struct {
	msgs     []stream.Message
	stop     int64
	maxBatch int
	rng      *rand.Rand
	// block: at the end of the messages, wait for the context (a stream
	// without more input) instead of io.EOF.
	block bool
}

func (s *sliceSource) Run(ctx context.Context, handle func(context.Context, stream.Claim) error) error {
	return handle(ctx, &sliceClaim{s: s})
}

type sliceClaim struct {
	s   *sliceSource
	pos int64
}

func (c *sliceClaim) Topic() string         { return stream.TopicObservations }
func (c *sliceClaim) Partition() int32      { return 0 }
func (c *sliceClaim) Generation() int64     { return 1 }
func (c *sliceClaim) MarkCommitted(_ int64) {}
func (c *sliceClaim) SeekTo(off int64) error {
	c.pos = max(off, 0)
	return nil
}
func (c *sliceClaim) Fetch(ctx context.Context, maxN int) ([]stream.Message, error) {
	if c.pos >= c.s.stop {
		return nil, stream.ErrRevoked
	}
	if c.pos >= int64(len(c.s.msgs)) {
		if c.s.block {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, io.EOF
	}
	n := min(int64(1+c.s.rng.IntN(c.s.maxBatch)), int64(maxN), c.s.stop-c.pos, int64(len(c.s.msgs))-c.pos)
	out := c.s.msgs[c.pos : c.pos+n]
	c.pos += n
	return out, nil
}

// disordered returns the lines of truthLog as they might arrive: each
// observation delayed by up to 40 minutes, and one in 50 by 4 to 6 hours
// (beyond the 1h allowed lateness: late).
func disordered(seed uint64, n, days int) [][]byte {
	in, _ := truthLog(seed, n, days)
	r := rand.New(rand.NewPCG(seed, 7))
	type arr struct {
		at   float64
		line []byte
	}
	var arrs []arr
	lastLate := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var o records.Observation
		if err := json.Unmarshal(l, &o); err != nil {
			panic(err)
		}
		d := r.Float64() * 2400
		// Late ones are at least two hourly visits behind their object
		// (not among its last three hours, never two in a row), so that
		// they are late for it.
		late := r.IntN(50) == 0 && o.Time.Before(t0.Add(time.Duration(days)*24*time.Hour-3*time.Hour)) && !lastLate[o.Object]
		lastLate[o.Object] = late
		if late {
			d = 4*3600 + r.Float64()*2*3600
		}
		arrs = append(arrs, arr{float64(o.Time.Unix()) + d, l})
	}
	sort.SliceStable(arrs, func(i, j int) bool { return arrs[i].at < arrs[j].at })
	out := make([][]byte, len(arrs))
	for i, a := range arrs {
		out[i] = a.line
	}
	return out
}

func messages(lines [][]byte) []stream.Message {
	out := make([]stream.Message, len(lines))
	for i, l := range lines {
		out[i] = stream.Message{Topic: stream.TopicObservations, Offset: int64(i), Value: l}
	}
	return out
}

// states returns every object's stored value.
func states(t *testing.T, st state.Store, names []string) map[string]string {
	t.Helper()
	vals, err := st.Get(context.Background(), state.Partition{Topic: stream.TopicObservations}, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, v := range vals {
		if v != nil {
			out[names[i]] = string(v)
		}
	}
	return out
}

func objectNames(lines [][]byte) []string {
	seen := map[string]bool{}
	for _, l := range lines {
		var o records.Observation
		_ = json.Unmarshal(l, &o)
		seen[o.Object] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestReorderBufferAppliesInEventTimeOrder: observations arriving up to
// 40 minutes out of order (allowed lateness 1h) give, whatever the batch
// sizes, the same states as the non-late observations applied sorted by
// time; the late ones (4-6 hours, two hourly visits of their object
// behind) go to the late topic with the reason and are counted.
func TestReorderBufferAppliesInEventTimeOrder(t *testing.T) {
	lines := disordered(21, 40, 6)
	msgs := messages(lines)
	names := objectNames(lines)
	run := func(seed uint64, maxBatch int) (map[string]string, []stream.Message, Stats) {
		cfg := DefaultConfig()
		cfg.BatchSize = 5000
		st := newMemory(t)
		p, sink := newTestProcessor(t, cfg, st)
		src := &sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: maxBatch, rng: rand.New(rand.NewPCG(seed, 1))}
		if err := src.Run(context.Background(), p.Handle); err != nil {
			t.Fatal(err)
		}
		return states(t, st, names), sink.Messages(TopicLate), p.Stats()
	}
	ref, refLate, refStats := run(1, 1)
	if refStats.Late == 0 || int(refStats.Late) != len(refLate) {
		t.Fatalf("late: counted %d, written %d; want equal and > 0", refStats.Late, len(refLate))
	}
	if refStats.Reordered == 0 {
		t.Fatal("no observation counted as reordered")
	}
	lateSet := map[string]bool{}
	for _, m := range refLate {
		var d records.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.Reason != ReasonLate || d.Error == "" {
			t.Fatalf("late record %+v", d)
		}
		lateSet[d.Input] = true
	}
	for _, mb := range []int{7, 100, 5000} {
		got, late, _ := run(uint64(mb), mb)
		if len(late) != len(refLate) {
			t.Errorf("batches up to %d: %d late, reference %d", mb, len(late), len(refLate))
		}
		if !mapsEqual(got, ref) {
			t.Errorf("batches up to %d: states differ from the reference", mb)
		}
	}
	// The reference equals the non-late observations applied in time
	// order without the buffer.
	var sorted [][]byte
	for _, l := range lines {
		if !lateSet[string(l)] {
			sorted = append(sorted, l)
		}
	}
	slices.SortStableFunc(sorted, func(a, b []byte) int {
		var x, y records.Observation
		_ = json.Unmarshal(a, &x)
		_ = json.Unmarshal(b, &y)
		return x.Time.Compare(y.Time)
	})
	cfg := DefaultConfig()
	cfg.DisableReorder = true
	st := newMemory(t)
	p, _ := newTestProcessor(t, cfg, st)
	runReader(t, p, append(bytes.Join(sorted, []byte("\n")), '\n'))
	if s := p.Stats(); s.Late != 0 || s.Reordered != 0 {
		t.Fatalf("sorted input without the buffer: %d late, %d reordered", s.Late, s.Reordered)
	}
	if !mapsEqual(states(t, st, names), ref) {
		t.Fatal("the buffer's states differ from the sorted non-late observations applied in order")
	}
}

// TestReorderBufferSurvivesRestart: the partition is taken away at a
// random offset (observations are held in the buffer at that moment), and
// a new handler with the same store resumes: the final states and the
// late records are those of an uninterrupted run — nothing held is lost,
// nothing applied twice.
func TestReorderBufferSurvivesRestart(t *testing.T) {
	lines := disordered(22, 30, 5)
	msgs := messages(lines)
	names := objectNames(lines)
	cfg := DefaultConfig()
	st0 := newMemory(t)
	p0, s0 := newTestProcessor(t, cfg, st0)
	if err := (&sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: 50, rng: rand.New(rand.NewPCG(1, 1))}).Run(context.Background(), p0.Handle); err != nil {
		t.Fatal(err)
	}
	ref, refLate := states(t, st0, names), len(s0.Messages(TopicLate))
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 6 {
		st := newMemory(t)
		stops := []int64{int64(rng.IntN(len(msgs))), int64(rng.IntN(len(msgs)))}
		slices.Sort(stops)
		stops = append(stops, 1<<62)
		late, applied := 0, int64(0)
		held := 0
		for i, stop := range stops {
			p, sink := newTestProcessor(t, cfg, st)
			src := &sliceSource{msgs: msgs, stop: stop, maxBatch: 1 + rng.IntN(80), rng: rand.New(rand.NewPCG(uint64(trial), uint64(i)))}
			if err := src.Run(context.Background(), p.Handle); err != nil {
				t.Fatal(err)
			}
			late += len(sink.Messages(TopicLate))
			applied += p.Stats().Applied
			if i == 0 {
				v, _ := st.Get(context.Background(), state.Partition{Topic: stream.TopicObservations}, []string{reorderObject}, nil)
				if v[0] != nil {
					rb := newReorderBuf(cfg.ReorderWindow)
					seek, _ := rb.restore(v[0], stop)
					held = int(stop - seek)
				}
			}
		}
		if late != refLate {
			t.Errorf("trial %d (stops %v): %d late records, uninterrupted run %d", trial, stops[:2], late, refLate)
		}
		if !mapsEqual(states(t, st, names), ref) {
			t.Errorf("trial %d (stops %v, %d messages re-read for the buffer): states differ from an uninterrupted run", trial, stops[:2], held)
		}
		t.Logf("trial %d: stops %v, re-read %d messages to refill the buffer", trial, stops[:2], held)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestIdleRelease: a stream that stops is not held back for ever: after
// IdleRelease without input the partition applies what its buffer holds,
// reaching the states of a finite run.
func TestIdleRelease(t *testing.T) {
	lines := disordered(23, 10, 3)
	msgs := messages(lines)
	names := objectNames(lines)
	cfg := DefaultConfig()
	ref := newMemory(t)
	p0, _ := newTestProcessor(t, cfg, ref)
	if err := (&sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: 100, rng: rand.New(rand.NewPCG(1, 2))}).Run(context.Background(), p0.Handle); err != nil {
		t.Fatal(err)
	}
	want := p0.Stats().Applied
	cfg.IdleRelease, cfg.IdleCheck = 20*time.Millisecond, 0
	st := newMemory(t)
	p, _ := newTestProcessor(t, cfg, st)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&sliceSource{msgs: msgs, stop: 1 << 62, maxBatch: 100, rng: rand.New(rand.NewPCG(1, 2)), block: true}).Run(ctx, p.Handle)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Applied < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := p.Stats().Applied; got != want {
		t.Fatalf("applied %d after the idle release, a finite run %d", got, want)
	}
	if !mapsEqual(states(t, st, names), states(t, ref, names)) {
		t.Fatal("states after the idle release differ from a finite run's")
	}
}

// TestReorderBufOrderAgainstSort drives one reorderBuf with arrivals that
// are mostly in event-time order (the run), sometimes behind (the heap),
// sometimes at an equal time, and releases at random watermarks and at
// random full flushes; every release must be exactly the held observations
// the watermark passed, in (time, offset) order — what a sort of the held
// keys gives — and len and minOffset must match the reference after every
// step, including across the run's compaction (more than 1024 released).
func TestReorderBufOrderAgainstSort(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		tol := int64(20 + rng.IntN(500))
		rb := newReorderBuf(time.Duration(tol) * time.Millisecond)
		type key struct{ t, off int64 }
		var ref []key // held, in any order
		base := time.Unix(1_700_000_000, 0)
		var now int64
		var released, heaped int
		for off := int64(0); off < 6000; off++ {
			now += int64(rng.IntN(5)) // 0: an equal time
			ts := now
			if rng.IntN(10) == 0 { // behind, within the window
				ts -= int64(rng.IntN(int(tol)))
			}
			o := records.Observation{Object: "o", Time: base.Add(time.Duration(ts) * time.Millisecond), Offset: off}
			if rb.late(o.Time.UnixMilli()) {
				t.Fatalf("seed %d: an observation within the window is late", seed)
			}
			before := len(rb.held)
			rb.push(&o, off)
			heaped += len(rb.held) - before
			ref = append(ref, key{o.Time.UnixMilli(), off})
			if rng.IntN(50) != 0 && off != 5999 {
				continue
			}
			all := rng.IntN(8) == 0 || off == 5999
			w, _ := rb.watermark()
			slices.SortFunc(ref, func(a, b key) int {
				if a.t != b.t {
					return int(a.t - b.t)
				}
				return int(a.off - b.off)
			})
			n := len(ref)
			if !all {
				n = sort.Search(len(ref), func(i int) bool { return ref[i].t >= w })
			}
			got, offs := rb.release(nil, nil, all)
			if len(got) != n {
				t.Fatalf("seed %d offset %d: released %d, want %d", seed, off, len(got), n)
			}
			for i := range got {
				if offs[i] != ref[i].off || got[i].Time.UnixMilli() != ref[i].t || got[i].Offset != ref[i].off {
					t.Fatalf("seed %d: release %d is (%d, %d), want (%d, %d)", seed, i, got[i].Time.UnixMilli(), offs[i], ref[i].t, ref[i].off)
				}
			}
			released += n
			ref = ref[n:]
			if rb.len() != len(ref) {
				t.Fatalf("seed %d: len %d, want %d", seed, rb.len(), len(ref))
			}
			wantMin := off + 1
			for _, k := range ref {
				wantMin = min(wantMin, k.off)
			}
			if m := rb.minOffset(off + 1); m != wantMin {
				t.Fatalf("seed %d: minOffset %d, want %d", seed, m, wantMin)
			}
		}
		// The scenario must exercise both places and the compaction.
		if released < 2500 || heaped < 100 {
			t.Fatalf("seed %d: %d released, %d held in the heap: the scenario does not exercise the buffer", seed, released, heaped)
		}
	}
}
