package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// TestKafkaCompressedRoundTrip: with every produce codec (the aggregator's
// KAFKA_COMPRESSION), in both sink modes, the records a consumer reads are
// byte for byte the ones written — read back with franz-go and with this
// package's source — so compression changes what the broker stores, not
// what is published.
func TestKafkaCompressedRoundTrip(t *testing.T) {
	for id, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} { // Kafka's codec ids 0–4
		t.Run(codec, func(t *testing.T) {
			forEachSinkMode(t, func(t *testing.T, linger time.Duration) {
				testCompressedRoundTrip(t, codec, uint8(id), linger)
			})
		})
	}
}

func testCompressedRoundTrip(t *testing.T, codec string, id uint8, linger time.Duration) {
	const topic = "estimates"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 2})
	cfg := testConfig(c, "compressed")
	cfg.Linger, cfg.Compression = linger, codec
	reg := prometheus.NewRegistry()
	sink := newSink(t, cfg, reg)
	// JSON-like values of a few hundred bytes, repetitive as estimates are.
	want := map[string][]byte{}
	var msgs []stream.Message
	for i := range 300 {
		key := fmt.Sprintf("https://news%d.example.org/article-%07d.html", i%7, i)
		val := fmt.Appendf(nil, `{"object":%q,"kind":"change","rate_per_s":0.0000%d,"estimates":{"naive":%d.5e-7}}`, key, 4100+i*37, i)
		want[key] = val
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte(key), Value: val})
	}
	ctx := context.Background()
	for i := 0; i < len(msgs); i += 100 {
		if err := sink.Write(ctx, msgs[i:i+100]...); err != nil {
			t.Fatal(err)
		}
	}
	check := func(how string, key, value []byte) {
		t.Helper()
		if w, ok := want[string(key)]; !ok || !bytes.Equal(value, w) {
			t.Errorf("%s: key %q read %q, want %q", how, key, value, w)
		}
	}
	stored := c.ReadAll(t, topic)
	if len(stored) != len(msgs) {
		t.Fatalf("franz-go read %d records, want %d", len(stored), len(msgs))
	}
	for _, r := range stored {
		check("franz-go", r.Key, r.Value)
		if r.Compression != id {
			t.Errorf("key %q stored in a batch of codec %d, want %d (%s)", r.Key, r.Compression, id, codec)
		}
	}
	for _, m := range readSource(t, cfg, topic, reg, len(msgs)) {
		check("source", m.Key, m.Value)
	}
}
