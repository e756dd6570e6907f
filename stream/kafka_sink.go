package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// KafkaSink is a Sink that produces to Kafka with kafka-go's Writer.
//
// Every message goes to the topic named by its Topic field and to the
// partition chosen from its key with the Java client's murmur2 hash, so one
// key always maps to one partition (as long as the partition count does not
// change) and other Kafka clients agree on it; a nil key goes to a random
// partition. Write waits for acknowledgement by all in-sync replicas
// (acks=all). Messages of one Write call to one partition are sent in order,
// and one partition's batches are sent one at a time, so messages with the
// same key keep the order of Write calls that do not overlap in time.
//
// A KafkaSink is safe for concurrent use.
type KafkaSink struct {
	k   *kafkaClients
	w   *kafka.Writer
	log *slog.Logger
	m   *sinkMetrics

	mu     sync.RWMutex
	closed bool
}

var _ Sink = (*KafkaSink)(nil)

// NewKafkaSink returns a sink writing to the cluster of cfg. It does not
// connect until the first Write. Metrics are registered on reg (nil: none);
// a nil logger discards logs.
func NewKafkaSink(cfg KafkaConfig, logger *slog.Logger, reg prometheus.Registerer) (*KafkaSink, error) {
	k, err := newKafkaClients(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newSinkMetrics(reg)
	if err != nil {
		return nil, err
	}
	codec, _ := compressionCodec(k.cfg.Compression) // checked by Validate
	logger = logger.With("component", "kafka-sink")
	w := &kafka.Writer{
		Addr:         k.addr,
		Balancer:     kafka.Murmur2Balancer{},
		MaxAttempts:  k.cfg.WriteAttempts,
		BatchSize:    k.cfg.BatchSize,
		BatchBytes:   k.cfg.BatchBytes,
		BatchTimeout: k.cfg.Linger,
		ReadTimeout:  k.cfg.RequestTimeout,
		WriteTimeout: k.cfg.RequestTimeout,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		ErrorLogger:  kafka.LoggerFunc(func(f string, args ...any) { logger.Warn(fmt.Sprintf(f, args...)) }),
		Transport:    k.transport,
	}
	return &KafkaSink{k: k, w: w, log: logger, m: m}, nil
}

// Write produces msgs and returns nil when all of them are acknowledged by
// all in-sync replicas. Each message must name its Topic; Partition and
// Offset are ignored, a zero Time means "now". A topic that does not exist
// is waited for up to 2×MetadataInterval (nothing is written meanwhile). On error any subset may have
// been written; the error wraps kafka-go's error (for a partial failure a
// kafka.WriteErrors with one entry per message). If ctx ends first, Write
// returns ctx.Err() and the messages may still be written.
func (s *KafkaSink) Write(ctx context.Context, msgs ...Message) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("stream: kafka sink: message %d has no topic", i)
		}
		km[i] = kafka.Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time}
	}
	start := time.Now()
	err := s.w.WriteMessages(ctx, km...)
	// kafka-go looks partition counts up in its metadata cache before
	// writing anything and fails at once for a topic it does not know; the
	// cache is refreshed every MetadataInterval, so a topic created
	// shortly before is found by waiting, as the Java producer does.
	for deadline := start.Add(2 * s.k.cfg.MetadataInterval); errors.Is(err, kafka.UnknownTopicOrPartition) && time.Now().Before(deadline); {
		if sleepCtx(ctx, s.k.cfg.RetryBackoff) != nil {
			break
		}
		err = s.w.WriteMessages(ctx, km...)
	}
	s.m.latency.Observe(time.Since(start).Seconds())
	s.m.batchLen.Observe(float64(len(msgs)))
	if err == nil {
		s.countByTopic(msgs, nil, s.m.written)
		return nil
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		s.countByTopic(msgs, func(i int) bool { return werrs[i] == nil }, s.m.written)
		s.countByTopic(msgs, func(i int) bool { return werrs[i] != nil }, s.m.errors)
		// Report the first real cause, keeping the full WriteErrors wrapped.
		for _, e := range werrs {
			if e != nil {
				return fmt.Errorf("stream: kafka write: %d of %d messages failed, first: %v: %w", werrs.Count(), len(msgs), e, err)
			}
		}
	} else {
		s.countByTopic(msgs, nil, s.m.errors)
	}
	s.log.Warn("kafka write failed", "messages", len(msgs), "err", err)
	return fmt.Errorf("stream: kafka write: %w", err)
}

func (s *KafkaSink) countByTopic(msgs []Message, keep func(int) bool, c *prometheus.CounterVec) {
	last, n := "", 0
	flush := func() {
		if n > 0 {
			c.WithLabelValues(last).Add(float64(n))
		}
	}
	for i, m := range msgs {
		if keep != nil && !keep(i) {
			continue
		}
		if m.Topic != last {
			flush()
			last, n = m.Topic, 0
		}
		n++
	}
	flush()
}

// Close waits for in-flight Writes, flushes and releases connections. It
// is idempotent; Write after Close returns ErrClosed.
func (s *KafkaSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Close()
	s.k.close()
	if err != nil {
		return fmt.Errorf("stream: closing kafka sink: %w", err)
	}
	return nil
}
