package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"log/slog"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// truthLog generates JSON observations of n objects whose content changes as
// Poisson processes with known rates, visited every hour for days days, and
// returns the log and the true rates per second.
func truthLog(seed uint64, n, days int) ([]byte, map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 99))
	truth := map[string]float64{}
	var evs []timedObs
	span := float64(days) * 86400
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("http://site%d.example/page/%d", i%7, i)
		// Mean change intervals log-uniform between 3 hours and 5 days.
		mean := 3 * 3600 * math.Exp(r.Float64()*math.Log(40))
		truth[name] = 1 / mean
		next := r.ExpFloat64() * mean
		var ts []float64
		for t := r.Float64() * 3600; t < span; t += 3600 {
			ts = append(ts, t)
		}
		evs = appendVisits(evs, name, ts, next, func() float64 { return r.ExpFloat64() * mean })
	}
	return encodeLog(evs), truth
}

func newTestProcessor(t *testing.T, cfg Config, store state.Store) (*Processor, *stream.MemorySink) {
	t.Helper()
	sink := stream.NewMemorySink()
	p, err := NewProcessor(noFutureCheck(cfg), store, sink, slog.New(slog.DiscardHandler), prometheus.NewRegistry(),
		func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	return p, sink
}

// noFutureCheck returns cfg without the MaxFuture check: the test clock
// stands at t0 while the simulated data run for days or months after it
// (TestProcessorRejectsFuture tests the check).
func noFutureCheck(cfg Config) Config {
	cfg.MaxFuture = 0
	return cfg
}

func newMemory(t *testing.T) *state.Memory {
	t.Helper()
	m, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runReader(t *testing.T, p *Processor, in []byte) {
	t.Helper()
	src := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0)
	if err := src.Run(context.Background(), p.Handle); err != nil {
		t.Fatal(err)
	}
}

func decodeEstimates(t *testing.T, vals map[string][]byte) map[string]records.Estimate {
	t.Helper()
	out := map[string]records.Estimate{}
	for k, v := range vals {
		var e records.Estimate
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[k] = e
	}
	return out
}

// TestProcessorRecoversTrueRates checks the whole object path (JSON →
// Object → estimate record) against the known truth: with 60 days of hourly
// visits, the 95% interval of the best estimate covers the true rate for
// about 95% of objects (at least 85% of 120: 3.4 binomial standard
// deviations below 95%), and the median error is small.
func TestProcessorRecoversTrueRates(t *testing.T) {
	in, truth := truthLog(7, 120, 60)
	cfg := DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	p, sink := newTestProcessor(t, cfg, newMemory(t))
	runReader(t, p, in)
	ests := decodeEstimates(t, sink.Latest(stream.TopicEstimates))
	if len(ests) != len(truth) {
		t.Fatalf("%d estimates for %d objects", len(ests), len(truth))
	}
	covered := 0
	var errs []float64
	for name, rate := range truth {
		e, ok := ests[name]
		if !ok || e.RatePerS == nil || e.CI95 == nil {
			t.Fatalf("%s: no best estimate with an interval: %+v", name, e)
		}
		if e.Kind != records.EstimateChange || e.Estimates["naive"] <= 0 || e.Estimates["cgm_improved"] <= 0 {
			t.Fatalf("%s: estimate record lacks estimators: %+v", name, e.Estimates)
		}
		if e.CI95[0] <= rate && rate <= e.CI95[1] {
			covered++
		}
		errs = append(errs, math.Abs(math.Log(*e.RatePerS/rate)))
	}
	sort.Float64s(errs)
	med := errs[len(errs)/2]
	t.Logf("coverage %d/%d, median |log ratio| %.3f", covered, len(truth), med)
	if covered < 102 {
		t.Errorf("95%% intervals cover the truth for %d of %d objects, want at least 102", covered, len(truth))
	}
	if med > 0.25 {
		t.Errorf("median |log(estimate/true)| = %.3f, want < 0.25", med)
	}
}

// TestEmitModesAgree: the last estimate published per key in update mode
// equals the estimate published at the end in final mode, whatever the
// batch size.
func TestEmitModesAgree(t *testing.T) {
	in, _ := truthLog(8, 30, 10)
	final := DefaultConfig()
	final.Emit, final.CacheObjects, final.CacheBytes = EmitFinal, 0, 0
	pf, sf := newTestProcessor(t, final, newMemory(t))
	runReader(t, pf, in)
	want := sf.Latest(stream.TopicEstimates)
	for _, bs := range []int{1, 7, 5000} {
		upd := DefaultConfig()
		upd.Model.EmitInterval = 0
		upd.BatchSize, upd.CacheObjects = bs, 5 // a small cache forces store reads
		pu, su := newTestProcessor(t, upd, newMemory(t))
		runReader(t, pu, in)
		got := su.Latest(stream.TopicEstimates)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("batch size %d: update-mode estimates differ from final-mode ones", bs)
		}
	}
}

func TestBadInputGoesToDeadLetter(t *testing.T) {
	good := `{"object":"http://a.example/","time":"2026-01-01T00:00:00Z","kind":"access"}`
	in := strings.Join([]string{good, `{"object":`, `{"object":"x","time":"2026-01-01T00:00:01Z","kind":"teleport"}`,
		strings.Replace(good, "00:00:00", "00:00:02", 1)}, "\n")
	cfg := DefaultConfig()
	p, sink := newTestProcessor(t, cfg, newMemory(t))
	runReader(t, p, []byte(in))
	dl := sink.Messages(stream.TopicDeadLetter)
	if len(dl) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dl))
	}
	for i, m := range dl {
		var d records.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.Reason != "decode" || d.Stage != "aggregator" || d.Error == "" || d.Position != fmt.Sprintf("observations/0@%d", i+1) {
			t.Errorf("dead letter %d: %+v", i, d)
		}
	}
	ests := decodeEstimates(t, sink.Latest(stream.TopicEstimates))
	e, ok := ests["http://a.example/"+AccessKeySuffix]
	if !ok || e.Observations != 2 {
		t.Fatalf("the good lines around the bad ones were not both applied: %+v", ests)
	}
	if p.Committed() != 4 {
		t.Errorf("committed %d messages, want 4", p.Committed())
	}
}

// TestFencedPartitionIsNotProcessed: a handler whose generation is older
// than the partition's stored epoch writes nothing while its generation
// lasts (here: its context ends within the takeover delay).
func TestFencedPartitionIsNotProcessed(t *testing.T) {
	store := newMemory(t)
	part := state.Partition{Topic: stream.TopicObservations, ID: 0}
	if _, err := store.Claim(context.Background(), part, 5); err != nil {
		t.Fatal(err)
	}
	in, _ := truthLog(9, 3, 2)
	cfg := DefaultConfig()
	cfg.TakeoverDelay = time.Hour
	p, sink := newTestProcessor(t, cfg, store)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	src := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0)
	if err := src.Run(ctx, p.Handle); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.Messages(stream.TopicEstimates)); n != 0 || p.Committed() != 0 {
		t.Fatalf("fenced handler published %d estimates and committed %d messages", n, p.Committed())
	}
	next, err := store.Claim(context.Background(), part, 5)
	if err != nil || next != -1 {
		t.Fatalf("stored offset %d (%v), want none", next, err)
	}
}

// TestTakeoverAfterGroupRestart: when the stored epoch is above the
// handler's generation and the generation stays current for the takeover
// delay (a consumer group deleted and created again), the handler takes the
// partition over and processes it; the earlier epoch is fenced.
func TestTakeoverAfterGroupRestart(t *testing.T) {
	store := newMemory(t)
	part := state.Partition{Topic: stream.TopicObservations, ID: 0}
	if _, err := store.Claim(context.Background(), part, 5); err != nil {
		t.Fatal(err)
	}
	in, _ := truthLog(9, 3, 2)
	cfg := DefaultConfig()
	cfg.TakeoverDelay = 10 * time.Millisecond
	p, _ := newTestProcessor(t, cfg, store)
	runReader(t, p, in)
	if p.Committed() != int64(bytes.Count(in, []byte("\n"))) {
		t.Fatalf("committed %d of %d messages after the takeover", p.Committed(), bytes.Count(in, []byte("\n")))
	}
	if err := store.Commit(context.Background(), part, 5, p.Committed(), p.Committed()+1, nil); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("the earlier epoch could still commit: %v", err)
	}
}

// TestResumeFromStoredOffset: a second run over the same input with the
// same store applies nothing twice: the reader seeks past what was
// committed.
func TestResumeFromStoredOffset(t *testing.T) {
	in, _ := truthLog(10, 5, 3)
	store := newMemory(t)
	cfg := DefaultConfig()
	p1, s1 := newTestProcessor(t, cfg, store)
	runReader(t, p1, in)
	p2, s2 := newTestProcessor(t, cfg, store)
	runReader(t, p2, in)
	if p2.Committed() != 0 || len(s2.Messages(stream.TopicEstimates)) != 0 {
		t.Fatalf("replay committed %d and published %d", p2.Committed(), len(s2.Messages(stream.TopicEstimates)))
	}
	if p1.Committed() == 0 || len(s1.Messages(stream.TopicEstimates)) == 0 {
		t.Fatal("first run did nothing")
	}
}

// TestStateIndependentOfBatching: for a given configuration the stored
// states are byte-identical whatever the batch size and cache size, and
// throttled publication publishes fewer estimates.
func TestStateIndependentOfBatching(t *testing.T) {
	in, _ := truthLog(11, 20, 5)
	published := map[time.Duration]int{}
	for _, emit := range []time.Duration{0, 3 * time.Hour, 24 * time.Hour} {
		var want map[string][]byte
		for _, c := range []struct{ batch, cache int }{{1, 3}, {13, 200000}, {256, 1}, {5000, 0}} {
			cfg := DefaultConfig()
			cfg.BatchSize, cfg.CacheObjects, cfg.Model.EmitInterval = c.batch, c.cache, emit
			store := newMemory(t)
			p, sink := newTestProcessor(t, cfg, store)
			runReader(t, p, in)
			snap, err := store.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: 0})
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = snap.Objects
				published[emit] = len(sink.Messages(stream.TopicEstimates))
			} else if !reflect.DeepEqual(snap.Objects, want) {
				t.Errorf("emit %s, batch %d, cache %d: stored states differ from batch 1", emit, c.batch, c.cache)
			}
		}
	}
	// Hourly visits, batch size 1: every visit publishes with interval 0,
	// about every third with 3h and every 24th with a day.
	if !(published[3*time.Hour] < published[0]/2 && published[24*time.Hour] < published[3*time.Hour]/4) {
		t.Errorf("published estimates %v: throttling had no effect", published)
	}
}

// lostReplyStore applies every n-th commit but reports it as a lost reply
// that the retry then finds applied (state.ErrAlreadyCommitted).
type lostReplyStore struct {
	state.Store
	n, calls int
}

func (s *lostReplyStore) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	if err := s.Store.Commit(ctx, p, epoch, from, to, writes); err != nil {
		return err
	}
	s.calls++
	if s.calls%s.n == 0 {
		return fmt.Errorf("%w: %w", state.ErrAlreadyCommitted, state.ErrOffsetMismatch)
	}
	return nil
}

// TestAlreadyCommittedIsSuccess: a commit whose reply was lost and that the
// store reports as already applied is treated as done; the partition goes
// on and the states equal a run without lost replies.
func TestAlreadyCommittedIsSuccess(t *testing.T) {
	in, _ := truthLog(13, 10, 3)
	part := state.Partition{Topic: stream.TopicObservations, ID: 0}
	run := func(lost bool) (map[string][]byte, int64) {
		cfg := DefaultConfig()
		cfg.BatchSize = 50
		mem := newMemory(t)
		var st state.Store = mem
		if lost {
			st = &lostReplyStore{Store: mem, n: 3}
		}
		p, _ := newTestProcessor(t, cfg, st)
		runReader(t, p, in)
		snap, err := mem.Snapshot(context.Background(), part)
		if err != nil {
			t.Fatal(err)
		}
		return snap.Objects, p.Committed()
	}
	want, wantN := run(false)
	got, gotN := run(true)
	if gotN != wantN || !reflect.DeepEqual(got, want) {
		t.Fatalf("with lost replies: committed %d (want %d), states equal: %v", gotN, wantN, reflect.DeepEqual(got, want))
	}
}
