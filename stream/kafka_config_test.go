package stream_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

func TestKafkaConfigValidate(t *testing.T) {
	ok := stream.KafkaConfig{Brokers: []string{"localhost:9092"}}
	cases := []struct {
		name    string
		mod     func(*stream.KafkaConfig)
		wantErr string // substring naming the field; "" means valid
	}{
		{"minimal", func(*stream.KafkaConfig) {}, ""},
		{"no brokers", func(c *stream.KafkaConfig) { c.Brokers = nil }, "Brokers"},
		{"broker without port", func(c *stream.KafkaConfig) { c.Brokers = []string{"localhost"} }, "Brokers"},
		{"plain", func(c *stream.KafkaConfig) {
			c.SASL = stream.KafkaSASLConfig{Mechanism: "PLAIN", Username: "u", Password: "p"}
		}, ""},
		{"scram-256", func(c *stream.KafkaConfig) {
			c.SASL = stream.KafkaSASLConfig{Mechanism: "SCRAM-SHA-256", Username: "u"}
		}, ""},
		{"scram-512", func(c *stream.KafkaConfig) {
			c.SASL = stream.KafkaSASLConfig{Mechanism: "SCRAM-SHA-512", Username: "u"}
		}, ""},
		{"sasl without user", func(c *stream.KafkaConfig) { c.SASL.Mechanism = "PLAIN" }, "SASL.Username"},
		{"unknown mechanism", func(c *stream.KafkaConfig) { c.SASL.Mechanism = "GSSAPI" }, "SASL.Mechanism"},
		{"cert without key", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{Enable: true, CertFile: "c.pem"} }, "TLS.CertFile"},
		{"cert without key, TLS off", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{CertFile: "c.pem"} }, ""},
		{"compression", func(c *stream.KafkaConfig) { c.Compression = "zstd" }, ""},
		{"bad compression", func(c *stream.KafkaConfig) { c.Compression = "brotli" }, "Compression"},
		{"negative linger", func(c *stream.KafkaConfig) { c.Linger = -time.Millisecond }, "Linger"},
		{"negative batch", func(c *stream.KafkaConfig) { c.BatchSize = -1 }, "BatchSize"},
		{"heartbeat >= session", func(c *stream.KafkaConfig) { c.HeartbeatInterval = 30 * time.Second }, "HeartbeatInterval"},
		{"fetch wait >= request timeout", func(c *stream.KafkaConfig) { c.FetchMaxWait = time.Minute }, "FetchMaxWait"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.wantErr)
			case err != nil && !strings.HasPrefix(err.Error(), "stream: "):
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestKafkaConstructorsRejectInvalidConfig(t *testing.T) {
	bad := stream.KafkaConfig{}
	if _, err := stream.NewKafkaSink(bad, nil, nil); err == nil {
		t.Error("NewKafkaSink accepted an empty config")
	}
	if _, err := stream.NewKafkaSource(bad, []string{"t"}, nil, nil); err == nil {
		t.Error("NewKafkaSource accepted an empty config")
	}
	good := stream.KafkaConfig{Brokers: []string{"localhost:9092"}}
	if _, err := stream.NewKafkaSource(good, nil, nil, nil); err == nil {
		t.Error("NewKafkaSource accepted no topics")
	}
	tlsMissing := good
	tlsMissing.TLS = stream.KafkaTLSConfig{Enable: true, CAFile: "/nonexistent/ca.pem"}
	if _, err := stream.NewKafkaSink(tlsMissing, nil, nil); err == nil || !strings.Contains(err.Error(), "TLS.CAFile") {
		t.Errorf("NewKafkaSink with a missing CA file: %v, want an error naming TLS.CAFile", err)
	}
}

func TestEnsureTopics(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: stream.TopicObservations, Partitions: 3})
	cfg := testConfig(c, "admin")
	ctx := context.Background()
	specs := stream.DefaultTopics(4, 1)
	specs = append(specs, stream.TopicSpec{Name: "custom", Partitions: 2, Config: map[string]string{"retention.ms": "3600000"}})
	created, err := stream.EnsureTopics(ctx, cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(created)
	want := []string{stream.TopicAccessReports, stream.TopicAlerts, "custom", stream.TopicDeadLetter, stream.TopicEstimates, stream.TopicLate}
	slices.Sort(want)
	if !slices.Equal(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	// Existing topics are untouched.
	if n := c.Partitions(t, stream.TopicObservations); n != 3 {
		t.Errorf("%s has %d partitions, want the original 3", stream.TopicObservations, n)
	}
	if n := c.Partitions(t, stream.TopicEstimates); n != 4 {
		t.Errorf("%s has %d partitions, want 4", stream.TopicEstimates, n)
	}
	if got := c.TopicConfig(t, stream.TopicEstimates)["cleanup.policy"]; got != "compact" {
		t.Errorf("%s cleanup.policy = %q, want compact", stream.TopicEstimates, got)
	}
	if got := c.TopicConfig(t, stream.TopicAlerts)["cleanup.policy"]; got == "compact" {
		t.Errorf("%s is compacted", stream.TopicAlerts)
	}
	if got := c.TopicConfig(t, "custom")["retention.ms"]; got != "3600000" {
		t.Errorf("custom retention.ms = %q", got)
	}
	// Idempotent.
	created, err = stream.EnsureTopics(ctx, cfg, specs)
	if err != nil || len(created) != 0 {
		t.Fatalf("second EnsureTopics created %v, err %v", created, err)
	}
}
