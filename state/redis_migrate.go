package state

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The migration of a partition's per-object keys of the previous release
// into its buckets, at Claim (docs/state-layout.md).

// migrateChunk is how many per-object keys one migration script moves.
const migrateChunk = 256

// migrate moves p's per-object keys of the previous release (compact
// format: the tag followed by the hash, 14 bytes) into p's buckets, each
// stamped so that it lives as long as its remaining TTL said (now + TTL −
// IdleTTL; now without a TTL), in fenced scripts of migrateChunk keys, and
// records in the meta hash that the layout is current. A crash midway
// leaves the keys not yet moved where they were; the next claim moves
// them.
func (r *Redis) migrate(ctx context.Context, p Partition, epoch int64, nb int) (err error) {
	start := time.Now()
	defer func() { r.observe("migrate", start, err) }()
	meta := r.MetaKey(p)
	var node redis.Cmdable = r.c
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, meta)
		if err != nil {
			return fmt.Errorf("state: migrate %v: %w", p, err)
		}
		node = n
	}
	tag := r.tag(p)
	ttl := r.cfg.IdleTTL.Milliseconds()
	var cursor uint64
	var old []string
	moved := 0
	run := func(keys []string, done bool) error {
		bk := map[string]int{}
		var bkeys []string
		args := []any{strconv.FormatInt(epoch, 10), strconv.Itoa(len(keys)), strconv.FormatInt(unixMS(r.now()), 10), strconv.FormatInt(ttl, 10)}
		for _, k := range keys {
			field := k[len(tag):]
			// The field is the hash's first bytes: bucketOf reads 4 of them.
			key := bucketKey(tag, bucketOf([]byte(field), nb), nb)
			i, ok := bk[key]
			if !ok {
				bkeys = append(bkeys, key)
				i = len(bkeys)
				bk[key] = i
			}
			args = append(args, field, strconv.Itoa(i))
		}
		d := "0"
		if done {
			d = "1"
		}
		args = append(args, d)
		all := append(append([]string{meta}, keys...), bkeys...)
		v, err := migrateScript.Run(ctx, r.c, all, args...).Result()
		if err != nil {
			return fmt.Errorf("state: migrate %v: %w", p, err)
		}
		a, ok := v.([]any)
		if !ok || len(a) != 3 {
			return fmt.Errorf("state: migrate %v: unexpected script reply %#v", p, v)
		}
		if c, _ := a[0].(int64); c != codeOK {
			r.metrics.rejected.WithLabelValues(reasonFenced).Inc()
			return fmt.Errorf("state: migrate %v with epoch %d, stored epoch %v: %w", p, epoch, a[1], ErrFenced)
		}
		n, _ := a[2].(int64)
		moved += int(n)
		return nil
	}
	for {
		keys, next, err := node.Scan(ctx, cursor, escapeGlob(tag)+"*", 1000).Result()
		if err != nil {
			return fmt.Errorf("state: migrate %v: scan: %w", p, err)
		}
		for _, k := range keys {
			if len(k) == compactKeyLen && k[:len(tag)] == tag {
				old = append(old, k)
			}
		}
		for len(old) >= migrateChunk {
			if err := run(old[:migrateChunk], false); err != nil {
				return err
			}
			old = old[migrateChunk:]
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	if err := run(old, true); err != nil {
		return err
	}
	r.migrated.Add(uint64(moved))
	r.log.Info("migrated per-object keys of the previous release into buckets", "partition", p.String(), "objects", moved)
	return nil
}

// Migrated returns how many per-object keys of the previous release this
// store moved into buckets.
func (r *Redis) Migrated() uint64 { return r.migrated.Load() }
