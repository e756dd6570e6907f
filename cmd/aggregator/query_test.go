package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestRebuildIndex: after a restart, the service's query index is rebuilt
// from the compacted estimates topic (latest record per key) and the
// alerts topic, through a Kafka-protocol broker.
func TestRebuildIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process Kafka broker")
	}
	cfg := &config{}
	cfg.TopicEstimates, cfg.TopicAlerts, cfg.APIAlerts = "estimates", "alerts", 100
	kc := kafkatest.Start(t, kafkatest.Topic{Name: "estimates", Partitions: 3}, kafkatest.Topic{Name: "alerts", Partitions: 2})
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var recs []kafkatest.Record
	for v := 0; v < 2; v++ { // two versions of each estimate: the second must win
		for i := 0; i < 10; i++ {
			r := float64(i+1) * 1e-5 * float64(1+v)
			e := records.Estimate{Object: fmt.Sprintf("http://s.example/%d", i), Site: "s.example", Kind: records.EstimateChange,
				AsOf: t0.Add(time.Duration(v) * time.Hour), RatePerS: &r, CI95: &[2]float64{r / 2, 2 * r}, Changes: 4}
			b, _ := json.Marshal(e)
			recs = append(recs, kafkatest.Record{Key: []byte(e.Object), Value: b})
		}
	}
	kc.Produce(t, "estimates", recs...)
	var alerts []kafkatest.Record
	for i := 0; i < 5; i++ {
		a := records.Alert{Object: fmt.Sprintf("http://s.example/%d", i), Site: "s.example", Kind: records.EstimateChange,
			AsOf: t0.Add(time.Duration(i) * time.Minute), RateBefore: 1e-5, RateAfter: 1e-4, PValue: 0.01, Test: "cusum-binomial-up"}
		b, _ := json.Marshal(a)
		alerts = append(alerts, kafkatest.Record{Key: []byte(a.Object), Value: b})
	}
	kc.Produce(t, "alerts", alerts...)

	idx := query.NewIndex(query.IndexConfig{})
	tee := query.NewTeeSink(stream.NewMemorySink(), idx, "estimates", "alerts", slog.New(slog.DiscardHandler))
	if err := rebuildIndex(context.Background(), cfg, stream.KafkaConfig{Brokers: kc.Addrs(), ClientID: "t"}, tee, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	top := idx.Top(query.ByChangeRate, "", 3)
	if idx.Len() != 10 || len(top) != 3 || top[0].Object != "http://s.example/9" || top[0].Value != 2e-4 {
		t.Fatalf("rebuilt index: %d objects, top %+v; want 10 and http://s.example/9 at its second estimate 2e-4", idx.Len(), top)
	}
	got := idx.Alerts(time.Time{}, "", 10)
	if len(got) != 5 {
		t.Fatalf("%d alerts rebuilt, want 5", len(got))
	}
	var newest records.Alert
	if err := json.Unmarshal(got[0], &newest); err != nil || newest.Object != "http://s.example/4" {
		t.Fatalf("newest alert %s (%v), want http://s.example/4's", got[0], err)
	}
}
