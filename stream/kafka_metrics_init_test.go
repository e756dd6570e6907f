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
