package state

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis, standalone or Cluster (any
// redis.UniversalClient).
//
// Layout: every key of partition p starts with one hash tag, so all of them
// hash to one Cluster slot and one Lua script can touch them atomically.
// With the default key format, "buckets" (redis_buckets.go,
// docs/state-layout.md), p's objects are fields of a fixed number of
// hashes, each value stamped with its commit's time, and idle objects are
// deleted by the owner's sweep inside its commits (no Redis TTL). The
// per-object formats of the previous release (RedisConfig.KeyFormat),
// still selectable, are:
//
//	{cr:obs:3}:meta         hash: "epoch" (owner), "next" (next offset),
//	                        "prev" and "pe" (from and epoch of the last
//	                        commit, to recognise its repeat)
//	{cr:obs:3}:o:<object>   string: the object's value, PX IdleTTL +
//	                        ExpiryGrace (KEEPTTL for a Write with
//	                        KeepExpiry, if the key exists)
//
// With the compact key format the tag is 2-4
// characters, the meta hash also holds "owner" (KeyPrefix+topic:id, to
// detect two partitions with the same tag), and an object's key is the tag
// followed by 8-10 bytes of SHA-256 of its name, 14 bytes in all.
//
// Claim and Commit are Lua scripts (EVALSHA, falling back to EVAL when the
// script is not cached), so each is one atomic step on one node. Get is one
// MGET (per-object formats) or one HMGET per bucket. Values are opaque bytes. While a Cluster slot migrates, commits to
// its partitions may fail (TRYAGAIN/ASK); they changed nothing then and may
// be retried.
//
// Durability: a commit's values and offset are one script, which Redis
// writes to its AOF as one MULTI/EXEC block; after a crash the AOF loads
// whole blocks only (aof-load-truncated drops a torn last block), so
// values and offsets rewind together. With appendfsync everysec an OS
// crash loses about the last second of commits; a replay from the
// rewound offset restores them.
//
// Redis must not evict keys (maxmemory-policy noeviction): eviction would
// drop state silently. NewRedis logs a warning otherwise.
//
// With the per-object formats, expired objects are counted from keyspace notifications
// (__keyevent@<db>__:expired) by one background subscription per master
// (see RedisConfig.ExpiryEvents). Limits: notifications are fire-and-forget,
// so expiries while a subscription is down (reconnects, failovers) are not
// counted (go-redis resubscribes after a reconnect, and a goroutine re-adds
// the flags every ExpiryEventsRecheck, since a restarted Redis forgets a
// CONFIG SET); masters added to a Cluster after NewRedis are not
// subscribed; with compact keys every compact-format key of the server is
// counted, whatever its KeyPrefix; Redis expires a key when it is accessed
// or found by its active expiry cycle, so the count lags the TTL by up to
// seconds; and every expiry is counted by every Redis store subscribed to
// the same server (sum the metric over one replica of the aggregator only,
// or use max). Close stops the subscriptions.
//
// Redis is safe for concurrent use.
type Redis struct {
	c       redis.UniversalClient
	ownsC   bool // Close closes c
	cfg     RedisConfig
	ttlMS   string
	compact bool // compact tags (KeyFormatCompact and KeyFormatBuckets)
	buckets bool // the bucketed layout (redis_buckets.go)
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics

	partMu   sync.Mutex
	parts    map[Partition]*rpart // bucketed layout: bucket counts and sweep plans
	migrated atomic.Uint64
	planMu   sync.Mutex
	plans    []*commitPlan // kept for the next commits (redis_commit_plan.go)

	// beforeExec, when set (tests), runs between a transaction commit's
	// check and its EXEC.
	beforeExec func()

	expired atomic.Uint64
	ownMu   sync.RWMutex
	owned   map[string]bool // tags of claimed, not fenced partitions
	subs    []*redis.PubSub
	done    chan struct{} // closed by Close
	wg      sync.WaitGroup
	closeMu sync.Mutex
	closed  bool
}

var (
	_ Store         = (*Redis)(nil)
	_ Snapshotter   = (*Redis)(nil)
	_ ExpiryCounter = (*Redis)(nil)
)

// NewRedis connects to Redis as cfg describes, checks that it answers, and
// returns a store that owns the client (Close closes it). Metrics are
// registered on reg unless it is nil; logger nil discards logs.
func NewRedis(cfg RedisConfig, logger *slog.Logger, reg prometheus.Registerer) (*Redis, error) {
	c, err := NewRedisClient(cfg)
	if err != nil {
		return nil, err
	}
	r, err := newRedis(c, true, cfg, logger, reg)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return r, nil
}

// NewRedisFromClient returns a store on an existing client (e.g. a test
// server's). Only cfg's KeyPrefix, IdleTTL and ExpiryEvents are used; cfg's
// connection fields are ignored, and Close does not close client.
func NewRedisFromClient(client redis.UniversalClient, cfg RedisConfig, logger *slog.Logger, reg prometheus.Registerer) (*Redis, error) {
	return newRedis(client, false, cfg, logger, reg)
}

func newRedis(c redis.UniversalClient, owned bool, cfg RedisConfig, logger *slog.Logger, reg prometheus.Registerer) (*Redis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	m.initRedis()
	r := &Redis{c: c, ownsC: owned, owned: map[string]bool{}, cfg: cfg, ttlMS: strconv.FormatInt((cfg.IdleTTL + expiryGrace(cfg.IdleTTL)).Milliseconds(), 10),
		compact: cfg.KeyFormat != KeyFormatReadable, buckets: cfg.KeyFormat == KeyFormatBuckets, now: cfg.Now,
		parts: map[Partition]*rpart{}, done: make(chan struct{}), log: logger.With("component", "state.redis"), metrics: m}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout+cfg.ReadTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("state: redis ping: %w", err)
	}
	r.checkEviction(ctx)
	if cfg.ExpiryEvents != ExpiryEventsOff {
		if err := r.subscribeExpired(ctx); err != nil {
			r.stopSubs()
			return nil, err
		}
	}
	return r, nil
}

// masters returns a client per master node (one for standalone).
func (r *Redis) masters(ctx context.Context) ([]*redis.Client, error) {
	switch c := r.c.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		var out []*redis.Client
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			out = append(out, n)
			mu.Unlock()
			return nil
		})
		return out, err
	case *redis.Client:
		return []*redis.Client{c}, nil
	default:
		return nil, fmt.Errorf("state: unsupported client type %T", r.c)
	}
}

// checkEviction logs a warning if a master may evict keys.
func (r *Redis) checkEviction(ctx context.Context) {
	nodes, err := r.masters(ctx)
	if err != nil {
		return
	}
	for _, n := range nodes {
		v, err := n.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			r.log.Debug("cannot read maxmemory-policy", "addr", n.Options().Addr, "err", err)
			continue
		}
		if p := v["maxmemory-policy"]; p != "" && p != "noeviction" {
			r.log.Warn("Redis may evict state keys; use maxmemory-policy noeviction", "addr", n.Options().Addr, "policy", p)
		}
	}
}

// Client returns the underlying client.
func (r *Redis) Client() redis.UniversalClient { return r.c }

func (r *Redis) observe(op string, start time.Time, err error) {
	r.metrics.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		r.metrics.errors.WithLabelValues(op).Inc()
	}
}

// Claim implements Store with one Lua script. Epochs must lie within
// ±2^53 (Lua compares them as doubles).
func (r *Redis) Claim(ctx context.Context, p Partition, epoch int64) (int64, error) {
	return r.claim(ctx, "claim", claimScript, p, epoch)
}

// Takeover implements Store with one Lua script.
func (r *Redis) Takeover(ctx context.Context, p Partition, epoch int64) (int64, error) {
	return r.claim(ctx, "takeover", takeoverScript, p, epoch)
}

// claim runs the claim or takeover script and returns the stored offset.
func (r *Redis) claim(ctx context.Context, op string, script *redis.Script, p Partition, epoch int64) (int64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	if r.buckets {
		return r.claimBuckets(ctx, op, p, epoch)
	}
	start := time.Now()
	v, err := script.Run(ctx, r.c, []string{r.MetaKey(p)}, strconv.FormatInt(epoch, 10), r.owner(p)).Result()
	r.observe(op, start, err)
	if err != nil {
		return 0, fmt.Errorf("state: %s %v: %w", op, p, err)
	}
	code, stored, next, err := parseReply(v)
	if err != nil {
		return 0, err
	}
	switch code {
	case codeOK:
		r.own(r.tag(p), true)
	case codeFenced:
		r.own(r.tag(p), false)
		r.metrics.rejected.WithLabelValues(reasonFenced).Inc()
		return 0, fmt.Errorf("state: %s %v with epoch %d, stored epoch %s: %w", op, p, epoch, stored, ErrFenced)
	case codeOwner:
		return 0, fmt.Errorf("state: %s %v: its compact keys are used by %q: %w", op, p, stored, ErrKeyCollision)
	default:
		return 0, fmt.Errorf("state: %s %v: unexpected script code %d", op, p, code)
	}
	return parseNext(op, p, next)
}

// parseNext reads a partition's stored next offset ("" is none: -1).
func parseNext(op string, p Partition, next string) (int64, error) {
	if next == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(next, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("state: %s %v: stored offset %q: %w", op, p, next, err)
	}
	return n, nil
}

// Get implements Store: one HMGET per touched bucket in the bucketed
// layout, one MGET in the per-object ones (all keys are in one slot).
func (r *Redis) Get(ctx context.Context, p Partition, objects []string, dst [][]byte) ([][]byte, error) {
	return r.get(ctx, p, objects, nil, dst)
}

// get is Get with the objects' digests when the caller has them (nil:
// computed where the layout needs them).
func (r *Redis) get(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error) {
	if err := p.validate(); err != nil {
		return dst, err
	}
	if len(objects) == 0 {
		return dst, nil
	}
	if r.buckets {
		return r.getBuckets(ctx, p, objects, digests, dst)
	}
	return r.getKeys(ctx, p, r.tag(p), objects, dst)
}

// getKeys reads objects in the per-object layout with one MGET (all keys
// are in one slot).
func (r *Redis) getKeys(ctx context.Context, p Partition, tag string, objects []string, dst [][]byte) ([][]byte, error) {
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = r.objectKey(tag, o)
	}
	start := time.Now()
	vals, err := r.c.MGet(ctx, keys...).Result()
	r.observe("get", start, err)
	if err != nil {
		return dst, fmt.Errorf("state: get %v: %w", p, err)
	}
	if len(vals) != len(objects) {
		return dst, fmt.Errorf("state: get %v: %d values for %d keys", p, len(vals), len(objects))
	}
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			dst = append(dst, nil)
		case string:
			dst = append(dst, []byte(v))
		default:
			return dst, fmt.Errorf("state: get %v: unexpected value type %T", p, v)
		}
	}
	return dst, nil
}

// ExpiryGrace implements Store: IdleTTL/16 for the per-object layouts; 0
// for the bucketed layout, whose expiry is measured from every write.
func (r *Redis) ExpiryGrace() time.Duration {
	if r.buckets {
		return 0
	}
	return expiryGrace(r.cfg.IdleTTL)
}

// Commit implements Store with one Lua script (EVALSHA) per call, or, in
// the bucketed layout, one transaction (WATCH/MULTI/EXEC) per call without
// a sweep step. On an error other than ErrFenced and ErrOffsetMismatch
// (e.g. a timeout) the script or the transaction may or may not have run:
// Claim again to read the stored offset.
func (r *Redis) Commit(ctx context.Context, p Partition, epoch, from, to int64, writes []Write) error {
	if err := checkCommit(p, from, to); err != nil {
		return err
	}
	if r.buckets {
		return r.commitBuckets(ctx, p, epoch, from, to, writes)
	}
	tag := r.tag(p)
	keys := make([]string, 1, len(writes)+1)
	keys[0] = tag + ":meta"
	ops := make([]byte, len(writes))
	args := make([]any, 6, 6+len(writes))
	args[0] = strconv.FormatInt(epoch, 10)
	args[1] = strconv.FormatInt(from, 10)
	args[2] = strconv.FormatInt(to, 10)
	args[3] = r.ttlMS
	args[5] = r.owner(p)
	for i, w := range writes {
		keys = append(keys, r.objectKey(tag, w.Object))
		if w.Value == nil {
			ops[i] = 'd'
			continue
		}
		ops[i] = 's'
		if w.KeepExpiry && r.cfg.IdleTTL > 0 {
			ops[i] = 'k'
		}
		args = append(args, w.Value)
	}
	args[4] = ops
	start := time.Now()
	v, err := commitScript.Run(ctx, r.c, keys, args...).Result()
	r.observe("commit", start, err)
	if err != nil {
		return fmt.Errorf("state: commit %v: %w", p, err)
	}
	code, storedEpoch, next, err := parseReply(v)
	if err != nil {
		return err
	}
	return r.commitResult(p, epoch, from, to, len(writes), code, storedEpoch, next)
}

// commitResult turns a commit script's reply into Commit's result.
func (r *Redis) commitResult(p Partition, epoch, from, to int64, writes int, code int64, storedEpoch, next string) error {
	switch code {
	case codeOK:
		r.metrics.batch.Observe(float64(writes))
		return nil
	case codeFenced:
		r.own(r.tag(p), false)
		r.metrics.rejected.WithLabelValues(reasonFenced).Inc()
		if storedEpoch == "" {
			return fencedError(p, epoch, false, 0)
		}
		se, _ := strconv.ParseInt(storedEpoch, 10, 64)
		return fencedError(p, epoch, true, se)
	case codeMismatch:
		r.metrics.rejected.WithLabelValues(reasonMismatch).Inc()
		return fmt.Errorf("state: commit %v from offset %d, stored %s: %w", p, from, next, ErrOffsetMismatch)
	case codeRepeat:
		r.metrics.rejected.WithLabelValues(reasonRepeat).Inc()
		return fmt.Errorf("state: commit %v from offset %d to %d: %w", p, from, to, errRepeat)
	case codeOwner:
		return fmt.Errorf("state: commit %v: its compact keys are used by %q: %w", p, storedEpoch, ErrKeyCollision)
	default:
		return fmt.Errorf("state: commit %v: unexpected script code %d", p, code)
	}
}

// MemoryUsage returns Redis's MEMORY USAGE of object's key in p, in bytes
// (key, value and their allocation overhead, as Redis estimates it), or 0
// if the object is not stored.
func (r *Redis) MemoryUsage(ctx context.Context, p Partition, object string) (int64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	if r.buckets {
		return r.memoryUsageBuckets(ctx, p, object)
	}
	start := time.Now()
	n, err := r.c.MemoryUsage(ctx, r.ObjectKey(p, object), 0).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	r.observe("memory_usage", start, err)
	if err != nil {
		return 0, fmt.Errorf("state: memory usage %v: %w", p, err)
	}
	return n, nil
}

// Snapshot implements Snapshotter: it scans p's object keys on the node
// that owns p's slot and reads their values and p's epoch and offset.
func (r *Redis) Snapshot(ctx context.Context, p Partition) (snap PartitionSnapshot, err error) {
	if err := p.validate(); err != nil {
		return PartitionSnapshot{}, err
	}
	start := time.Now()
	defer func() { r.observe("snapshot", start, err) }()
	meta := r.MetaKey(p)
	var node redis.Cmdable = r.c
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, meta)
		if err != nil {
			return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: %w", p, err)
		}
		node = n
	}
	snap = PartitionSnapshot{Next: -1, Epoch: -1, Objects: map[string][]byte{}}
	st, err := r.c.HMGet(ctx, meta, "epoch", "next").Result()
	if err != nil {
		return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: %w", p, err)
	}
	for i, dst := range []*int64{&snap.Epoch, &snap.Next} {
		if s, ok := st[i].(string); ok {
			if *dst, err = strconv.ParseInt(s, 10, 64); err != nil {
				return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: meta %q: %w", p, s, err)
			}
		}
	}
	if r.buckets {
		return r.snapshotBuckets(ctx, p, snap)
	}
	tag := r.tag(p)
	prefix := tag + ":o:"
	if r.compact {
		prefix = tag
	}
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, escapeGlob(prefix)+"*", 1000).Result()
		if err != nil {
			return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: scan: %w", p, err)
		}
		if len(keys) > 0 {
			vals, err := r.c.MGet(ctx, keys...).Result()
			if err != nil {
				return PartitionSnapshot{}, fmt.Errorf("state: snapshot %v: %w", p, err)
			}
			for i, v := range vals {
				s, ok := v.(string)
				if !ok {
					continue
				}
				name := strings.TrimPrefix(keys[i], prefix)
				if r.compact {
					if len(keys[i]) != compactKeyLen {
						continue // the meta key
					}
					name = "#" + hex.EncodeToString([]byte(name))
				}
				snap.Objects[name] = []byte(s)
			}
		}
		if next == 0 {
			return snap, nil
		}
		cursor = next
	}
}

// Close stops the expiry subscriptions and, if NewRedis built the client,
// closes it. It is idempotent.
func (r *Redis) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.stopSubs()
	if r.ownsC {
		if err := r.c.Close(); err != nil {
			return fmt.Errorf("state: close redis: %w", err)
		}
	}
	return nil
}
