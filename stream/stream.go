// Package stream moves records between processes: it is the seam between
// changerate and Kafka. It defines a Sink (where records are written) and a
// Source (where partitions of records are read from), each with a Kafka
// implementation (segmentio/kafka-go) and in-process implementations for the
// Unix-filter mode and tests (an io.Writer sink, an io.Reader source, an
// in-memory sink, and an in-memory consumer-group source).
//
// Delivery contract: Sink.Write returns nil only after every message of the
// call is acknowledged by the destination (for Kafka: by all in-sync
// replicas); on error, any subset may have been written, so callers that
// need exactly-once downstream rely on keys and idempotent consumers. The
// one exception is an error wrapping ErrRejected (a *RejectedError): the
// destination refused the listed messages permanently (too large, invalid,
// not allowed) and acknowledged all the others, so retrying the listed ones
// is pointless and retrying the others is unnecessary. A
// Source delivers each partition's messages in offset order, from the offset
// its handler seeks to; it never commits on its own.
//
// Where each step lives:
//
//   - stream.go: the contracts (Sink, Source, Claim, Message, the errors).
//   - local.go: the in-process sinks and the line source (WriterSink,
//     MemorySink, ReaderSource).
//   - memory_source.go: MemorySource, the scriptable in-memory twin of
//     KafkaSource (source_diff_test.go runs the same scripts against both).
//   - kafka_config.go: KafkaConfig, its defaults (WithDefaults), Validate,
//     and the clients every Kafka component shares (TLS, SASL, transport).
//   - kafka_source.go: KafkaSource, the consumer-group member: Run, one
//     goroutine per claim and generation (startGeneration, runClaim), the
//     partition-count watch and the commit loop.
//   - kafka_group.go: group incarnations (runGroup) and the watchdog that
//     restarts the group on a join timeout or a fetch stall.
//   - kafka_orphans.go: the rejoin when another member's partition makes no
//     progress.
//   - kafka_claim.go: the claim, one partition for one generation: SeekTo,
//     Fetch, MarkCommitted, GroupOffset and revocation (ErrRevoked).
//   - kafka_fetcher.go: the fetcher behind a claim: fetch requests with
//     deadlines, retries, decoding, out-of-range detection.
//   - kafka_sink.go: KafkaSink, Write and the classification of permanent
//     rejections; kafka_sink_direct.go and kafka_sink_batched.go: its two
//     modes (KafkaConfig.Linger).
//   - kafka_topics.go, kafka_partitions.go: topic administration
//     (EnsureTopics) and snapshot reads (TopicPartitions, ReadTopic).
//   - kafka_metrics.go: the Prometheus metrics of sinks and sources.
package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Topic names used by the pipeline. Each is configurable; these are the
// defaults.
const (
	TopicObservations  = "observations"
	TopicEstimates     = "estimates"
	TopicAccessReports = "access-reports"
	TopicAlerts        = "alerts"
	TopicDeadLetter    = "dead-letter"
	// TopicLate receives observations later than the aggregator's allowed
	// lateness, with the reason (dead-letter records, reason "late").
	TopicLate = "late"
)

// ErrClosed is returned by a Sink or Source used after Close.
var ErrClosed = errors.New("stream: closed")

// ErrRevoked is returned by Claim.Fetch after the partition was taken away
// from this consumer (a rebalance, or the group session expired). A handler
// must stop writing state for the partition when it sees it.
var ErrRevoked = errors.New("stream: partition revoked")

// Message is one record in a topic.
type Message struct {
	Topic     string
	Partition int32 // set by a Source; ignored by a Sink (the key decides)
	Offset    int64 // set by a Source; ignored by a Sink
	Key       []byte
	Value     []byte
	Time      time.Time // broker or producer time; zero when unknown
}

// Sink writes messages. Implementations are safe for concurrent use.
type Sink interface {
	// Write writes msgs and returns when all of them are acknowledged, or
	// with the first error. Messages with the same key keep their order.
	//
	// When the error wraps ErrRejected (errors.As finds a
	// *RejectedError), every message not listed in the RejectedError was
	// acknowledged, and the listed ones were not written and would be
	// refused again if retried: the caller must deal with them (for
	// example send a dead letter instead) rather than retry. Any other
	// error means that any subset may have been written, and a retry of
	// the whole call is the remedy.
	//
	// Once Write returned nil (or a RejectedError), the sink holds no
	// reference to msgs, their keys or their values: the caller may reuse
	// their memory. After any other error it may still hold them.
	Write(ctx context.Context, msgs ...Message) error
	// Close flushes and releases resources. Write after Close returns
	// ErrClosed.
	Close() error
}

// Source delivers the partitions this process owns.
type Source interface {
	// Run calls handle once per partition assignment, each in its own
	// goroutine, until ctx is cancelled or the source fails. The context
	// passed to handle is cancelled when the partition is revoked or Run is
	// stopping; handle must return promptly then. Run returns after every
	// handle call has returned. A handle error ends the assignment and is
	// logged; it does not stop Run unless it wraps ErrFatal.
	Run(ctx context.Context, handle func(ctx context.Context, c Claim) error) error
}

// ErrFatal marks a handler error that must stop the whole Source (for
// example an offset that is out of range, which must not be skipped).
var ErrFatal = errors.New("stream: fatal")

// Claim is one owned partition of one topic, for one generation of the
// consumer group. SeekTo and Fetch are called by one goroutine (the
// handler's); MarkCommitted may be called from any goroutine.
type Claim interface {
	Topic() string
	Partition() int32
	// Generation is the consumer-group generation that granted the claim.
	// It increases with every rebalance and serves as a fencing epoch.
	Generation() int64
	// SeekTo positions the claim at offset; a negative offset means the
	// earliest available one. It must be called before the first Fetch. If
	// offset is beyond the log or no longer retained, Fetch fails with an
	// error wrapping ErrFatal.
	SeekTo(offset int64) error
	// Fetch returns the next messages in offset order: at least one, at
	// most max. It waits for the first message until ctx is done (then it
	// returns ctx.Err()); it returns io.EOF when the source is finite and
	// exhausted, and ErrRevoked when the claim was taken away.
	Fetch(ctx context.Context, max int) ([]Message, error)
	// MarkCommitted tells the source that every offset below next is
	// durably processed. Kafka sources commit it to the group for lag
	// monitoring only; it is not a delivery guarantee. A next lower than
	// an earlier one is ignored. It may be called from another goroutine
	// than Fetch, concurrently with it, and must not block.
	MarkCommitted(next int64)
}

// ErrRejected is wrapped by the errors of Sink.Write that report messages
// the destination refused permanently; the error is a *RejectedError.
var ErrRejected = errors.New("stream: rejected")

// Rejection is one message a Sink refused permanently.
type Rejection struct {
	// Index is the message's index in the msgs of the Write call.
	Index int
	// Reason is a short stable code, usable as a metric label: the Kafka
	// protocol error name (for example "MESSAGE_TOO_LARGE",
	// "INVALID_RECORD") or ReasonExceedsBatchBytes.
	Reason string
	// Err is the cause, with details; never nil.
	Err error
}

// ReasonExceedsBatchBytes is the Rejection.Reason of a message refused
// before sending because it alone is larger than the sink's largest request
// (KafkaConfig.BatchBytes).
const ReasonExceedsBatchBytes = "EXCEEDS_BATCH_BYTES"

// RejectedError is returned by Sink.Write when some messages were refused
// permanently and every other message of the call was acknowledged (see
// Sink.Write). errors.Is(err, ErrRejected) holds for it, and errors.Is and
// errors.As also see the causes of the rejections.
type RejectedError struct {
	// Rejected lists the refused messages, in increasing Index order, each
	// once; it is not empty.
	Rejected []Rejection
}

// Error lists the first few rejections.
func (e *RejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stream: %d message(s) rejected permanently", len(e.Rejected))
	for k, r := range e.Rejected {
		if k == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Rejected)-k)
			break
		}
		sep := ", "
		if k == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%smessage %d (%s): %v", sep, r.Index, r.Reason, r.Err)
	}
	return b.String()
}

// Is reports whether target is ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns the causes of the rejections.
func (e *RejectedError) Unwrap() []error {
	errs := make([]error, 0, len(e.Rejected))
	for _, r := range e.Rejected {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errs
}
