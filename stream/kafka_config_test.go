package stream_test

import (
	"context"
	"reflect"
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
		{"cert without TLS", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{CertFile: "c.pem"} }, "TLS.Enable is false"},
		{"CA without TLS", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{CAFile: "ca.pem"} }, "TLS.Enable is false"},
		{"insecure without TLS", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{InsecureSkipVerify: true} }, "TLS.Enable is false"},
		{"CA with TLS", func(c *stream.KafkaConfig) { c.TLS = stream.KafkaTLSConfig{Enable: true, CAFile: "ca.pem"} }, ""},
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

// TestKafkaConfigValidateReportsEveryProblem: one Validate call names every
// invalid field, one joined error per problem, each with the package
// prefix.
func TestKafkaConfigValidateReportsEveryProblem(t *testing.T) {
	c := stream.KafkaConfig{
		Brokers:           []string{"localhost", "ok:9092", "nohost"},
		SASL:              stream.KafkaSASLConfig{Mechanism: "GSSAPI"},
		TLS:               stream.KafkaTLSConfig{Enable: true, KeyFile: "k.pem"},
		Compression:       "brotli",
		Linger:            -time.Millisecond,
		WriteAttempts:     -1,
		HeartbeatInterval: time.Minute, // >= the default SessionTimeout
		FetchMaxWait:      -time.Second,
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate() = %T, want an errors.Join", err)
	}
	want := []string{`"localhost"`, `"nohost"`, "SASL.Mechanism", "TLS.CertFile", "Compression", "Linger",
		"WriteAttempts", "HeartbeatInterval", "FetchMaxWait"}
	if n := len(joined.Unwrap()); n != len(want) {
		t.Errorf("Validate() joined %d errors, want %d:\n%v", n, len(want), err)
	}
	for _, e := range joined.Unwrap() {
		if !strings.HasPrefix(e.Error(), "stream: KafkaConfig.") {
			t.Errorf("error %q lacks the prefix naming the field", e)
		}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() does not name %s:\n%v", w, err)
		}
	}
	// A negative FetchMaxWait is reported once, not also as a relation.
	if strings.Contains(err.Error(), "must be below RequestTimeout") {
		t.Errorf("negative FetchMaxWait also reported against RequestTimeout:\n%v", err)
	}
}

func TestKafkaConfigWithDefaults(t *testing.T) {
	d := stream.KafkaConfig{}.WithDefaults()
	want := stream.KafkaConfig{
		ClientID:          stream.DefaultKafkaClientID,
		DialTimeout:       stream.DefaultKafkaDialTimeout,
		RequestTimeout:    stream.DefaultKafkaRequestTimeout,
		BatchSize:         stream.DefaultKafkaBatchSize,
		BatchBytes:        stream.DefaultKafkaBatchBytes,
		WriteAttempts:     stream.DefaultKafkaWriteAttempts,
		Compression:       stream.DefaultKafkaCompression,
		GroupID:           stream.DefaultKafkaGroupID,
		SessionTimeout:    stream.DefaultKafkaSessionTimeout,
		HeartbeatInterval: stream.DefaultKafkaHeartbeatInterval,
		RebalanceTimeout:  stream.DefaultKafkaRebalanceTimeout,
		JoinGroupBackoff:  stream.DefaultKafkaJoinGroupBackoff,
		FetchMaxWait:      stream.DefaultKafkaFetchMaxWait,
		FetchMaxBytes:     stream.DefaultKafkaFetchMaxBytes,
		FetchBufferBytes:  stream.DefaultKafkaFetchBufferBytes,
		FetchMinBytes:     stream.DefaultKafkaFetchMinBytes,
		FetchLinger:       stream.DefaultKafkaFetchLinger,
		RetryBackoff:      stream.DefaultKafkaRetryBackoff,
		CommitInterval:    stream.DefaultKafkaCommitInterval,
		MetadataInterval:  stream.DefaultKafkaMetadataInterval,
		CloseTimeout:      stream.DefaultKafkaCloseTimeout,
		FetchTimeoutSlack: stream.DefaultKafkaFetchTimeoutSlack,
		WatchdogInterval:  stream.DefaultKafkaWatchdogInterval,
		// The derived defaults, from the defaults above.
		JoinTimeout:       2*stream.DefaultKafkaRebalanceTimeout + stream.DefaultKafkaJoinTimeoutSlack,
		FetchStallTimeout: max(stream.DefaultKafkaSessionTimeout, 2*(stream.DefaultKafkaFetchMaxWait+stream.DefaultKafkaFetchTimeoutSlack)),
		OrphanTimeout:     max(stream.DefaultKafkaSessionTimeout, stream.DefaultKafkaOrphanTimeoutFloor),
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("KafkaConfig{}.WithDefaults() =\n%+v\nwant\n%+v", d, want)
	}
	// The documented values (the ones docs/configuration.md and the flags state).
	for name, got := range map[string]time.Duration{
		"JoinTimeout": d.JoinTimeout, "FetchStallTimeout": d.FetchStallTimeout, "OrphanTimeout": d.OrphanTimeout,
	} {
		if exp := map[string]time.Duration{"JoinTimeout": 70 * time.Second, "FetchStallTimeout": 30 * time.Second,
			"OrphanTimeout": 30 * time.Second}[name]; got != exp {
			t.Errorf("default %s = %v, want %v", name, got, exp)
		}
	}
	// Every field without a default of its own is listed here; any other
	// field must be set by WithDefaults.
	noDefault := map[string]bool{"Brokers": true, "TLS": true, "SASL": true, "Linger": true}
	v := reflect.ValueOf(d)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); !noDefault[f.Name] && v.Field(i).IsZero() {
			t.Errorf("WithDefaults leaves %s zero", f.Name)
		}
	}
	if again := d.WithDefaults(); !reflect.DeepEqual(again, d) {
		t.Errorf("WithDefaults is not idempotent: %+v", again)
	}
	// Set fields are kept, and the derived defaults follow them.
	c := stream.KafkaConfig{SessionTimeout: time.Minute, RebalanceTimeout: 5 * time.Second, FetchMaxWait: time.Second,
		FetchTimeoutSlack: time.Minute, OrphanTimeout: -1, Compression: "zstd"}.WithDefaults()
	if c.SessionTimeout != time.Minute || c.Compression != "zstd" || c.OrphanTimeout != -1 {
		t.Errorf("WithDefaults changed set fields: %+v", c)
	}
	if c.JoinTimeout != 20*time.Second || c.FetchStallTimeout != 122*time.Second {
		t.Errorf("derived defaults JoinTimeout %v, FetchStallTimeout %v; want 20s, 2m2s", c.JoinTimeout, c.FetchStallTimeout)
	}
}

func TestTopicSpecValidateAndDefaults(t *testing.T) {
	if err := (stream.TopicSpec{Name: "t"}).Validate(); err != nil {
		t.Errorf("minimal spec: %v", err)
	}
	err := stream.TopicSpec{Partitions: -1, ReplicationFactor: -2}.Validate()
	for _, w := range []string{"TopicSpec.Name", "TopicSpec.Partitions", "TopicSpec.ReplicationFactor"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want an error naming %s", err, w)
		}
	}
	if got := (stream.TopicSpec{Name: "t"}).WithDefaults(); got.Partitions != stream.DefaultTopicPartitions || got.ReplicationFactor != 0 {
		t.Errorf("WithDefaults() = %+v", got)
	}
	_, err = stream.EnsureTopics(context.Background(), stream.KafkaConfig{Brokers: []string{"127.0.0.1:1"}},
		[]stream.TopicSpec{{Name: ""}, {Name: "x", Partitions: -3}})
	if err == nil || !strings.Contains(err.Error(), "TopicSpec.Name") || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("EnsureTopics with two invalid specs: %v, want both reported", err)
	}
}
