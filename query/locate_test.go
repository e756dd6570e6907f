package query_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
)

// TestKafkaLocator: the locator finds, for every object, the partition in
// which stream.KafkaSink (what ingest writes with) put its observations,
// read back from a Kafka-protocol broker.
func TestKafkaLocator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process Kafka broker")
	}
	const topic = "observations"
	kc := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 7})
	cfg := stream.KafkaConfig{Brokers: kc.Addrs(), ClientID: "locator-test"}
	sink, err := stream.NewKafkaSink(cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	var msgs []stream.Message
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("http://site%d.example/p/%d?q=%d", i%9, i, i*i)
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte(name), Value: []byte("{}")})
	}
	if err := sink.Write(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	loc := &query.KafkaLocator{Topic: topic, Partitions: func(ctx context.Context) ([]int, error) {
		return stream.TopicPartitions(ctx, cfg, topic)
	}}
	seen := map[int32]bool{}
	for _, r := range kc.ReadAll(t, topic) {
		p, err := loc.Locate(context.Background(), string(r.Key))
		if err != nil {
			t.Fatal(err)
		}
		if p.Topic != topic || p.ID != r.Partition {
			t.Fatalf("%s: located in %s/%d, written to partition %d", r.Key, p.Topic, p.ID, r.Partition)
		}
		seen[r.Partition] = true
	}
	if len(seen) < 5 {
		t.Fatalf("the keys used only %d of 7 partitions: the test checks little", len(seen))
	}
}
