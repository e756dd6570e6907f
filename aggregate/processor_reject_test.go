package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

const (
	rejectedObject = "http://rejected.example/"
	goodObject     = "http://good.example/"
)

// accessLines returns n access observations alternating between the
// rejected and the good object, a second apart.
func accessLines(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		obj := rejectedObject
		if i%2 == 1 {
			obj = goodObject
		}
		fmt.Fprintf(&b, `{"object":%q,"time":%q,"kind":"access"}`+"\n", obj, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339))
	}
	return b.Bytes()
}

// flakySink fails the first failDL Writes that hold a dead letter with a
// transient error.
type flakySink struct {
	stream.Sink
	mu     sync.Mutex
	failDL int
}

func (s *flakySink) Write(ctx context.Context, msgs ...stream.Message) error {
	s.mu.Lock()
	fail := false
	if s.failDL > 0 {
		for _, m := range msgs {
			if m.Topic == stream.TopicDeadLetter {
				fail = true
				s.failDL--
				break
			}
		}
	}
	s.mu.Unlock()
	if fail {
		return errors.New("transient: broker unavailable")
	}
	return s.Sink.Write(ctx, msgs...)
}

// runReaderBounded is runReader with a deadline: a partition that retries
// forever fails the test instead of hanging it.
func runReaderBounded(t *testing.T, p *Processor, in []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0).Run(ctx, p.Handle)
	if ctx.Err() != nil {
		t.Fatalf("the input was not processed within 20s (retrying forever?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// newRejectProcessor returns a processor over sink with the registry of its
// metrics: batches of 2, every estimate due.
func newRejectProcessor(t *testing.T, cfg Config, store state.Store, sink stream.Sink) (*Processor, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := NewProcessor(cfg, store, sink, slog.New(slog.DiscardHandler), reg, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	return p, reg
}

func rejectConfig() Config {
	cfg := DefaultConfig()
	cfg.BatchSize = 2
	cfg.DisableReorder = true // batch mechanics: each batch applies its own observations
	cfg.Model.EmitInterval = 0
	cfg.RetryBackoff = time.Millisecond
	return cfg
}

// rejectKey refuses the estimates of rejectedObject as too large.
func rejectKey(m stream.Message) string {
	if m.Topic == stream.TopicEstimates && string(m.Key) == rejectedObject+AccessKeySuffix {
		return "MESSAGE_TOO_LARGE"
	}
	return ""
}

// counterValue returns the value of c.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func decodeDeadLetters(t *testing.T, msgs []stream.Message) []records.DeadLetter {
	t.Helper()
	var out []records.DeadLetter
	for _, m := range msgs {
		var d records.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != d.Position {
			t.Errorf("dead letter key %q, position %q", m.Key, d.Position)
		}
		out = append(out, d)
	}
	return out
}

// TestRejectedOutputBecomesDeadLetter: an estimate the sink refuses
// permanently is replaced by a dead letter naming its topic, key, size and
// reason (with a bounded prefix of its value); the other outputs are
// written, every batch commits and the next batches go on. A transient
// failure of the dead-letter write is retried.
func TestRejectedOutputBecomesDeadLetter(t *testing.T) {
	in := accessLines(6) // 3 batches of 2
	// Reference: the same input through a sink that refuses nothing.
	ref, refSink := newTestProcessor(t, rejectConfig(), newMemory(t))
	runReader(t, ref, in)
	var wantValues [][]byte
	var wantGood []string
	for _, m := range refSink.Messages(stream.TopicEstimates) {
		if string(m.Key) == rejectedObject+AccessKeySuffix {
			wantValues = append(wantValues, m.Value)
		} else {
			wantGood = append(wantGood, string(m.Value))
		}
	}
	if len(wantValues) != 3 || len(wantGood) != 3 {
		t.Fatalf("reference run published %d estimates of the rejected object and %d of the good one, want 3 and 3", len(wantValues), len(wantGood))
	}

	mem := stream.NewMemorySink()
	mem.RejectIf(rejectKey)
	store := newMemory(t)
	p, reg := newRejectProcessor(t, rejectConfig(), store, &flakySink{Sink: mem, failDL: 2})
	runReaderBounded(t, p, in)

	dls := decodeDeadLetters(t, mem.Messages(stream.TopicDeadLetter))
	if len(dls) != 3 {
		t.Fatalf("%d dead letters, want 3 (one per batch): %+v", len(dls), dls)
	}
	for i, d := range dls {
		wantPos := fmt.Sprintf("observations/0@%d-%d", 2*i, 2*i+1)
		if d.Reason != ReasonOutputRejected || d.Stage != "aggregator" || d.Format != stream.TopicEstimates || d.Position != wantPos || !d.Time.Equal(t0) {
			t.Errorf("dead letter %d: %+v, want reason %s, format %s, position %s", i, d, ReasonOutputRejected, stream.TopicEstimates, wantPos)
		}
		for _, part := range []string{"MESSAGE_TOO_LARGE", fmt.Sprintf("%q", rejectedObject+AccessKeySuffix), fmt.Sprintf("value of %d bytes", len(wantValues[i]))} {
			if !strings.Contains(d.Error, part) {
				t.Errorf("dead letter %d: error %q does not name %s", i, d.Error, part)
			}
		}
		want := wantValues[i][:min(len(wantValues[i]), maxRejectedShown)]
		if d.Input != string(want) {
			t.Errorf("dead letter %d: input %q, want %q", i, d.Input, want)
		}
	}
	var good []string
	for _, m := range mem.Messages(stream.TopicEstimates) {
		if string(m.Key) == rejectedObject+AccessKeySuffix {
			t.Errorf("a rejected estimate was written: %s", m.Value)
		}
		good = append(good, string(m.Value))
	}
	if strings.Join(good, "\n") != strings.Join(wantGood, "\n") {
		t.Errorf("estimates of the good object:\n%s\nwant\n%s", strings.Join(good, "\n"), strings.Join(wantGood, "\n"))
	}
	if p.Committed() != 6 {
		t.Errorf("committed %d messages, want 6", p.Committed())
	}
	snap, err := store.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: 0})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Next != 6 {
		t.Errorf("stored next offset %d, want 6", snap.Next)
	}
	if got := counterValue(t, p.metrics.rejected.WithLabelValues(stream.TopicEstimates, "MESSAGE_TOO_LARGE")); got != 3 {
		t.Errorf("outputs_rejected_total{estimates,MESSAGE_TOO_LARGE} = %v, want 3", got)
	}
	if got := counterValue(t, p.metrics.deadLetters.WithLabelValues(ReasonOutputRejected)); got != 3 {
		t.Errorf("dead_letters_total{output_rejected} = %v, want 3", got)
	}
	if got := counterValue(t, p.metrics.retries.WithLabelValues("write dead letters")); got != 2 {
		t.Errorf("retries_total{write dead letters} = %v, want 2", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The known series exist from the start at 0; only one moved.
	series, nonZero := 0, 0
	for _, mf := range mfs {
		if mf.GetName() == "changerate_aggregator_outputs_rejected_total" {
			series = len(mf.GetMetric())
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() != 0 {
					nonZero++
				}
			}
		}
	}
	if nonZero != 1 || series < 4 {
		t.Errorf("outputs_rejected_total has %d non-zero series of %d in the registry, want 1 of at least 4 (pre-initialised)", nonZero, series)
	}
}

// TestRejectedOutputLargeValueTruncated: the dead letter of a huge
// rejected output holds only a prefix of its value and key.
func TestRejectedOutputLargeValueTruncated(t *testing.T) {
	mem := stream.NewMemorySink()
	mem.RejectIf(func(m stream.Message) string {
		if len(m.Value) > 1<<20 {
			return "MESSAGE_TOO_LARGE"
		}
		return ""
	})
	p, _ := newRejectProcessor(t, rejectConfig(), newMemory(t), mem)
	w := &worker{p: p, part: state.Partition{Topic: stream.TopicObservations, ID: 3}, log: p.log}
	huge := stream.Message{Topic: stream.TopicAlerts, Key: bytes.Repeat([]byte("k"), 5000), Value: bytes.Repeat([]byte("v"), 2<<20)}
	small := stream.Message{Topic: stream.TopicAlerts, Key: []byte("s"), Value: []byte(`{"ok":true}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.writeOutputs(ctx, []stream.Message{small, huge, small}, nil, "observations/3@7-9", true); err != nil {
		t.Fatal(err)
	}
	if n := len(mem.Messages(stream.TopicAlerts)); n != 2 {
		t.Fatalf("%d alerts written, want 2", n)
	}
	msgs := mem.Messages(stream.TopicDeadLetter)
	if len(msgs) != 1 {
		t.Fatalf("%d dead letters, want 1", len(msgs))
	}
	if len(msgs[0].Value) > 4*maxRejectedShown {
		t.Errorf("dead letter of %d bytes", len(msgs[0].Value))
	}
	d := decodeDeadLetters(t, msgs)[0]
	if d.Input != strings.Repeat("v", maxRejectedShown) || d.Format != stream.TopicAlerts || d.Position != "observations/3@7-9" ||
		!strings.Contains(d.Error, fmt.Sprintf("value of %d bytes", 2<<20)) || !strings.Contains(d.Error, `"`+strings.Repeat("k", maxRejectedShown)+`"`) {
		t.Errorf("dead letter: %+v", d)
	}
}

// TestRejectedDeadLetterStopsPartition: a dead letter the sink refuses
// (whether it replaces a rejected output or reports an undecodable input)
// stops the partition with an error wrapping stream.ErrFatal, after one
// attempt, without committing the batch; it is counted.
func TestRejectedDeadLetterStopsPartition(t *testing.T) {
	cases := []struct {
		name       string
		in         []byte
		wantCounts map[[2]string]float64 // (topic, reason) → outputs_rejected_total
	}{
		{"dead letter of a rejected output", accessLines(6), map[[2]string]float64{
			{stream.TopicEstimates, "MESSAGE_TOO_LARGE"}: 1,
			{stream.TopicDeadLetter, "POLICY_VIOLATION"}: 1,
		}},
		{"dead letter of an undecodable input", append([]byte("garbage\n"), accessLines(5)...), map[[2]string]float64{
			{stream.TopicDeadLetter, "POLICY_VIOLATION"}: 1,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := stream.NewMemorySink()
			var mu sync.Mutex
			attempts := 0
			mem.RejectIf(func(m stream.Message) string {
				if m.Topic == stream.TopicDeadLetter {
					mu.Lock()
					attempts++
					mu.Unlock()
					return "POLICY_VIOLATION"
				}
				return rejectKey(m)
			})
			store := newMemory(t)
			p, _ := newRejectProcessor(t, rejectConfig(), store, mem)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(tc.in), 0).Run(ctx, p.Handle)
			if ctx.Err() != nil {
				t.Fatalf("Handle did not stop: %v", err)
			}
			if !errors.Is(err, stream.ErrFatal) || !errors.Is(err, stream.ErrRejected) || !strings.Contains(err.Error(), "aggregate: observations/0") {
				t.Fatalf("Run: %v, want an aggregate error wrapping ErrFatal and ErrRejected", err)
			}
			if attempts != 1 {
				t.Errorf("%d attempts to write a refused dead letter, want 1", attempts)
			}
			if p.Committed() != 0 {
				t.Errorf("committed %d messages, want 0", p.Committed())
			}
			snap, serr := store.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: 0})
			if serr != nil {
				t.Fatal(serr)
			}
			if snap.Next != -1 {
				t.Errorf("stored next offset %d, want none (-1)", snap.Next)
			}
			for k, want := range tc.wantCounts {
				if got := counterValue(t, p.metrics.rejected.WithLabelValues(k[0], k[1])); got != want {
					t.Errorf("outputs_rejected_total%v = %v, want %v", k, got, want)
				}
			}
		})
	}
}

// TestRejectedFinalEstimate: in EmitFinal mode a rejected final estimate
// is dead-lettered at "topic/partition@final" and the others are written.
func TestRejectedFinalEstimate(t *testing.T) {
	cfg := rejectConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	mem := stream.NewMemorySink()
	mem.RejectIf(rejectKey)
	p, _ := newRejectProcessor(t, cfg, newMemory(t), mem)
	runReaderBounded(t, p, accessLines(4))
	ests := mem.Latest(stream.TopicEstimates)
	if _, ok := ests[goodObject+AccessKeySuffix]; !ok || len(ests) != 1 {
		t.Fatalf("final estimates for %d keys (%v), want only the good object's", len(ests), ests)
	}
	dls := decodeDeadLetters(t, mem.Messages(stream.TopicDeadLetter))
	if len(dls) != 1 || dls[0].Position != "observations/0@final" || dls[0].Reason != ReasonOutputRejected || dls[0].Format != stream.TopicEstimates {
		t.Fatalf("dead letters %+v, want one output_rejected at observations/0@final", dls)
	}
}

// TestProcessorRejectsFuture: an observation more than Config.MaxFuture
// ahead of the Processor's clock is a dead letter with reason "future" (its
// position, how far ahead, the bound), counted in Stats.Future and in
// dead_letters_total{reason="future"}, and is not applied: the object's
// estimate stays as of its last observation in time, and the visits after
// the bad one are not late. Within the bound, or with MaxFuture 0,
// it is applied, and then makes every later visit late (the harm the bound
// prevents).
func TestProcessorRejectsFuture(t *testing.T) {
	visit := func(at time.Time, digest string) string {
		return fmt.Sprintf(`{"object":"http://y.example/","time":%q,"kind":"visit","digest":%q}`+"\n", at.Format(time.RFC3339), digest)
	}
	// The clock stands at t0 + 6h; the visits are hourly from t0, and the
	// second one's time is a typo (a century ahead).
	now := t0.Add(6 * time.Hour)
	in := visit(t0, "A") + visit(t0.AddDate(100, 0, 0), "A") + visit(t0.Add(time.Hour), "B") +
		visit(t0.Add(2*time.Hour), "C") + visit(t0.Add(3*time.Hour), "D") + visit(now.Add(23*time.Hour), "E")
	for _, tc := range []struct {
		name      string
		maxFuture time.Duration
		future    int // dead letters
		late      int64
		asOf      time.Time
	}{
		{"default", DefaultMaxFuture, 1, 0, now.Add(23 * time.Hour)}, // a day: the last visit is 23 h ahead, in time
		{"one hour", time.Hour, 2, 0, t0.Add(3 * time.Hour)},         // the last visit is beyond it too
		{"unbounded", 0, 0, 4, t0.AddDate(100, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DisableReorder = true
			cfg.Model.EmitInterval = 0
			cfg.MaxFuture = tc.maxFuture
			sink := stream.NewMemorySink()
			reg := prometheus.NewRegistry()
			p, err := NewProcessor(cfg, newMemory(t), sink, slog.New(slog.DiscardHandler), reg, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			runReaderBounded(t, p, []byte(in))

			dls := decodeDeadLetters(t, sink.Messages(stream.TopicDeadLetter))
			if len(dls) != tc.future {
				t.Fatalf("%d dead letters, want %d: %+v", len(dls), tc.future, dls)
			}
			for _, d := range dls {
				if d.Reason != ReasonFuture || d.Position == "" || !strings.Contains(d.Error, "ahead of the clock") || !strings.Contains(d.Error, "MAX_FUTURE") {
					t.Errorf("dead letter %+v: want reason %q, a position and an error naming the bound", d, ReasonFuture)
				}
			}
			if tc.future > 0 && !strings.Contains(dls[0].Error, "36523.8 days") { // 100 years (36,524 days) less 6 h
				t.Errorf("dead letter error %q does not say how far ahead the time is", dls[0].Error)
			}
			st := p.Stats()
			if st.Future != int64(tc.future) || st.Observations != int64(6-tc.future) || st.Late != tc.late || st.Rejected != 0 {
				t.Errorf("stats %+v: want Future %d, Observations %d, Late %d, no decode rejections", st, tc.future, 6-tc.future, tc.late)
			}
			if got := counterValue(t, p.metrics.deadLetters.WithLabelValues(ReasonFuture)); got != float64(tc.future) {
				t.Errorf("dead_letters_total{reason=future} = %v, want %d", got, tc.future)
			}
			ests := sink.Messages(stream.TopicEstimates)
			var last records.Estimate
			if err := json.Unmarshal(ests[len(ests)-1].Value, &last); err != nil {
				t.Fatal(err)
			}
			if !last.AsOf.Equal(tc.asOf) {
				t.Errorf("last estimate as of %s, want %s", last.AsOf, tc.asOf)
			}
		})
	}
}
