// Package state keeps the aggregator's per-object state and per-partition
// offsets, and applies a batch's changes to both in one atomic step.
//
// The values are opaque bytes (package aggregate encodes them); this package
// only knows keys, partitions, offsets and epochs. Two implementations share
// the Store interface: Redis (go-redis/v9, standalone or Cluster) for
// production and Memory for the offline and demo modes and for tests.
//
// Effectively-once contract: a partition is owned by one epoch at a time (the
// consumer-group generation that was assigned it). Commit writes a batch's
// values and moves the partition's next offset from `from` to `to` only if
// the stored offset is still `from` and the stored epoch is the caller's;
// otherwise it changes nothing and returns ErrFenced or ErrOffsetMismatch. A
// replay after a crash therefore re-applies exactly the batches whose commit
// did not happen, and a consumer that lost its partition cannot write.
//
// Redis layout, scripts, durability (AOF), expiry counting and their limits
// are documented on the Redis type and in docs/state-layout.md;
// RedisConfig documents every option and its default. Memory budget: with
// RedisConfig.KeyFormat "compact" an object with a 180-byte value takes
// 248 bytes by MEMORY USAGE (312 with readable keys of ~70 bytes); see
// BenchmarkMemoryPerObject. The default "buckets" saves the key and the
// expiry per object (docs/bench.md measures used_memory per object).
package state

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrFenced is returned when a newer epoch owns the partition: the caller
// lost it and must stop processing it.
var ErrFenced = errors.New("state: partition owned by a newer epoch")

// ErrOffsetMismatch is returned by Commit when the stored offset is not the
// one the batch started from: the caller's view is stale and it must reload
// (Claim again) before processing more.
var ErrOffsetMismatch = errors.New("state: stored offset differs from the batch start")

// ErrAlreadyCommitted is returned by Commit, together with
// ErrOffsetMismatch (errors.Is matches both), when the stored offset is not
// from but the last commit applied was exactly from → to with the same
// epoch: typically a retry of a commit whose reply was lost (a timeout),
// which had in fact been applied. Nothing was written; a caller that
// checks for it may continue from to.
var ErrAlreadyCommitted = errors.New("state: batch already committed")

// errRepeat wraps both ErrOffsetMismatch and ErrAlreadyCommitted.
var errRepeat = fmt.Errorf("%w: %w", ErrAlreadyCommitted, ErrOffsetMismatch)

// ErrKeyCollision is returned by a Redis store with compact keys when two
// partitions (different KeyPrefix+topic, same tag) would share keys: choose
// another KeyPrefix. Nothing was written.
var ErrKeyCollision = errors.New("state: partitions share compact Redis keys")

// Partition names one partition of one input topic. All keys of a partition
// share one Redis Cluster hash slot.
type Partition struct {
	Topic string
	ID    int32
}

// Write is one object's new value in a Commit. A nil Value deletes the object.
type Write struct {
	Object string
	Value  []byte
	// KeepExpiry lets the store leave the object's expiry as it is. The
	// caller may set it only when one of its own Commits of this object,
	// with KeepExpiry false, was called less than the store's ExpiryGrace
	// ago (measured from before that call) and succeeded. An object that
	// does not exist (never stored, deleted or expired) gets a new expiry
	// anyway. Refreshing an expiry is the most expensive part of a Redis
	// write (the expires table: about a third of a SET's cost).
	KeepExpiry bool
	// Digest is DigestOf(Object), or the zero Digest: the store then
	// computes it. A Digest of another name writes the value under that
	// name's field.
	Digest Digest
}

// DigestGetter is a Store that can read objects whose digests the caller
// computed (DigestOf): GetDigests is Get with digests[i] the Digest of
// objects[i] (or the zero Digest), which saves the store hashing the
// names again.
type DigestGetter interface {
	GetDigests(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error)
}

// Store is the aggregator's state. Implementations are safe for concurrent
// use by the handlers of different partitions; calls for one partition are
// made by one goroutine at a time.
type Store interface {
	// Claim makes epoch the owner of p (if epoch is not older than the
	// stored one) and returns p's stored next offset, or -1 when none is
	// stored. It returns ErrFenced if a newer epoch owns p. Claiming again
	// with the stored epoch is allowed and changes nothing.
	Claim(ctx context.Context, p Partition, epoch int64) (next int64, err error)
	// Takeover makes epoch the owner of p whatever epoch is stored, and
	// returns p's stored next offset (-1 when none). It is for a consumer
	// group whose generations restarted (the group was deleted and created
	// again, or expired after its offsets' retention): its generations are
	// then below the epochs stored by the earlier group and Claim refuses
	// them. A caller uses it only when Claim returned ErrFenced and its own
	// generation is still the group's current one; a zombie of the earlier
	// group is still fenced afterwards, because Commit requires the stored
	// epoch to equal the committer's. State stays effectively-once either
	// way: Commit also compares the stored offset.
	Takeover(ctx context.Context, p Partition, epoch int64) (next int64, err error)
	// Get appends to dst the stored values of objects of partition p, in
	// order, with nil for objects that have none (never stored, deleted or
	// expired), and returns dst. The values are the caller's to keep and
	// modify. Get does not refresh expiry.
	Get(ctx context.Context, p Partition, objects []string, dst [][]byte) ([][]byte, error)
	// Commit atomically checks that p is owned by epoch and its stored next
	// offset is from (-1: none stored), then writes every value, refreshes
	// their expiry, and stores to as p's next offset. On ErrFenced or
	// ErrOffsetMismatch nothing was written. It requires -1 <= from <= to
	// and 0 <= to. A non-nil empty Value is stored (and read back) as an
	// empty, non-nil value. Commit copies the values.
	//
	// On any other error (e.g. a timeout) the commit may or may not have
	// been applied; retrying it is safe: a repeat of an applied commit gets
	// ErrOffsetMismatch and ErrAlreadyCommitted, and Claim tells the stored
	// offset. Commit with an epoch other than
	// the stored one, newer or older, or on a partition never claimed,
	// returns ErrFenced.
	Commit(ctx context.Context, p Partition, epoch, from, to int64, writes []Write) error
	// ExpiryGrace is how long a Commit's new expiries outlast the idle
	// time: a Commit sets an object's expiry IdleTTL + ExpiryGrace ahead
	// unless its Write has KeepExpiry. An object therefore lives at least
	// IdleTTL and at most IdleTTL + ExpiryGrace after its last write. It
	// is IdleTTL/16 (expiryGrace) for Redis's per-object formats, and 0
	// when objects never expire or when the store measures expiry from
	// every write (the bucketed layout, Memory): KeepExpiry changes
	// nothing then.
	ExpiryGrace() time.Duration
	// Close releases the store's connections.
	Close() error
}
