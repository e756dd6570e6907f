package aggregate

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// recordingIndex keeps every estimate an EstimateIndex is told of.
type recordingIndex struct {
	mu   sync.Mutex
	ests []PublishedEstimate
}

func (r *recordingIndex) IndexEstimates(ests []PublishedEstimate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ests = append(r.ests, ests...)
}

// publishedOf is what an EstimateIndex must be told of an encoded
// estimate record: its decoded fields.
func publishedOf(t *testing.T, value []byte) PublishedEstimate {
	t.Helper()
	var e records.Estimate
	if err := json.Unmarshal(value, &e); err != nil {
		t.Fatal(err)
	}
	pe := PublishedEstimate{Object: e.Object, Site: e.Site, Kind: e.Kind, AsOf: e.AsOf, Changes: e.Changes,
		Estimator: e.Estimator, Observations: e.Observations}
	if e.TTLS != nil {
		pe.TTL, pe.HasTTL = *e.TTLS, true
	}
	if e.RatePerS != nil {
		pe.Rate, pe.HasRate = *e.RatePerS, true
	}
	if e.CI95 != nil {
		pe.CI95, pe.HasCI = *e.CI95, true
	}
	if e.NextVisit != nil {
		pe.NextVisit, pe.HasNextVisit = *e.NextVisit, true
	}
	return pe
}

func samePublished(a, b PublishedEstimate) bool {
	a.out, b.out = 0, 0
	return a.Object == b.Object && a.Site == b.Site && a.Kind == b.Kind && a.AsOf.Equal(b.AsOf) &&
		a.HasRate == b.HasRate && a.Rate == b.Rate && a.HasCI == b.HasCI && a.CI95 == b.CI95 &&
		a.HasNextVisit == b.HasNextVisit && a.NextVisit.Equal(b.NextVisit) && a.Changes == b.Changes &&
		a.Estimator == b.Estimator && a.Observations == b.Observations && a.HasTTL == b.HasTTL && a.TTL == b.TTL
}

// checkPublished compares the estimates idx was told of with the estimate
// records written to sink, in order.
func checkPublished(t *testing.T, idx *recordingIndex, sink *stream.MemorySink) {
	t.Helper()
	msgs := sink.Messages(stream.TopicEstimates)
	if len(msgs) == 0 {
		t.Fatal("no estimates written")
	}
	if len(idx.ests) != len(msgs) {
		t.Fatalf("the index was told of %d estimates, %d were written", len(idx.ests), len(msgs))
	}
	for i, m := range msgs {
		if want := publishedOf(t, m.Value); !samePublished(idx.ests[i], want) {
			t.Errorf("estimate %d (%s): index told %+v, record holds %+v", i, m.Key, idx.ests[i], want)
		}
	}
}

func TestEstimateIndexSeesPublishedEstimates(t *testing.T) {
	in, _ := truthLog(3, 40, 3)
	for _, emit := range []string{EmitUpdate, EmitFinal} {
		t.Run(emit, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Emit = emit
			cfg.BatchSize = 100
			if emit == EmitFinal {
				cfg.CacheObjects, cfg.CacheBytes = 0, 0
			}
			idx := &recordingIndex{}
			sink := stream.NewMemorySink()
			p, err := NewProcessor(noFutureCheck(cfg), newMemory(t), sink, slog.New(slog.DiscardHandler), prometheus.NewRegistry(),
				func() time.Time { return t0 }, WithEstimateIndex(idx))
			if err != nil {
				t.Fatal(err)
			}
			runReader(t, p, in)
			checkPublished(t, idx, sink)
		})
	}
}

func TestEstimateIndexSkipsRejectedEstimates(t *testing.T) {
	in := accessLines(6)
	mem := stream.NewMemorySink()
	mem.RejectIf(rejectKey)
	idx := &recordingIndex{}
	p, err := NewProcessor(rejectConfig(), newMemory(t), &flakySink{Sink: mem, failDL: 2}, slog.New(slog.DiscardHandler),
		prometheus.NewRegistry(), func() time.Time { return t0 }, WithEstimateIndex(idx))
	if err != nil {
		t.Fatal(err)
	}
	runReaderBounded(t, p, in)
	if n := len(mem.Messages(stream.TopicDeadLetter)); n != 3 {
		t.Fatalf("%d dead letters, want 3", n)
	}
	for _, pe := range idx.ests {
		if pe.Object == rejectedObject && pe.Kind == records.EstimateAccess {
			t.Errorf("the index was told of a rejected estimate: %+v", pe)
		}
	}
	checkPublished(t, idx, mem)
}
