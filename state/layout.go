package state

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
	"unsafe"
)

// The bucketed layout (KeyFormatBuckets, the default; docs/state-layout.md).
// A partition's objects live in a fixed number of Redis hashes, its
// buckets: the bucket of an object is a function of the SHA-256 of its
// name, the field is the object's compact key without the tag (the bytes
// a compact per-key store used after the tag, so that a state written by
// the previous release migrates to the same name), and the value is a
// 6-byte stamp (the Unix millisecond of the commit that wrote it,
// big-endian) followed by the caller's value. Nothing has a Redis TTL:
// the partition's owner deletes idle objects by sweeping its buckets, a
// few per commit, inside the fenced commit (sweep below). Memory keeps the
// same buckets and sweeps them with the same plan, so that both count
// expiries at the same commits.

// DefaultBuckets is the default number of buckets per partition
// (RedisConfig.Buckets, MemoryConfig.Buckets). Redis Cluster moves a slot
// key by key (MIGRATE), blocking the source and the target node for the
// time a key takes to serialise, transfer and load: a bucket must stay
// small. Design point: 10^9 objects over 256 partitions, 3.9 million per
// partition; 1024 buckets give 3,800 objects, about 0.7 MB, per bucket,
// which MIGRATE moves in about 6 ms on 1 Gbit/s (DUMP and RESTORE of a
// hash run at hundreds of MB/s; the wire dominates). At 100,000 objects
// over 12 partitions a bucket holds 8 objects and its key costs about
// 12 bytes per object; at 1,000,000, about 1.2. Why not fewer: "without
// a long block" read as Redis's own threshold for a slow command
// (slowlog-log-slower-than, 10 ms by default), a bucket may hold 1.25 MB
// (10 ms at 1 Gbit/s), 6,800 objects of 184 bytes (0.7 MB / 3,800): at the
// design point that needs at least 3.9e6/6,800 = 574 buckets; 512 would
// give 7,600 objects, 1.4 MB, 11 ms; 1024 is the smallest power of two
// under the threshold (the count need not be one). A
// deployment far below the design point may use fewer (the commit's HSETs
// then carry more fields each, which costs Redis less CPU per
// observation): CHANGERATE_REDIS_BUCKETS. Derivation and the measured
// figures: docs/state-layout.md.
const DefaultBuckets = 1024

// MaxBuckets bounds the bucket count: three base-64 digits in a compact
// bucket key.
const MaxBuckets = 1 << 18

// stampLen is the length of the stamp before each stored value.
const stampLen = 6

// sweepPerCommit bounds the buckets one commit sweeps, so that a commit
// after a long pause does not block Redis with a whole pass.
const sweepPerCommit = 8

// sweepPasses is how many sweeps of the whole partition fit in IdleTTL: an
// idle object is deleted at most about IdleTTL/sweepPasses after it
// became idle (plus the time to the next commit or idle tick).
const sweepPasses = 16

// objectHash returns the SHA-256 of object without copying it.
func objectHash(object string) [32]byte {
	// Sum256 only reads its argument, so the string's bytes can be
	// viewed as a slice without a copy (called for every read and write).
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(object), len(object)))
}

// bucketOf returns the bucket of an object whose name's hash begins with
// h (at least 4 bytes).
func bucketOf(h []byte, nb int) int {
	return int(binary.BigEndian.Uint32(h[:4]) % uint32(nb))
}

// digestLen is how many leading bytes of an object name's SHA-256 the
// bucketed layout reads: the bucket (bytes 0–3), the field (bytes 0 to
// compactKeyLen − len(tag) − 1; a compact tag has at least 4 bytes, so at
// most bytes 0–9) and a commit plan's sort bits (bytes 4–11).
const digestLen = 12

// Digest is the part of an object name's SHA-256 that the bucketed layout
// derives the object's bucket and field from (DigestOf). A caller that
// writes an object many times can compute it once and pass it with each
// Write (and to GetDigests), where the store otherwise hashes the name at
// every read and commit: SHA-256 of a 65-byte URL (two blocks) was 4–8 %
// of the aggregator's CPU in the live shape, once per state written. The
// zero Digest means none: the store hashes the name (a name whose digest
// is zero, probability 2⁻⁹⁶, is therefore only hashed again).
type Digest [digestLen]byte

// DigestOf returns object's Digest.
func DigestOf(object string) Digest {
	h := objectHash(object)
	return Digest(h[:digestLen])
}

// digestOr returns d if it is set, else object's Digest.
func digestOr(d Digest, object string) Digest {
	if d != (Digest{}) {
		return d
	}
	return DigestOf(object)
}

// putStamp writes ms as 6 big-endian bytes at the start of dst.
func putStamp(dst []byte, ms int64) {
	for i := stampLen - 1; i >= 0; i-- {
		dst[i] = byte(ms)
		ms >>= 8
	}
}

// stampOf returns the stamp at the start of v, and false if v is too
// short to hold one.
func stampOf(v []byte) (int64, bool) {
	if len(v) < stampLen {
		return 0, false
	}
	var ms int64
	for _, b := range v[:stampLen] {
		ms = ms<<8 | int64(b)
	}
	return ms, true
}

// idleAt reports whether a value stamped at stamp is idle (expired) at now
// for ttl (both in ms; ttl 0: never): the object lives exactly ttl after
// its last write.
func idleAt(stamp, now, ttl int64) bool { return ttl > 0 && now-stamp >= ttl }

// sweep is the sweep plan of one partition: which bucket comes next and
// how much sweeping is owed. A pass over the partition's nb buckets takes
// IdleTTL/sweepPasses: the plan earns nb buckets per period of commit time
// and spends them (at most sweepPerCommit per commit).
type sweep struct {
	nb     int
	cursor int   // next bucket to sweep
	credit int64 // earned bucket·ms, < nb·period after a plan
	last   int64 // Unix ms of the last plan, 0: none
}

// sweepStep is one commit's part of a sweep: k buckets from cursor on
// (modulo nb), and the plan's state once the commit succeeded.
type sweepStep struct {
	first, k int
	after    sweep
}

// plan returns the buckets a commit at now (Unix ms) sweeps for idle time
// ttl (ms; 0: none). The caller applies step.after only if the commit
// succeeded.
func (s sweep) plan(now, ttl int64) sweepStep {
	if ttl <= 0 || s.nb <= 0 {
		return sweepStep{after: s}
	}
	period := max(ttl/sweepPasses, 1)
	if s.last == 0 || now < s.last {
		s.last = now // the first plan, or the clock went back: earn from now
	}
	el := min(now-s.last, period) // at most one pass is owed
	s.credit = min(s.credit+el*int64(s.nb), int64(s.nb)*period)
	s.last = now
	k := min(s.credit/period, sweepPerCommit, int64(s.nb))
	s.credit -= k * period
	st := sweepStep{first: s.cursor, k: int(k)}
	s.cursor = (s.cursor + int(k)) % s.nb
	st.after = s
	return st
}

// restart returns the plan of a new owner that claimed the partition at
// now: the stored cursor, no credit, earning from now.
func (s sweep) restart(now int64) sweep { return sweep{nb: s.nb, cursor: s.cursor, last: now} }

// due reports whether a commit at now would sweep a bucket: the idle tick
// of an owner without input commits an empty batch then.
func (s sweep) due(now, ttl int64) bool { return s.plan(now, ttl).k > 0 }

// unixMS returns t in Unix milliseconds.
func unixMS(t time.Time) int64 { return t.UnixMilli() }

// Sweeper is implemented by stores whose idle expiry is a sweep that runs
// inside the owner's commits (both stores with the bucketed layout). An
// owner without input calls SweepDue at its idle tick and, when it
// reports true, commits an empty batch (from = to = its next offset) so
// that idle objects are still deleted.
type Sweeper interface {
	// SweepDue reports whether a commit of p now would sweep buckets.
	SweepDue(p Partition) bool
}
