package state

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// The Redis store's bucketed layout (KeyFormatBuckets; layout.go has the
// shared rules, docs/state-layout.md the design):
//
//	{tag}:meta   hash: epoch, next, prev, pe, owner as with compact keys,
//	             and "nb" (the partition's bucket count, fixed by its first
//	             claim), "sw" (the next bucket to sweep), "l2" (the offset
//	             of the last commit in this layout: a "next" that differs
//	             means the previous release committed since, and its
//	             per-object keys must be migrated)
//	{tag}:<b>    hash: one bucket, b in base 64 (2 or 3 digits); field: the
//	             object's compact key without the tag; value: 6-byte stamp
//	             + the state
//
// The tag is the compact one, so the buckets share the slot (and the meta
// hash) of the partition's per-object keys of the previous release.

// rpart is what a Redis store knows of a partition it claimed or read.
type rpart struct {
	nb      int
	epoch   int64 // the epoch of the claim that started sweep
	claimed bool  // a claim of this store started sweep
	sweep   sweep
}

// bucketKey returns the key of bucket b of the partition with tag.
func bucketKey(tag string, b, nb int) string {
	digits := 2
	if nb > 64*64 {
		digits = 3
	}
	buf := make([]byte, 0, len(tag)+1+digits)
	buf = append(buf, tag...)
	buf = append(buf, ':')
	for i := 0; i < digits; i++ {
		buf = append(buf, b64[b&63])
		b >>= 6
	}
	return string(buf)
}

// fieldOf returns the bucket and field under tag of the object with
// digest d.
func fieldOf(tag string, d Digest, nb int) (int, string) {
	return bucketOf(d[:], nb), string(d[:compactKeyLen-len(tag)])
}

// BucketKey returns the bucket key and the field of object in p, for
// tools and tests (bucketed layout; "" for the per-object formats). nb is
// the partition's stored bucket count, or the configured one when it has
// none yet.
func (r *Redis) BucketKey(ctx context.Context, p Partition, object string) (key, field string, err error) {
	if !r.buckets {
		return "", "", nil
	}
	rp, err := r.part(ctx, p)
	if err != nil {
		return "", "", err
	}
	nb := rp.nb
	if nb == 0 {
		nb = r.cfg.Buckets
	}
	tag := r.tag(p)
	b, f := fieldOf(tag, DigestOf(object), nb)
	return bucketKey(tag, b, nb), f, nil
}

// part returns what the store knows of p, reading p's bucket count from
// its meta hash when it has not claimed p (nb 0: none stored yet).
func (r *Redis) part(ctx context.Context, p Partition) (rpart, error) {
	r.partMu.Lock()
	rp, ok := r.parts[p]
	r.partMu.Unlock()
	if ok && rp.nb > 0 {
		return *rp, nil
	}
	st, err := r.c.HMGet(ctx, r.MetaKey(p), "nb", "sw").Result()
	if err != nil {
		return rpart{}, err
	}
	var out rpart
	if s, ok := st[0].(string); ok {
		if out.nb, err = strconv.Atoi(s); err != nil || out.nb <= 0 || out.nb > MaxBuckets {
			return rpart{}, fmt.Errorf("bucket count %q in the meta hash", s)
		}
		out.sweep.nb = out.nb
		if s, ok := st[1].(string); ok {
			out.sweep.cursor, _ = strconv.Atoi(s)
		}
		r.partMu.Lock()
		if _, ok := r.parts[p]; !ok {
			r.parts[p] = &out
		}
		r.partMu.Unlock()
	}
	return out, nil
}

// SweepDue implements Sweeper.
func (r *Redis) SweepDue(p Partition) bool {
	if !r.buckets {
		return false
	}
	r.partMu.Lock()
	defer r.partMu.Unlock()
	rp := r.parts[p]
	return rp != nil && rp.claimed && rp.sweep.due(unixMS(r.now()), r.cfg.IdleTTL.Milliseconds())
}

// claimBuckets runs the bucketed claim (or takeover) script, migrates the
// previous release's per-object keys if it committed since this layout
// last did, and starts p's sweep plan.
func (r *Redis) claimBuckets(ctx context.Context, op string, p Partition, epoch int64) (int64, error) {
	tk := "0"
	if op == "takeover" {
		tk = "1"
	}
	start := time.Now()
	v, err := bclaimScript.Run(ctx, r.c, []string{r.MetaKey(p)}, strconv.FormatInt(epoch, 10), r.owner(p), strconv.Itoa(r.cfg.Buckets), tk).Result()
	r.observe(op, start, err)
	if err != nil {
		return 0, fmt.Errorf("state: %s %v: %w", op, p, err)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return 0, fmt.Errorf("state: %s %v: unexpected script reply %#v", op, p, v)
	}
	code, _ := a[0].(int64)
	s := make([]string, 5)
	for i := range s {
		if s[i], ok = a[i+1].(string); !ok {
			return 0, fmt.Errorf("state: %s %v: unexpected script reply %#v", op, p, v)
		}
	}
	stored, next, nbs, sws, l2 := s[0], s[1], s[2], s[3], s[4]
	switch code {
	case codeOK:
	case codeFenced:
		r.own(r.tag(p), false)
		r.metrics.rejected.WithLabelValues(reasonFenced).Inc()
		return 0, fmt.Errorf("state: %s %v with epoch %d, stored epoch %s: %w", op, p, epoch, stored, ErrFenced)
	case codeOwner:
		return 0, fmt.Errorf("state: %s %v: its compact keys are used by %q: %w", op, p, stored, ErrKeyCollision)
	default:
		return 0, fmt.Errorf("state: %s %v: unexpected script code %d", op, p, code)
	}
	nb, err := strconv.Atoi(nbs)
	if err != nil || nb <= 0 || nb > MaxBuckets {
		return 0, fmt.Errorf("state: %s %v: bucket count %q in the meta hash", op, p, nbs)
	}
	cursor, _ := strconv.Atoi(sws)
	if next != "" && l2 != next {
		if err := r.migrate(ctx, p, epoch, nb); err != nil {
			return 0, err
		}
	}
	r.own(r.tag(p), true)
	r.partMu.Lock()
	if rp := r.parts[p]; rp == nil || !rp.claimed || rp.epoch != epoch || rp.nb != nb {
		r.parts[p] = &rpart{nb: nb, epoch: epoch, claimed: true, sweep: sweep{nb: nb, cursor: cursor % nb}.restart(unixMS(r.now()))}
	}
	r.partMu.Unlock()
	return parseNext(op, p, next)
}

// GetDigests implements DigestGetter.
func (r *Redis) GetDigests(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error) {
	if len(digests) != len(objects) {
		return dst, fmt.Errorf("state: get %v: %d digests for %d objects", p, len(digests), len(objects))
	}
	return r.get(ctx, p, objects, digests, dst)
}

// getBuckets reads objects with one HMGET per touched bucket (pipelined),
// dropping the stamps and idle values. A partition without a bucket count
// (never claimed in this layout) is read in the previous release's
// per-object keys.
func (r *Redis) getBuckets(ctx context.Context, p Partition, objects []string, digests []Digest, dst [][]byte) ([][]byte, error) {
	rp, err := r.part(ctx, p)
	if err != nil {
		return dst, fmt.Errorf("state: get %v: %w", p, err)
	}
	tag := r.tag(p)
	if rp.nb == 0 {
		return r.getKeys(ctx, p, tag, objects, dst)
	}
	// The objects are grouped by bucket by sorting one uint64 each (the
	// bucket above the object's index), and each command's arguments
	// point at fields in one buffer (go-redis writes a *string as the
	// string; a pointer in an interface allocates nothing), as in
	// commitPlan: a map of buckets and a slice of fields per bucket were
	// a third of the aggregator's reads.
	fl := compactKeyLen - len(tag)
	fieldBytes := make([]byte, len(objects)*fl)
	keys := make([]uint64, len(objects))
	for i, o := range objects {
		var d Digest
		if digests != nil {
			d = digests[i]
		}
		d = digestOr(d, o)
		copy(fieldBytes[i*fl:], d[:fl])
		keys[i] = uint64(bucketOf(d[:], rp.nb))<<32 | uint64(i)
	}
	allFields := unsafe.String(unsafe.SliceData(fieldBytes), len(fieldBytes))
	fields := make([]string, len(objects))
	for i := range objects {
		fields[i] = allFields[i*fl : (i+1)*fl]
	}
	slices.Sort(keys)
	args := make([]any, 0, len(objects)+2*len(objects)/4+2)
	var cmds []*redis.Cmd
	var ends []int // by command: the end of its objects in keys
	start := time.Now()
	pipe := r.c.Pipeline()
	for s := 0; s < len(keys); {
		b := int(keys[s] >> 32)
		e := s + 1
		for e < len(keys) && int(keys[e]>>32) == b {
			e++
		}
		a := len(args)
		args = append(args, "hmget", bucketKey(tag, b, rp.nb))
		for _, key := range keys[s:e] {
			args = append(args, &fields[uint32(key)])
		}
		cmds = append(cmds, pipe.Do(ctx, args[a:len(args):len(args)]...))
		ends = append(ends, e)
		s = e
	}
	_, err = pipe.Exec(ctx)
	r.observe("get", start, err)
	if err != nil {
		return dst, fmt.Errorf("state: get %v: %w", p, err)
	}
	vals := make([]any, len(objects))
	s0 := 0
	for j, cmd := range cmds {
		vs, _ := cmd.Val().([]any)
		if len(vs) != ends[j]-s0 {
			return dst, fmt.Errorf("state: get %v: %d values for %d fields", p, len(vs), ends[j]-s0)
		}
		for k, key := range keys[s0:ends[j]] {
			vals[uint32(key)] = vs[k]
		}
		s0 = ends[j]
	}
	now, ttl := unixMS(r.now()), r.cfg.IdleTTL.Milliseconds()
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			dst = append(dst, nil)
		case string:
			st, ok := stampOf([]byte(v[:min(len(v), stampLen)]))
			if !ok {
				return dst, fmt.Errorf("state: get %v: stored value of %d bytes has no stamp", p, len(v))
			}
			if idleAt(st, now, ttl) {
				dst = append(dst, nil)
			} else {
				dst = append(dst, []byte(v[stampLen:]))
			}
		default:
			return dst, fmt.Errorf("state: get %v: unexpected value type %T", p, v)
		}
	}
	return dst, nil
}

// commitBuckets implements Commit for the bucketed layout: the final value
// of each written object (a batch is applied in order, so the last write
// of an object wins), grouped by bucket (commitPlan), in one transaction
// (commitTx), or, when the sweep plan has buckets to sweep, with them in
// one script.
func (r *Redis) commitBuckets(ctx context.Context, p Partition, epoch, from, to int64, writes []Write) error {
	rp, err := r.part(ctx, p)
	if err != nil {
		return fmt.Errorf("state: commit %v: %w", p, err)
	}
	nb := rp.nb
	if nb == 0 {
		nb = r.cfg.Buckets // not claimed in this layout: the script refuses
	}
	tag := r.tag(p)
	now := unixMS(r.now())
	pl := r.getPlan()
	defer r.putPlan(pl)
	pl.plan(tag, nb, now, writes)
	ttl := r.cfg.IdleTTL.Milliseconds()
	var st sweepStep
	if rp.claimed && rp.epoch == epoch {
		st = rp.sweep.plan(now, ttl)
	}
	if st.k == 0 {
		// No sweep step: the writes alone, in a transaction
		// (redis_commit_tx.go).
		return r.commitTx(ctx, p, tag, nb, epoch, from, to, pl, len(writes))
	}
	keys := make([]string, 1, 1+len(pl.buckets)+st.k)
	keys[0] = tag + ":meta"
	args := make([]any, 8, 8+2*len(pl.buckets)+2*len(pl.order))
	args[0] = strconv.FormatInt(epoch, 10)
	args[1] = strconv.FormatInt(from, 10)
	args[2] = strconv.FormatInt(to, 10)
	args[3] = r.owner(p)
	args[4] = strconv.Itoa(nb)
	args[5] = strconv.Itoa(len(pl.buckets))
	args[6] = ""
	args[7] = ""
	for k := range pl.buckets {
		pb := &pl.buckets[k]
		keys = append(keys, pb.key)
		args = append(args, strconv.Itoa(pb.mid-pb.start), strconv.Itoa(pb.end-pb.mid))
		args = pl.setArgs(args, pb)
		args = pl.delArgs(args, pb)
	}
	if st.k > 0 {
		for i := 0; i < st.k; i++ {
			keys = append(keys, bucketKey(tag, (st.first+i)%nb, nb))
		}
		args[6] = strconv.FormatInt(now-ttl, 10)
		args[7] = strconv.Itoa(st.after.cursor)
	}
	start := time.Now()
	v, err := bcommitScript.Run(ctx, r.c, keys, args...).Result()
	r.observe("commit", start, err)
	if err != nil {
		return fmt.Errorf("state: commit %v: %w", p, err)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return fmt.Errorf("state: commit %v: unexpected script reply %#v", p, v)
	}
	swept, _ := a[3].(int64)
	code, storedEpoch, next, err := parseReply(a[:3])
	if err != nil {
		return err
	}
	if code == codeOK {
		if st.k > 0 {
			r.partMu.Lock()
			if cur := r.parts[p]; cur != nil && cur.claimed && cur.epoch == epoch {
				cur.sweep = st.after
			}
			r.partMu.Unlock()
		}
		if swept > 0 {
			r.expired.Add(uint64(swept))
			r.metrics.expired.Add(float64(swept))
		}
	}
	if code == codeLayout {
		return fmt.Errorf("state: commit %v: stored bucket count %q, this store's %d: claim the partition first: %w", p, storedEpoch, nb, ErrOffsetMismatch)
	}
	return r.commitResult(p, epoch, from, to, len(writes), code, storedEpoch, next)
}

// snapshotBuckets reads every bucket of p (HGETALL, pipelined).
func (r *Redis) snapshotBuckets(ctx context.Context, p Partition, snap PartitionSnapshot) (PartitionSnapshot, error) {
	rp, err := r.part(ctx, p)
	if err != nil {
		return snap, fmt.Errorf("state: snapshot %v: %w", p, err)
	}
	if rp.nb == 0 {
		return snap, nil
	}
	tag := r.tag(p)
	now, ttl := unixMS(r.now()), r.cfg.IdleTTL.Milliseconds()
	for lo := 0; lo < rp.nb; lo += 256 {
		pipe := r.c.Pipeline()
		var cmds []*redis.MapStringStringCmd
		for b := lo; b < min(lo+256, rp.nb); b++ {
			cmds = append(cmds, pipe.HGetAll(ctx, bucketKey(tag, b, rp.nb)))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return snap, fmt.Errorf("state: snapshot %v: %w", p, err)
		}
		for _, c := range cmds {
			for f, v := range c.Val() {
				st, ok := stampOf([]byte(v[:min(len(v), stampLen)]))
				if !ok || idleAt(st, now, ttl) {
					continue
				}
				snap.Objects["#"+hex.EncodeToString([]byte(f))] = []byte(v[stampLen:])
			}
		}
	}
	return snap, nil
}

// memoryUsageBuckets returns the MEMORY USAGE of object's bucket divided
// by the bucket's fields (the mean per object of that bucket, key
// overhead included), or 0 if the object is not stored.
func (r *Redis) memoryUsageBuckets(ctx context.Context, p Partition, object string) (n int64, err error) {
	start := time.Now()
	defer func() { r.observe("memory_usage", start, err) }()
	key, field, err := r.BucketKey(ctx, p, object)
	if err != nil {
		return 0, fmt.Errorf("state: memory usage %v: %w", p, err)
	}
	pipe := r.c.Pipeline()
	ex := pipe.HExists(ctx, key, field)
	hl := pipe.HLen(ctx, key)
	mu := pipe.MemoryUsage(ctx, key, 0)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("state: memory usage %v: %w", p, err)
	}
	if !ex.Val() || hl.Val() == 0 {
		return 0, nil
	}
	return mu.Val() / hl.Val(), nil
}
