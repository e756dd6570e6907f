package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/changerate/changerate/internal/backoff"
)

// KafkaSink is a Sink that produces to Kafka with kafka-go.
//
// Every message goes to the topic named by its Topic field and to the
// partition chosen from its key with the Java client's murmur2 hash
// (PartitionOf), so one key always maps to one partition (as long
// as the partition count does not change) and other Kafka clients agree on
// it; a nil key goes to a random partition. Write waits for acknowledgement
// by all in-sync replicas (acks=all). Messages of one Write to one
// partition are sent in order, so messages with the same key keep the
// order of Write calls that do not overlap in time.
//
// Two modes, chosen by KafkaConfig.Linger:
//   - Linger 0 (the default): each Write sends its messages at once, one
//     produce request per partition (split by BatchSize/BatchBytes; the
//     requests of one partition one after the other, partitions in
//     parallel) with kafka-go's Client; retriable errors are retried up to
//     WriteAttempts times. Lowest latency: a Write costs one round trip.
//   - Linger > 0: kafka-go's Writer, which collects the messages of
//     concurrent Writes into per-partition batches and sends a batch when
//     it is full or Linger has passed. Fewer requests when many goroutines
//     write a few messages each, but every Write that does not fill its
//     batches takes at least Linger.
//
// Permanent rejections: a message larger than BatchBytes is refused before
// sending, and a produce request that the broker refuses with an error
// that retrying cannot fix (kafka-go's Error.Temporary is false and the
// error concerns the records, e.g. MESSAGE_TOO_LARGE, INVALID_RECORD,
// RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP, POLICY_VIOLATION) refuses its
// records. A request of several records so refused is split in halves and
// sent again, down to single records, so that only the records refused on
// their own are reported. Write then returns a *RejectedError (see Sink) if
// every other message was acknowledged. Errors about the connection, the
// cluster or the configuration (authentication, cluster or topic
// authorization, an invalid topic name, unsupported version,
// UNKNOWN_SERVER_ERROR) are not rejections: Write fails with them as with a
// network error, and the caller retries until an operator fixes them.
//
// A KafkaSink is safe for concurrent use.
type KafkaSink struct {
	k     *kafkaClients
	w     *kafka.Writer // nil in direct mode
	codec kafka.Compression
	log   *slog.Logger
	m     *sinkMetrics
	// retries counts retried produce requests (direct mode).
	retries *prometheus.CounterVec

	metaMu sync.Mutex
	meta   map[string]topicPartitions

	mu     sync.RWMutex
	closed bool
}

type topicPartitions struct {
	ids []int
	at  time.Time
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
	rm, err := newWatchdogMetrics(reg)
	if err != nil {
		return nil, err
	}
	codec, _ := compressionCodec(k.cfg.Compression) // checked by Validate
	logger = logger.With("component", "kafka-sink")
	s := &KafkaSink{k: k, codec: codec, log: logger, m: m, retries: rm.produceRetries, meta: map[string]topicPartitions{}}
	if k.cfg.Linger > 0 {
		s.w = &kafka.Writer{
			Addr:         k.addr,
			Balancer:     KeyBalancer{},
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
	}
	return s, nil
}

// DeclareTopics creates the sink's per-topic series (messages written,
// write errors, produce retries) at 0 for topics, so that rate() and
// alerting rules see them before the first record or failure. Writing to
// other topics works as well; their series appear with their first event.
func (s *KafkaSink) DeclareTopics(topics ...string) {
	for _, t := range topics {
		s.m.written.WithLabelValues(t)
		s.m.errors.WithLabelValues(t)
		s.retries.WithLabelValues(t)
	}
}

// Write produces msgs and returns nil when all of them are acknowledged by
// all in-sync replicas. Each message must name its Topic; Partition and
// Offset are ignored, a zero Time means "now". A topic that does not exist
// is waited for up to 2×MetadataInterval (nothing is written meanwhile).
//
// Messages refused permanently (see KafkaSink) are reported by a
// *RejectedError, returned only when every other message was acknowledged;
// in direct mode the acknowledged messages of each partition keep their
// order. In batched mode, the messages of a batch refused as too large are
// sent again one at a time, possibly after later messages of the same
// partition. On other errors any subset may have been written (in direct
// mode, per partition: the messages before the failed request, minus
// refused ones). If ctx ends first, Write returns ctx.Err() and the
// messages may still be written.
func (s *KafkaSink) Write(ctx context.Context, msgs ...Message) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(msgs) == 0 {
		return nil
	}
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("stream: kafka sink: message %d has no topic", i)
		}
	}
	start := time.Now()
	write := s.writeDirect
	if s.w != nil {
		write = s.writeBatched
	}
	err := write(ctx, msgs)
	// Partition counts come from kafka-go's metadata cache, refreshed every
	// MetadataInterval; a topic created shortly before is found by waiting,
	// as the Java producer does. Nothing was written in this case.
	var nw errNotWritten
	for deadline := start.Add(2 * s.k.cfg.MetadataInterval); errors.As(err, &nw) && errors.Is(err, kafka.UnknownTopicOrPartition) && time.Now().Before(deadline); {
		if sleepCtx(ctx, backoff.New(s.k.cfg.RetryBackoff, 0).Next()) != nil {
			break
		}
		err = write(ctx, msgs)
	}
	s.m.latency.Observe(time.Since(start).Seconds())
	s.m.batchLen.Observe(float64(len(msgs)))
	var rej *RejectedError
	switch {
	case err == nil:
	case errors.As(err, &rej):
		s.log.Warn("kafka write: messages rejected permanently", "messages", len(msgs), "rejected", len(rej.Rejected), "err", err)
	default:
		if errors.As(err, &nw) {
			s.countByTopic(msgs, nil, s.m.errors)
		}
		s.log.Warn("kafka write failed", "messages", len(msgs), "err", err)
	}
	return err
}

// rejection returns the Rejection.Reason of a produce error that refuses
// the records for good, and false for errors that a later retry may
// overcome (temporary, network, context) or that concern the connection,
// the cluster or the configuration rather than the records: a topic the
// aggregator may not write (TOPIC_AUTHORIZATION_FAILED) or whose name is
// invalid refuses every record, so it is retried (and counted and logged)
// until an operator fixes it, rather than turning every output into a dead
// letter.
func rejection(err error) (string, bool) {
	var kerr kafka.Error
	if err == nil || !errors.As(err, &kerr) || kerr.Temporary() {
		return "", false
	}
	switch kerr {
	case kafka.Unknown, kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
		kafka.ClusterAuthorizationFailed, kafka.UnsupportedVersion, kafka.InvalidRequiredAcks,
		kafka.TopicAuthorizationFailed, kafka.InvalidTopic:
		return "", false
	}
	if name, ok := kafkaErrorNames[kerr]; ok {
		return name, true
	}
	if t := kerr.Title(); t != "" {
		return strings.ToUpper(strings.ReplaceAll(t, " ", "_")), true
	}
	return "KAFKA_ERROR_" + strconv.Itoa(int(kerr)), true
}

// kafkaErrorNames are the Kafka protocol names of the usual rejections
// (kafka-go's titles differ for some); other errors are named after their
// kafka-go title.
var kafkaErrorNames = map[kafka.Error]string{
	kafka.MessageSizeTooLarge:         "MESSAGE_TOO_LARGE",
	kafka.RecordListTooLarge:          "RECORD_LIST_TOO_LARGE",
	kafka.InvalidTimestamp:            "INVALID_TIMESTAMP",
	kafka.UnsupportedForMessageFormat: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
	kafka.PolicyViolation:             "POLICY_VIOLATION",
	kafka.InvalidRecord:               "INVALID_RECORD",
}

// sizeRejection reports whether err refuses a request for its size, which
// a smaller request may avoid.
func sizeRejection(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

// tooLarge returns the rejection of message i if it alone exceeds
// BatchBytes.
func (s *KafkaSink) tooLarge(msgs []Message, i int) (Rejection, bool) {
	size := recordSize(&msgs[i])
	if size <= s.k.cfg.BatchBytes {
		return Rejection{}, false
	}
	return Rejection{Index: i, Reason: ReasonExceedsBatchBytes,
		Err: fmt.Errorf("stream: kafka write %s: message %d is %d bytes, more than BatchBytes (%d)", msgs[i].Topic, i, size, s.k.cfg.BatchBytes)}, true
}

// rejectedError returns the *RejectedError of rejs (nil if empty), sorted
// by index.
func rejectedError(rejs []Rejection) error {
	if len(rejs) == 0 {
		return nil
	}
	slices.SortFunc(rejs, func(a, b Rejection) int { return a.Index - b.Index })
	return &RejectedError{Rejected: rejs}
}

// errNotWritten marks an error returned before anything was sent.
type errNotWritten struct{ error }

func (e errNotWritten) Unwrap() error { return e.error }

// recordSize bounds the encoded size of m in a record batch.
func recordSize(m *Message) int64 { return int64(len(m.Key) + len(m.Value) + 32) }

// countByTopic adds to c, per topic, the messages of msgs for which keep
// (nil: every message) holds.
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
	var err error
	if s.w != nil {
		err = s.w.Close()
	}
	s.k.close()
	if err != nil {
		return fmt.Errorf("stream: closing kafka sink: %w", err)
	}
	return nil
}
