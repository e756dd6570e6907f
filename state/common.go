package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// String returns "topic/id".
func (p Partition) String() string { return p.Topic + "/" + strconv.Itoa(int(p.ID)) }

// validTopicByte reports whether b may appear in a topic name: Kafka's
// legal characters [a-zA-Z0-9._-]. This also keeps '{' and '}' out of the
// Redis hash tag.
func validTopicByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-'
}

func (p Partition) validate() error {
	if p.Topic == "" || len(p.Topic) > 249 {
		return fmt.Errorf("state: invalid partition %q/%d: topic must have 1 to 249 characters", p.Topic, p.ID)
	}
	for i := 0; i < len(p.Topic); i++ {
		if !validTopicByte(p.Topic[i]) {
			return fmt.Errorf("state: invalid partition %q/%d: topic may only contain [a-zA-Z0-9._-]", p.Topic, p.ID)
		}
	}
	if p.ID < 0 {
		return fmt.Errorf("state: invalid partition %q/%d: negative ID", p.Topic, p.ID)
	}
	return nil
}

// expiryGrace is Store.ExpiryGrace for an idle time: a sixteenth of it,
// so that an object lives at most 6.25 % longer than IdleTTL after its
// last write, and an object written at least every IdleTTL/16 (a daily
// crawl with the 30-day default, every 45 h) has its expiry refreshed by
// at most every other write.
func expiryGrace(idle time.Duration) time.Duration { return idle / 16 }

// checkCommit validates a Commit's arguments (not its state).
func checkCommit(p Partition, from, to int64) error {
	if err := p.validate(); err != nil {
		return err
	}
	if from < -1 || to < 0 || to < from {
		return fmt.Errorf("state: commit %v: invalid offsets from %d to %d (need -1 <= from <= to, 0 <= to)", p, from, to)
	}
	return nil
}

func fencedError(p Partition, epoch int64, hasStored bool, stored int64) error {
	switch {
	case !hasStored:
		return fmt.Errorf("state: commit %v with epoch %d: partition not claimed: %w", p, epoch, ErrFenced)
	case stored > epoch:
		return fmt.Errorf("state: commit %v with epoch %d, newer epoch %d owns it: %w", p, epoch, stored, ErrFenced)
	default:
		return fmt.Errorf("state: commit %v with epoch %d, which did not claim it (stored epoch %d): %w", p, epoch, stored, ErrFenced)
	}
}

// PartitionSnapshot is the stored state of one partition.
type PartitionSnapshot struct {
	// Next is the stored next offset, -1 if none.
	Next int64
	// Epoch is the stored epoch, -1 if none.
	Epoch int64
	// Objects maps each live object to its value.
	Objects map[string][]byte
}

// Snapshotter reads a whole partition's state, for tests and tools that
// compare the state of two runs byte for byte. It is not for the hot path:
// Redis's implementation scans the partition's keys (SCAN on the node that
// owns its slot) and is not atomic with concurrent commits.
type Snapshotter interface {
	Snapshot(ctx context.Context, p Partition) (PartitionSnapshot, error)
}

// ExpiryCounter is implemented by stores that count expired objects.
type ExpiryCounter interface {
	// Expired returns how many objects have expired so far (as far as the
	// store has observed; see each implementation).
	Expired() uint64
}

var (
	_ Snapshotter   = (*Memory)(nil)
	_ ExpiryCounter = (*Memory)(nil)
)

const (
	reasonFenced   = "fenced"
	reasonMismatch = "offset_mismatch"
	// reasonRepeat: a retried commit found already applied (its first
	// attempt's reply was lost, e.g. a read timeout): the ambiguous case
	// resolved as "applied".
	reasonRepeat = "already_committed"
)

// metrics are the collectors shared by Memory and Redis. Registering on a
// registry that already holds them (e.g. two stores in one process) reuses
// the registered collectors.
type metrics struct {
	batch    prometheus.Histogram
	rejected *prometheus.CounterVec
	expired  prometheus.Counter
	latency  *prometheus.HistogramVec // Redis only
	errors   *prometheus.CounterVec   // Redis only
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "changerate_state_commit_batch_objects",
			Help:    "Objects written (or deleted) per successful state commit.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "changerate_state_commit_rejected_total",
			Help: "Claims and commits rejected, by reason (fenced: a newer epoch owns the partition; offset_mismatch: the stored offset moved; already_committed: a retried commit had been applied, its reply lost).",
		}, []string{"reason"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "changerate_state_expired_objects_total",
			Help: "Objects removed by idle expiry (Redis: as seen through keyspace notifications).",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "changerate_state_redis_command_seconds",
			Help:    "Latency of Redis state operations, by op (claim, takeover, get, commit, memory_usage, snapshot).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "changerate_state_redis_errors_total",
			Help: "Redis state operations that failed with a transport or server error (not fencing), by op.",
		}, []string{"op"}),
	}
	for _, r := range []string{reasonFenced, reasonMismatch, reasonRepeat} {
		m.rejected.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.batch, err = register(reg, m.batch); err != nil {
		return nil, err
	}
	if m.rejected, err = register(reg, m.rejected); err != nil {
		return nil, err
	}
	if m.expired, err = register(reg, m.expired); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, m.latency); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	return m, nil
}

// redisOps are the op labels of the Redis metrics (Redis.observe's callers).
var redisOps = []string{"claim", "takeover", "get", "commit", "memory_usage", "snapshot"}

// initRedis creates the Redis store's per-op series at 0, so that rate()
// and the alerting rules (ChangerateRedisErrors) see them before the first
// error (an absent series means a scrape problem, not "no error"). Memory
// stores, which make no Redis calls, leave them out.
func (m *metrics) initRedis() {
	for _, op := range redisOps {
		m.errors.WithLabelValues(op)
		m.latency.WithLabelValues(op)
	}
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("state: register metrics: %w", err)
	}
	return c, nil
}
