package state_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// env is one store under test plus the means to move its clock.
type env struct {
	store state.Store
	reg   *prometheus.Registry
	// advance moves the store's clock forward by at least d (Memory: a fake
	// clock; Redis: real sleeping, since Redis's PX uses its own clock).
	advance func(d time.Duration)
	// expired waits until the store has counted at least n expired objects
	// (Redis counts asynchronously) and returns the count.
	expired func(t *testing.T, n uint64) uint64
	// name maps an object to its name in Snapshot.
	name func(p state.Partition, object string) string
	// sweeps: expiry is the bucketed layout's (Memory and the "buckets"
	// format): idle objects are invisible at once and deleted, and
	// counted, by the sweeps inside commits (sweepPass), on a fake clock.
	// Otherwise a Redis TTL deletes them.
	sweeps bool
}

// suiteBuckets is the bucket count of the sweeping stores under test: a
// pass of the sweep takes suiteBuckets/8 commits.
const suiteBuckets = 16

// sweepPass makes e's store sweep every bucket of p once, with empty
// commits at next, each after IdleTTL/16 of its clock.
func sweepPass(t *testing.T, e env, p state.Partition, epoch, next int64, ttl time.Duration) {
	t.Helper()
	for i := 0; i < suiteBuckets/8; i++ {
		e.advance(ttl / 16)
		if err := e.store.Commit(ctx, p, epoch, next, next, nil); err != nil {
			t.Fatalf("sweep commit: %v", err)
		}
	}
}

// impl builds an env for a test; ttl 0 means no expiry.
type impl struct {
	name string
	open func(t *testing.T, ttl time.Duration) env
}

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func memoryImpl() impl {
	return impl{name: "memory", open: func(t *testing.T, ttl time.Duration) env {
		clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		reg := prometheus.NewRegistry()
		m, err := state.NewMemory(state.MemoryConfig{IdleTTL: ttl, Now: clk.Now, Buckets: suiteBuckets}, reg)
		if err != nil {
			t.Fatal(err)
		}
		return env{store: m, reg: reg, advance: clk.Add, sweeps: true, name: func(_ state.Partition, o string) string { return o },
			expired: func(t *testing.T, n uint64) uint64 { return m.Expired() }}
	}}
}

var keyPrefixSeq struct {
	sync.Mutex
	n int
}

// uniquePrefix gives each store its own key space on a shared server.
func uniquePrefix(t *testing.T) string {
	keyPrefixSeq.Lock()
	defer keyPrefixSeq.Unlock()
	keyPrefixSeq.n++
	s := regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "_")
	return fmt.Sprintf("t%d_%s:", keyPrefixSeq.n, s)
}

// redisImpl runs the suite against one server (or cluster) shared by all
// subtests of the parent test, each with its own key prefix.
func redisImpl(name, format string, client func(t *testing.T) redisClient) impl {
	return impl{name: name, open: func(t *testing.T, ttl time.Duration) env {
		reg := prometheus.NewRegistry()
		c := client(t)
		if format != state.KeyFormatReadable {
			// Compact keys do not carry the prefix: with many prefixes on
			// one server, tags would collide (ErrKeyCollision). Tests run
			// one at a time, so start each from an empty server.
			flushAll(t, c)
		}
		clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		r, err := state.NewRedisFromClient(c, state.RedisConfig{KeyPrefix: uniquePrefix(t), IdleTTL: ttl, KeyFormat: format, Buckets: suiteBuckets, Now: clk.Now}, nil, reg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		if format == state.KeyFormatBuckets {
			return env{store: r, reg: reg, advance: clk.Add, sweeps: true, name: r.SnapshotName,
				expired: func(t *testing.T, n uint64) uint64 { return r.Expired() }}
		}
		return env{store: r, reg: reg, advance: time.Sleep, name: r.SnapshotName, expired: func(t *testing.T, n uint64) uint64 {
			return waitExpired(t, r, n)
		}}
	}}
}

// waitExpired polls until r counted n expiries, failing after 30 s.
func waitExpired(t *testing.T, r *state.Redis, n uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Expired() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return r.Expired()
}

type redisClient = redis.UniversalClient

// impls returns the implementations under test: Memory, and a standalone
// Redis and a 3-master Redis Cluster (shared by the package's tests) in
// each key format.
func impls() []impl {
	return []impl{
		memoryImpl(),
		redisImpl("redis", state.KeyFormatReadable, func(t *testing.T) redisClient { return sharedServer(t).Client }),
		redisImpl("cluster", state.KeyFormatReadable, func(t *testing.T) redisClient { return sharedCluster(t).Client }),
		redisImpl("redis-compact", state.KeyFormatCompact, func(t *testing.T) redisClient { return sharedServer(t).Client }),
		redisImpl("cluster-compact", state.KeyFormatCompact, func(t *testing.T) redisClient { return sharedCluster(t).Client }),
		redisImpl("redis-buckets", state.KeyFormatBuckets, func(t *testing.T) redisClient { return sharedServer(t).Client }),
		redisImpl("cluster-buckets", state.KeyFormatBuckets, func(t *testing.T) redisClient { return sharedCluster(t).Client }),
	}
}

func forEachImpl(t *testing.T, ttl time.Duration, f func(t *testing.T, e env)) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) { f(t, im.open(t, ttl)) })
	}
}

var ctx = context.Background()

var part = state.Partition{Topic: "observations", ID: 3}

func get(t *testing.T, s state.Store, p state.Partition, objects ...string) [][]byte {
	t.Helper()
	v, err := s.Get(ctx, p, objects, nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(v) != len(objects) {
		t.Fatalf("Get returned %d values for %d objects", len(v), len(objects))
	}
	return v
}

func TestNoStoredOffset(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		next, err := e.store.Claim(ctx, part, 7)
		if err != nil || next != -1 {
			t.Fatalf("Claim of a new partition = %d, %v; want -1, nil", next, err)
		}
		if v := get(t, e.store, part, "a", "b"); v[0] != nil || v[1] != nil {
			t.Fatalf("Get of a new partition = %q; want nils", v)
		}
	})
}

// step is one call in a CAS/fencing scenario.
type step struct {
	op     string // "claim" or "commit"
	epoch  int64
	from   int64 // commit
	to     int64 // commit
	val    string
	want   error // nil, ErrFenced or ErrOffsetMismatch
	repeat bool  // commit: want ErrAlreadyCommitted too
	next   int64 // claim: wanted offset when want == nil
	stored string
}

func TestCASAndFencing(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"first commit from -1", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 10, val: "a", stored: "a"},
			{op: "claim", epoch: 1, next: 10},
		}},
		{"first commit must start at -1", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: 0, to: 10, val: "a", want: state.ErrOffsetMismatch, stored: ""},
		}},
		{"commit without claim is fenced", []step{
			{op: "commit", epoch: 1, from: -1, to: 10, val: "a", want: state.ErrFenced, stored: ""},
		}},
		{"chain of commits", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "a", stored: "a"},
			{op: "commit", epoch: 1, from: 5, to: 9, val: "b", stored: "b"},
			{op: "commit", epoch: 1, from: 9, to: 9, val: "c", stored: "c"},
			{op: "claim", epoch: 1, next: 9},
		}},
		{"replay of a committed batch changes nothing", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "a", stored: "a"},
			{op: "commit", epoch: 1, from: 5, to: 9, val: "b", stored: "b"},
			{op: "commit", epoch: 1, from: 5, to: 9, val: "x", want: state.ErrOffsetMismatch, repeat: true, stored: "b"},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "y", want: state.ErrOffsetMismatch, stored: "b"},
			{op: "commit", epoch: 1, from: 4, to: 9, val: "y", want: state.ErrOffsetMismatch, stored: "b"},
		}},
		{"a repeat is recognised only for the epoch that committed", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "a", stored: "a"},
			{op: "claim", epoch: 2, next: 5},
			{op: "commit", epoch: 2, from: 5, to: 9, val: "b", stored: "b"},
			{op: "commit", epoch: 2, from: 5, to: 9, val: "b", want: state.ErrOffsetMismatch, repeat: true, stored: "b"},
			{op: "claim", epoch: 3, next: 9},
			{op: "commit", epoch: 3, from: 5, to: 9, val: "c", want: state.ErrOffsetMismatch, stored: "b"},
			{op: "commit", epoch: 3, from: 9, to: 9, val: "d", stored: "d"},
			{op: "commit", epoch: 3, from: 9, to: 9, val: "e", stored: "e"},
		}},
		{"older epoch cannot commit after a newer claim", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "a", stored: "a"},
			{op: "claim", epoch: 2, next: 5},
			{op: "commit", epoch: 1, from: 5, to: 8, val: "old", want: state.ErrFenced, stored: "a"},
			{op: "claim", epoch: 1, want: state.ErrFenced},
			{op: "commit", epoch: 2, from: 5, to: 8, val: "new", stored: "new"},
		}},
		{"stale consumer of the newer epoch whose offset moved", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 1, from: -1, to: 5, val: "a", stored: "a"},
			{op: "claim", epoch: 2, next: 5},
			{op: "commit", epoch: 2, from: 5, to: 8, val: "b", stored: "b"},
			// a second handler of epoch 2 that read offset 5 earlier
			{op: "commit", epoch: 2, from: 5, to: 7, val: "stale", want: state.ErrOffsetMismatch, stored: "b"},
		}},
		{"re-claim with the same epoch keeps the offset", []step{
			{op: "claim", epoch: 4, next: -1},
			{op: "commit", epoch: 4, from: -1, to: 3, val: "a", stored: "a"},
			{op: "claim", epoch: 4, next: 3},
			{op: "commit", epoch: 4, from: 3, to: 4, val: "b", stored: "b"},
		}},
		{"newer epoch that did not claim is fenced", []step{
			{op: "claim", epoch: 1, next: -1},
			{op: "commit", epoch: 2, from: -1, to: 3, val: "a", want: state.ErrFenced, stored: ""},
		}},
		{"a restarted group takes over with a lower epoch; the earlier epoch stays fenced", []step{
			{op: "claim", epoch: 7, next: -1},
			{op: "commit", epoch: 7, from: -1, to: 5, val: "a", stored: "a"},
			{op: "claim", epoch: 1, want: state.ErrFenced},
			{op: "takeover", epoch: 1, next: 5},
			{op: "commit", epoch: 7, from: 5, to: 8, val: "zombie", want: state.ErrFenced, stored: "a"},
			{op: "commit", epoch: 1, from: 5, to: 8, val: "b", stored: "b"},
			{op: "claim", epoch: 2, next: 8},
			{op: "commit", epoch: 1, from: 8, to: 9, val: "old", want: state.ErrFenced, stored: "b"},
		}},
		{"takeover of a partition never claimed", []step{
			{op: "takeover", epoch: 3, next: -1},
			{op: "commit", epoch: 3, from: -1, to: 2, val: "a", stored: "a"},
		}},
		{"large and negative epochs", []step{
			{op: "claim", epoch: -5, next: -1},
			{op: "claim", epoch: 1 << 40, next: -1},
			{op: "commit", epoch: 1 << 40, from: -1, to: 1 << 50, val: "a", stored: "a"},
			{op: "claim", epoch: 1<<40 - 1, want: state.ErrFenced},
			{op: "claim", epoch: 1<<40 + 1, next: 1 << 50},
		}},
	}
	forEachImpl(t, 0, func(t *testing.T, e env) {
		for i, c := range cases {
			p := state.Partition{Topic: "cas", ID: int32(i)}
			for j, s := range c.steps {
				switch s.op {
				case "claim":
					next, err := e.store.Claim(ctx, p, s.epoch)
					if !errors.Is(err, s.want) || (s.want == nil && next != s.next) {
						t.Fatalf("%s: step %d: Claim(%d) = %d, %v; want %d, %v", c.name, j, s.epoch, next, err, s.next, s.want)
					}
				case "takeover":
					next, err := e.store.Takeover(ctx, p, s.epoch)
					if !errors.Is(err, s.want) || (s.want == nil && next != s.next) {
						t.Fatalf("%s: step %d: Takeover(%d) = %d, %v; want %d, %v", c.name, j, s.epoch, next, err, s.next, s.want)
					}
				case "commit":
					err := e.store.Commit(ctx, p, s.epoch, s.from, s.to, []state.Write{{Object: "obj", Value: []byte(s.val)}})
					if !errors.Is(err, s.want) {
						t.Fatalf("%s: step %d: Commit(%d, %d→%d) = %v; want %v", c.name, j, s.epoch, s.from, s.to, err, s.want)
					}
					if errors.Is(err, state.ErrAlreadyCommitted) != s.repeat {
						t.Fatalf("%s: step %d: Commit = %v; want ErrAlreadyCommitted: %v", c.name, j, err, s.repeat)
					}
					if (err == nil) != (s.want == nil) {
						t.Fatalf("%s: step %d: err %v, want %v", c.name, j, err, s.want)
					}
					if got := string(get(t, e.store, p, "obj")[0]); got != s.stored {
						t.Fatalf("%s: step %d: stored %q; want %q", c.name, j, got, s.stored)
					}
				}
			}
		}
		fenced := labeledCounter(t, e.reg, "changerate_state_commit_rejected_total", "fenced")
		mismatch := labeledCounter(t, e.reg, "changerate_state_commit_rejected_total", "offset_mismatch")
		repeat := labeledCounter(t, e.reg, "changerate_state_commit_rejected_total", "already_committed")
		// Count the wanted rejections in the table.
		var wf, wm, wr float64
		for _, c := range cases {
			for _, s := range c.steps {
				switch {
				case s.want == state.ErrFenced:
					wf++
				case s.want == state.ErrOffsetMismatch && s.repeat:
					wr++
				case s.want == state.ErrOffsetMismatch:
					wm++
				}
			}
		}
		if fenced != wf || mismatch != wm || repeat != wr {
			t.Fatalf("rejected metrics: fenced %v mismatch %v already_committed %v; want %v, %v, %v", fenced, mismatch, repeat, wf, wm, wr)
		}
	})
}

// labeledCounter returns the value of the sample of counter vector name
// that has a label with value label.
func labeledCounter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{%s} not found", name, label)
	return 0
}

func TestWritesDeletesAndGetOrder(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		if _, err := e.store.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		bin := []byte{0, 1, 2, 0xff, '\n', '{', '}'}
		w := []state.Write{
			{Object: "http://example.com/a?x={y}", Value: []byte("va")},
			{Object: "b", Value: bin},
			{Object: "c", Value: []byte{}},
			{Object: "d", Value: []byte("vd")},
		}
		if err := e.store.Commit(ctx, part, 1, -1, 100, w); err != nil {
			t.Fatal(err)
		}
		dst := [][]byte{[]byte("keep")}
		dst, err := e.store.Get(ctx, part, []string{"d", "missing", "b", "http://example.com/a?x={y}", "c"}, dst)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]byte{[]byte("keep"), []byte("vd"), nil, bin, []byte("va"), {}}
		if len(dst) != len(want) {
			t.Fatalf("Get = %q; want %q", dst, want)
		}
		for i := range want {
			if !bytes.Equal(dst[i], want[i]) || (dst[i] == nil) != (want[i] == nil) {
				t.Fatalf("Get[%d] = %q; want %q (all: %q)", i, dst[i], want[i], dst)
			}
		}
		// Nil deletes; a write in the same batch as a delete of another.
		if err := e.store.Commit(ctx, part, 1, 100, 200, []state.Write{{Object: "d", Value: nil}, {Object: "b", Value: []byte("b2")}, {Object: "never", Value: nil}}); err != nil {
			t.Fatal(err)
		}
		got := get(t, e.store, part, "d", "b", "never")
		if got[0] != nil || string(got[1]) != "b2" || got[2] != nil {
			t.Fatalf("after delete: %q", got)
		}
		// Values are copies: mutating what was committed or read changes nothing.
		w[0].Value[0] = 'X'
		got = get(t, e.store, part, "http://example.com/a?x={y}")
		got[0][0] = 'Y'
		if g := get(t, e.store, part, "http://example.com/a?x={y}"); string(g[0]) != "va" {
			t.Fatalf("stored value aliased: %q", g[0])
		}
		// Empty batch moves the offset.
		if err := e.store.Commit(ctx, part, 1, 200, 250, nil); err != nil {
			t.Fatal(err)
		}
		if next, err := e.store.Claim(ctx, part, 1); err != nil || next != 250 {
			t.Fatalf("Claim = %d, %v; want 250", next, err)
		}
		// Partitions are independent.
		other := state.Partition{Topic: part.Topic, ID: part.ID + 1}
		if next, err := e.store.Claim(ctx, other, 1); err != nil || next != -1 {
			t.Fatalf("other partition Claim = %d, %v; want -1", next, err)
		}
		if g := get(t, e.store, other, "b"); g[0] != nil {
			t.Fatalf("other partition sees %q", g[0])
		}
		snap, err := e.store.(state.Snapshotter).Snapshot(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Next != 250 || snap.Epoch != 1 || len(snap.Objects) != 3 || string(snap.Objects[e.name(part, "b")]) != "b2" ||
			string(snap.Objects[e.name(part, "http://example.com/a?x={y}")]) != "va" || snap.Objects[e.name(part, "c")] == nil {
			t.Fatalf("snapshot = %+v", snap)
		}
	})
}

func TestInvalidArguments(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		bad := []state.Partition{{Topic: "", ID: 1}, {Topic: "a{b}", ID: 1}, {Topic: "a b", ID: 1}, {Topic: "ok", ID: -1}}
		for _, p := range bad {
			if _, err := e.store.Claim(ctx, p, 1); err == nil {
				t.Errorf("Claim(%q/%d) accepted", p.Topic, p.ID)
			}
			if err := e.store.Commit(ctx, p, 1, -1, 1, nil); err == nil {
				t.Errorf("Commit(%q/%d) accepted", p.Topic, p.ID)
			}
		}
		if _, err := e.store.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		for _, ft := range [][2]int64{{-2, 5}, {5, 4}, {-1, -1}} {
			err := e.store.Commit(ctx, part, 1, ft[0], ft[1], nil)
			if err == nil || errors.Is(err, state.ErrOffsetMismatch) || errors.Is(err, state.ErrFenced) {
				t.Errorf("Commit from %d to %d = %v; want an argument error", ft[0], ft[1], err)
			}
		}
	})
}

func TestExpiry(t *testing.T) {
	const ttl = 300 * time.Millisecond
	forEachImpl(t, ttl, func(t *testing.T, e env) {
		if _, err := e.store.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		const n = 20
		var w []state.Write
		var names []string
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("obj-%d", i)
			names = append(names, name)
			w = append(w, state.Write{Object: name, Value: []byte("v")})
		}
		if err := e.store.Commit(ctx, part, 1, -1, 1, w); err != nil {
			t.Fatal(err)
		}
		if g := get(t, e.store, part, names[0]); string(g[0]) != "v" {
			t.Fatalf("before TTL: %q", g[0])
		}
		if e.sweeps {
			// The sweep's buckets: an object lives exactly IdleTTL.
			e.advance(ttl - time.Millisecond)
			if g := get(t, e.store, part, names[0]); string(g[0]) != "v" {
				t.Fatalf("1 ms before IdleTTL: %q", g[0])
			}
			e.advance(time.Millisecond)
		} else {
			e.advance(ttl + 50*time.Millisecond)
		}
		for i, v := range get(t, e.store, part, names...) {
			if v != nil {
				t.Fatalf("%s alive after TTL: %q", names[i], v)
			}
		}
		if e.sweeps {
			if got := e.expired(t, 0); got != 0 {
				t.Fatalf("expired before a sweep = %d; want 0", got)
			}
			sweepPass(t, e, part, 1, 1, ttl)
		}
		if got := e.expired(t, n); got != n {
			t.Fatalf("expired = %d; want %d", got, n)
		}
		if got := gatherValue(t, e.reg, "changerate_state_expired_objects_total"); got != n {
			t.Fatalf("expired metric = %v; want %d", got, n)
		}
		// The offset does not expire.
		if next, err := e.store.Claim(ctx, part, 1); err != nil || next != 1 {
			t.Fatalf("Claim after expiry = %d, %v; want 1", next, err)
		}
	})
}

// TestKeepExpiry checks Write.KeepExpiry against ExpiryGrace: a kept
// expiry stays where the last refresh put it (IdleTTL + ExpiryGrace after
// it), a refreshed one moves, and an object that does not exist gets a
// new expiry even when its write asks to keep one (otherwise it would
// never expire).
func TestKeepExpiry(t *testing.T) {
	const ttl = 800 * time.Millisecond
	forEachImpl(t, ttl, func(t *testing.T, e env) {
		if e.sweeps {
			if g := e.store.ExpiryGrace(); g != 0 {
				t.Fatalf("ExpiryGrace = %v; want 0 (expiry from every write)", g)
			}
			return // the sweep: TestExpiry, TestSweepZombieAndCrash, TestSweepLateness
		}
		if g := e.store.ExpiryGrace(); g != ttl/16 {
			t.Fatalf("ExpiryGrace = %v; want %v", g, ttl/16)
		}
		if _, err := e.store.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		// t = 0: a and b get expiries at 0.85 s.
		if err := e.store.Commit(ctx, part, 1, -1, 1, []state.Write{
			{Object: "a", Value: []byte("a1")}, {Object: "b", Value: []byte("b1")},
		}); err != nil {
			t.Fatal(err)
		}
		// t = 0.4 s: a keeps its expiry, b's moves to 1.25 s; c is new.
		e.advance(400 * time.Millisecond)
		if err := e.store.Commit(ctx, part, 1, 1, 2, []state.Write{
			{Object: "a", Value: []byte("a2"), KeepExpiry: true},
			{Object: "b", Value: []byte("b2")},
			{Object: "c", Value: []byte("c2"), KeepExpiry: true},
		}); err != nil {
			t.Fatal(err)
		}
		// t = 1.025 s: a expired (at 0.85 s, after its first write's
		// refresh, not 1.25 s), b and c live.
		e.advance(625 * time.Millisecond)
		got := get(t, e.store, part, "a", "b", "c")
		if got[0] != nil || string(got[1]) != "b2" || string(got[2]) != "c2" {
			t.Fatalf("at 1.025 s: a, b, c = %q, %q, %q; want nil, b2, c2", got[0], got[1], got[2])
		}
		// t = 1.625 s: all expired, c too (its write set an expiry).
		e.advance(600 * time.Millisecond)
		for i, v := range get(t, e.store, part, "a", "b", "c") {
			if v != nil {
				t.Fatalf("object %d alive after 1.625 s: %q", i, v)
			}
		}
		if got := e.expired(t, 3); got != 3 {
			t.Fatalf("expired = %d; want 3", got)
		}
	})
}

func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestConcurrentPartitions commits to several partitions from several
// goroutines (run with -race) and checks every final value and offset.
func TestConcurrentPartitions(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		const parts, batches, perBatch = 6, 20, 50
		var wg sync.WaitGroup
		errs := make(chan error, parts)
		for i := 0; i < parts; i++ {
			wg.Add(1)
			go func(p state.Partition) {
				defer wg.Done()
				next, err := e.store.Claim(ctx, p, 3)
				if err != nil {
					errs <- err
					return
				}
				for b := 0; b < batches; b++ {
					w := make([]state.Write, perBatch)
					for k := range w {
						w[k] = state.Write{Object: fmt.Sprintf("o%d", k), Value: []byte(fmt.Sprintf("%d/%d", p.ID, b))}
					}
					to := int64(b+1) * 10
					if err := e.store.Commit(ctx, p, 3, next, to, w); err != nil {
						errs <- err
						return
					}
					next = to
				}
			}(state.Partition{Topic: "conc", ID: int32(i)})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := 0; i < parts; i++ {
			p := state.Partition{Topic: "conc", ID: int32(i)}
			next, err := e.store.Claim(ctx, p, 3)
			if err != nil || next != batches*10 {
				t.Fatalf("%v: next %d, %v", p, next, err)
			}
			want := fmt.Sprintf("%d/%d", i, batches-1)
			for _, v := range get(t, e.store, p, "o0", fmt.Sprintf("o%d", perBatch-1)) {
				if string(v) != want {
					t.Fatalf("%v: %q; want %q", p, v, want)
				}
			}
		}
	})
}

func TestCanceledContext(t *testing.T) {
	forEachImpl(t, 0, func(t *testing.T, e env) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.store.Claim(c, part, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("Claim with canceled context = %v", err)
		}
		if !strings.HasPrefix(fmt.Sprint(e.store.Commit(c, part, 1, -1, 1, nil)), "state: ") {
			t.Fatalf("errors must be prefixed")
		}
	})
}

// flushAll empties every master of c.
func flushAll(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
	} else {
		err = c.FlushAll(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchOrder: a batch is applied in order, also when an object occurs
// more than once and with more values than one MSET chunk (no TTL).
func TestBatchOrder(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("ttl=", ttl), func(t *testing.T) {
			forEachImpl(t, ttl, func(t *testing.T, e env) {
				if _, err := e.store.Claim(ctx, part, 1); err != nil {
					t.Fatal(err)
				}
				var w []state.Write
				for i := 0; i < 700; i++ {
					w = append(w, state.Write{Object: fmt.Sprint("n", i), Value: []byte(fmt.Sprint(i))})
				}
				w = append(w,
					state.Write{Object: "x", Value: []byte("1")},
					state.Write{Object: "x", Value: nil},
					state.Write{Object: "x", Value: []byte("2")},
					state.Write{Object: "y", Value: []byte("1")},
					state.Write{Object: "y", Value: nil},
					state.Write{Object: "n5", Value: nil},
					state.Write{Object: "n6", Value: []byte("six")},
				)
				if err := e.store.Commit(ctx, part, 1, -1, 1, w); err != nil {
					t.Fatal(err)
				}
				g := get(t, e.store, part, "x", "y", "n5", "n6", "n699", "n0")
				if string(g[0]) != "2" || g[1] != nil || g[2] != nil || string(g[3]) != "six" || string(g[4]) != "699" || string(g[5]) != "0" {
					t.Fatalf("got %q", g)
				}
			})
		})
	}
}
