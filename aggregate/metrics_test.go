package aggregate

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// series returns the label sets (k=v,... sorted) and values of metric name.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			out[strings.Join(ls, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

// TestLabelledCountersStartAtZero: before any input, every labelled counter
// an alert or dashboard uses has its known series at 0.
func TestLabelledCountersStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewProcessor(DefaultConfig(), newMemory(t), stream.NewMemorySink(), slog.New(slog.DiscardHandler), reg, time.Now); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	for name, want := range map[string][]string{
		"changerate_aggregator_alerts_total":               {"kind=change", "kind=access"},
		"changerate_aggregator_dead_letters_total":         {"reason=decode", "reason=output_rejected"},
		"changerate_aggregator_late_events_total":          {"action=late_output", "action=applied_at_latest", "action=reordered"},
		"changerate_aggregator_retries_total":              {"op=commit", "op=write outputs", "op=write dead letters", "op=claim", "op=load", "op=verify"},
		"changerate_aggregator_outputs_rejected_total":     {"reason=MESSAGE_TOO_LARGE,topic=" + cfg.EstimatesTopic, "reason=EXCEEDS_BATCH_BYTES,topic=" + cfg.DeadLetterTopic},
		"changerate_aggregator_fenced_commits_total":       {"reason=takeover", "reason=rewound"},
		"changerate_aggregator_observations_outcome_total": {"outcome=applied", "outcome=duplicate", "outcome=no_information"},
	} {
		got := series(t, reg, name)
		for _, w := range want {
			v, ok := got[w]
			if !ok || v != 0 {
				t.Errorf("%s{%s}: %v, %v; want present at 0 (series: %v)", name, w, v, ok, got)
			}
		}
	}
	// No two metrics count the same event: late observations are only in late_events_total.
	if _, ok := series(t, reg, "changerate_aggregator_observations_outcome_total")["outcome=late"]; ok {
		t.Error("observations_outcome_total has outcome=late, which late_events_total{action=late_output} counts")
	}
	if got := series(t, reg, "changerate_aggregator_batch_size"); len(got) > 0 {
		t.Error("batch_size (no unit) is still registered")
	}
}

// gateClaim delivers its messages, then blocks in Fetch until released, then
// reports the claim revoked: the test looks at the metrics in between.
type gateClaim struct {
	msgs    []stream.Message
	sent    bool
	release chan struct{}
}

func (c *gateClaim) Topic() string       { return stream.TopicObservations }
func (c *gateClaim) Partition() int32    { return 5 }
func (c *gateClaim) Generation() int64   { return 1 }
func (c *gateClaim) SeekTo(int64) error  { return nil }
func (c *gateClaim) MarkCommitted(int64) {}
func (c *gateClaim) Fetch(ctx context.Context, max int) ([]stream.Message, error) {
	if !c.sent {
		c.sent = true
		return c.msgs, nil
	}
	select {
	case <-c.release:
		return nil, stream.ErrRevoked
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestPartitionSeries: while a partition is owned it has next_offset,
// cached_objects and event_time_lag_seconds (wall clock at scrape − newest
// committed observation); when it leaves, all three are deleted.
func TestPartitionSeries(t *testing.T) {
	now := t0.Add(90 * time.Minute)
	var msgs []stream.Message
	for i, at := range []time.Time{t0, t0.Add(30 * time.Minute), t0.Add(10 * time.Minute)} {
		v, err := json.Marshal(records.Observation{Object: "http://a.example/" + string(rune('a'+i)), Time: at, Kind: records.KindAccess})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, stream.Message{Topic: stream.TopicObservations, Partition: 5, Offset: int64(i), Value: v})
	}
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.IdleCheck = 0
	p, err := NewProcessor(cfg, newMemory(t), stream.NewMemorySink(), slog.New(slog.DiscardHandler), reg, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	c := &gateClaim{msgs: msgs, release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- p.Handle(context.Background(), c) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Committed() < int64(len(msgs)) {
		if time.Now().After(deadline) {
			t.Fatal("batch not committed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	key := "partition=5,topic=" + stream.TopicObservations
	if got := series(t, reg, "changerate_aggregator_event_time_lag_seconds")[key]; got != 3600 {
		t.Errorf("event_time_lag_seconds{%s} = %v, want 3600 (now − the newest observation, 60 minutes)", key, got)
	}
	now = now.Add(time.Minute) // the gauge follows the clock at scrape time, without new input
	if got := series(t, reg, "changerate_aggregator_event_time_lag_seconds")[key]; got != 3660 {
		t.Errorf("a minute later event_time_lag_seconds = %v, want 3660", got)
	}
	if got := series(t, reg, "changerate_aggregator_next_offset")[key]; got != 3 {
		t.Errorf("next_offset = %v, want 3", got)
	}
	close(c.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"changerate_aggregator_event_time_lag_seconds", "changerate_aggregator_next_offset", "changerate_aggregator_cached_objects"} {
		if got := series(t, reg, name); len(got) > 0 {
			t.Errorf("%s after the partition left: %v, want no series", name, got)
		}
	}
}

// TestPartitionSeriesAtClaim: after a restart whose stored offset is
// already at the end of the input, the gauges that describe stored state
// are set when the partition is claimed, not at the first new commit
// (issue 32: next_offset read 0 until then, so a dashboard saw the whole
// topic as unprocessed): next_offset is the stored offset, and
// event_time_lag_seconds is measured from the stored reorder position's
// newest event time.
func TestPartitionSeriesAtClaim(t *testing.T) {
	now := t0.Add(90 * time.Minute)
	var msgs []stream.Message
	for i, at := range []time.Time{t0, t0.Add(30 * time.Minute), t0.Add(10 * time.Minute)} {
		v, err := json.Marshal(records.Observation{Object: "http://a.example/" + string(rune('a'+i)), Time: at, Kind: records.KindAccess})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, stream.Message{Topic: stream.TopicObservations, Partition: 5, Offset: int64(i), Value: v})
	}
	store := newMemory(t)
	cfg := DefaultConfig()
	cfg.IdleCheck = 0
	clock := func() time.Time { return now }
	// The first run reads the input to its end and commits offset 3.
	first, err := NewProcessor(cfg, store, stream.NewMemorySink(), slog.New(slog.DiscardHandler), prometheus.NewRegistry(), clock)
	if err != nil {
		t.Fatal(err)
	}
	c := &gateClaim{msgs: msgs, release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- first.Handle(context.Background(), c) }()
	for deadline := time.Now().Add(10 * time.Second); first.Committed() < int64(len(msgs)); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("batch not committed")
		}
	}
	close(c.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The restart: a new processor on the same store, and no new input.
	reg := prometheus.NewRegistry()
	second, err := NewProcessor(cfg, store, stream.NewMemorySink(), slog.New(slog.DiscardHandler), reg, clock)
	if err != nil {
		t.Fatal(err)
	}
	c = &gateClaim{sent: true, release: make(chan struct{})}
	go func() { done <- second.Handle(context.Background(), c) }()
	for deadline := time.Now().Add(10 * time.Second); len(second.Owned()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("partition not claimed")
		}
	}
	key := "partition=5,topic=" + stream.TopicObservations
	if got, ok := series(t, reg, "changerate_aggregator_next_offset")[key]; !ok || got != 3 {
		t.Errorf("next_offset{%s} after the claim = %v (present %v), want 3, the stored offset", key, got, ok)
	}
	if got := series(t, reg, "changerate_aggregator_event_time_lag_seconds")[key]; got != 3600 {
		t.Errorf("event_time_lag_seconds{%s} after the claim = %v, want 3600 (now − the stored newest event time, 60 minutes)", key, got)
	}
	if got := second.Committed(); got != 0 {
		t.Errorf("the restart committed %d messages; the test wants the gauges set without a commit", got)
	}
	close(c.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
