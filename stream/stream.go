// Package stream moves records between processes: it is the seam between
// changerate and Kafka. It defines a Sink (where records are written) and a
// Source (where partitions of records are read from), each with a Kafka
// implementation (segmentio/kafka-go) and in-process implementations for the
// Unix-filter mode and tests (an io.Writer sink, an io.Reader source, and an
// in-memory sink).
//
// Delivery contract: Sink.Write returns nil only after every message of the
// call is acknowledged by the destination (for Kafka: by all in-sync
// replicas); on error, any subset may have been written, so callers that
// need exactly-once downstream rely on keys and idempotent consumers. A
// Source delivers each partition's messages in offset order, from the offset
// its handler seeks to; it never commits on its own.
package stream

import (
	"context"
	"errors"
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
	// monitoring only; it is not a delivery guarantee. It may be called
	// from another goroutine than Fetch, concurrently with it, and must not
	// block.
	MarkCommitted(next int64)
}
