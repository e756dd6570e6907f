package stream_test

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/changerate/changerate/stream"
)

// TestKafkaSourceErrorSeriesAtZero: the source's labelled error counters
// exist at 0 for its topics before the first error, so that rate() and the
// alerting rules see a series (an absent one means a scrape problem).
func TestKafkaSourceErrorSeriesAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	src, err := stream.NewKafkaSource(stream.KafkaConfig{Brokers: []string{"127.0.0.1:1"}, GroupID: "g"},
		[]string{"observations"}, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	_ = src
	// fetch, decode, list_offsets and offset_out_of_range for the one topic
	if n := testutil.CollectAndCount(reg, "changerate_kafka_fetch_errors_total"); n != 4 {
		t.Errorf("changerate_kafka_fetch_errors_total has %d series before any error, want 4", n)
	}
	if n := testutil.CollectAndCount(reg, "changerate_kafka_group_restarts_total"); n != 3 {
		t.Errorf("changerate_kafka_group_restarts_total has %d series, want 3", n)
	}
}

// TestKafkaSinkDeclaredTopicsAtZero: DeclareTopics creates the sink's
// per-topic series at 0.
func TestKafkaSinkDeclaredTopicsAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	sink, err := stream.NewKafkaSink(stream.KafkaConfig{Brokers: []string{"127.0.0.1:1"}}, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	for _, name := range []string{"changerate_kafka_messages_written_total", "changerate_kafka_write_errors_total", "changerate_kafka_produce_retries_total"} {
		if n := testutil.CollectAndCount(reg, name); n != 0 {
			t.Errorf("%s has %d series before DeclareTopics, want 0", name, n)
		}
	}
	sink.DeclareTopics("estimates", "dead-letter")
	for _, name := range []string{"changerate_kafka_messages_written_total", "changerate_kafka_write_errors_total", "changerate_kafka_produce_retries_total"} {
		if n := testutil.CollectAndCount(reg, name); n != 2 {
			t.Errorf("%s has %d series after DeclareTopics of 2 topics, want 2", name, n)
		}
	}
}
