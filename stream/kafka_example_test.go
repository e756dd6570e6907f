package stream_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/stream"
)

// offsetStore stands for the state layer: it keeps each partition's next
// offset with the data, and rejects writes from older generations.
type offsetStore interface {
	Offset(ctx context.Context, topic string, partition int32) (next int64, ok bool, err error)
	Apply(ctx context.Context, generation int64, msgs []stream.Message) error
}

// Consume observations effectively once: each claim seeks to the offset
// stored with the state (earliest when there is none), applies batches
// atomically with the offset, and commits to Kafka for lag monitoring only.
func ExampleKafkaSource() {
	var store offsetStore // e.g. the Redis state
	cfg := stream.KafkaConfig{
		Brokers: []string{"kafka-0.kafka:9092", "kafka-1.kafka:9092"},
		GroupID: "changerate-aggregator",
		SASL:    stream.KafkaSASLConfig{Mechanism: stream.SASLScramSHA512, Username: "aggregator", Password: "secret"},
		TLS:     stream.KafkaTLSConfig{Enable: true, CAFile: "/etc/kafka/ca.pem"},
	}
	reg := prometheus.NewRegistry()
	src, err := stream.NewKafkaSource(cfg, []string{stream.TopicObservations}, slog.Default(), reg)
	if err != nil {
		slog.Error("config", "err", err)
		return
	}
	defer src.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = src.Run(ctx, func(ctx context.Context, c stream.Claim) error {
		next, ok, err := store.Offset(ctx, c.Topic(), c.Partition())
		if err != nil {
			return err // logged; the member rejoins and retries
		}
		if !ok {
			next = -1 // earliest
		}
		if err := c.SeekTo(next); err != nil {
			return err
		}
		for {
			msgs, err := c.Fetch(ctx, 5000)
			if err != nil {
				return err // ErrRevoked or ctx.Err(): done; ErrFatal: stops Run
			}
			if err := store.Apply(ctx, c.Generation(), msgs); err != nil {
				return err
			}
			c.MarkCommitted(msgs[len(msgs)-1].Offset + 1)
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		slog.Error("source stopped", "err", err) // e.g. offset out of range: alert
	}
}

// Write estimates keyed by object: one key always lands in one partition.
func ExampleKafkaSink() {
	sink, err := stream.NewKafkaSink(stream.KafkaConfig{Brokers: []string{"localhost:9092"}}, slog.Default(), nil)
	if err != nil {
		slog.Error("config", "err", err)
		return
	}
	defer sink.Close()
	err = sink.Write(context.Background(),
		stream.Message{Topic: stream.TopicEstimates, Key: []byte("https://example.org/"), Value: []byte(`{"rate":0.8}`)},
	)
	if err != nil {
		slog.Error("write", "err", err)
	}
}

// Create the pipeline's topics (estimates compacted) before starting.
func ExampleEnsureTopics() {
	cfg := stream.KafkaConfig{Brokers: []string{"localhost:9092"}}
	created, err := stream.EnsureTopics(context.Background(), cfg, stream.DefaultTopics(12, 3))
	if err != nil {
		slog.Error("topics", "err", err)
		return
	}
	slog.Info("topics created", "names", created)
}
