package state_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// sweepEnv is a bucketed Redis store on a fake clock, with the means to
// tell whether an object is still physically stored (HEXISTS).
type sweepEnv struct {
	c   redis.UniversalClient
	clk *fakeClock
	cfg state.RedisConfig
}

func newSweepEnv(t *testing.T, nb int, ttl time.Duration) *sweepEnv {
	s := redistest.Start(t)
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &sweepEnv{c: s.Client, clk: clk, cfg: state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, IdleTTL: ttl, Buckets: nb, Now: clk.Now}}
}

// store opens another process's store on the same server and clock.
func (e *sweepEnv) store(t *testing.T) *state.Redis {
	r, err := state.NewRedisFromClient(e.c, e.cfg, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// stored reports which of objects are physically in their buckets.
func (e *sweepEnv) stored(t *testing.T, r *state.Redis, p state.Partition, objects []string) []bool {
	t.Helper()
	pipe := e.c.Pipeline()
	cmds := make([]*redis.BoolCmd, len(objects))
	for i, o := range objects {
		k, f, err := r.BucketKey(ctx, p, o)
		if err != nil {
			t.Fatal(err)
		}
		cmds[i] = pipe.HExists(ctx, k, f)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	out := make([]bool, len(objects))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out
}

func writesOf(objects []string, v string) []state.Write {
	w := make([]state.Write, len(objects))
	for i, o := range objects {
		w[i] = state.Write{Object: o, Value: []byte(v)}
	}
	return w
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// TestSweepZombieAndCrash: a fenced owner's commit, sweep included,
// deletes nothing; an owner that stops midway through a pass (a crash: its
// process is gone) hands the stored cursor to the next owner, whose sweep
// goes on from there; at the end every idle object was deleted and
// counted exactly once, and no live object was touched.
func TestSweepZombieAndCrash(t *testing.T) {
	const nb, ttl = 32, 16 * time.Minute // sweep period 1 min: 32 buckets a minute
	e := newSweepEnv(t, nb, ttl)
	p := state.Partition{Topic: "observations", ID: 2}
	var idle, live []string
	for i := 0; i < 300; i++ {
		idle = append(idle, fmt.Sprint("idle-", i))
		live = append(live, fmt.Sprint("live-", i))
	}
	a := e.store(t)
	if _, err := a.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, p, 1, -1, 1, writesOf(idle, "i")); err != nil {
		t.Fatal(err)
	}
	e.clk.Add(ttl) // idle objects: idle from now on
	if err := a.Commit(ctx, p, 1, 1, 2, writesOf(live, "l")); err != nil {
		t.Fatal(err)
	}
	// a sweeps half a pass: 2 commits of 8 buckets each after 30 s.
	for i := 0; i < 2; i++ {
		e.clk.Add(30 * time.Second)
		if err := a.Commit(ctx, p, 1, 2, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	half := a.Expired()
	if half == 0 || half >= uint64(len(idle)) {
		t.Fatalf("after half a pass %d of %d idle objects deleted; want some, not all", half, len(idle))
	}
	// b takes over (a is a zombie now); a's commits delete nothing.
	b := e.store(t)
	if next, err := b.Claim(ctx, p, 2); err != nil || next != 2 {
		t.Fatalf("Claim = %d, %v", next, err)
	}
	e.clk.Add(time.Minute)
	left := countTrue(e.stored(t, b, p, idle))
	if err := a.Commit(ctx, p, 1, 2, 2, nil); err == nil {
		t.Fatal("the zombie committed")
	}
	if n := countTrue(e.stored(t, b, p, idle)); n != left || a.Expired() != half {
		t.Fatalf("the zombie deleted: %d idle objects left of %d, its count %d (was %d)", n, left, a.Expired(), half)
	}
	// b's sweep resumes at the stored cursor: a pass from it deletes the rest.
	for i := 0; i < 4; i++ {
		e.clk.Add(15 * time.Second)
		if err := b.Commit(ctx, p, 2, 2, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := countTrue(e.stored(t, b, p, idle)); n != 0 {
		t.Fatalf("%d idle objects left after the new owner's pass", n)
	}
	if half+b.Expired() != uint64(len(idle)) {
		t.Fatalf("deleted %d + %d; want %d in all, each counted once", half, b.Expired(), len(idle))
	}
	if n := countTrue(e.stored(t, b, p, live)); n != len(live) {
		t.Fatalf("%d of %d live objects left", n, len(live))
	}
	for _, v := range get(t, b, p, live...) {
		if string(v) != "l" {
			t.Fatalf("live object read as %q", v)
		}
	}
}

// TestSweepLateness measures how late the sweep deletes idle objects: 400
// objects written at random times over 4 minutes, a commit every 5 s (a
// batch or an idle tick), IdleTTL 16 min, 64 buckets. Derived bound: a
// bucket is swept once per pass, and a pass takes the sweep period
// IdleTTL/16 = 60 s when each commit may sweep the buckets it earned (64 ·
// 5 s / 60 s = 5.3 < 8 per commit); an object idle just after its bucket's
// sweep waits a whole pass, plus up to one commit interval for the sweep
// to run and the bucket credit's rounding (one bucket, 0.94 s). So the
// lateness is at most 60 + 5 + 1 s; its mean should be about half a pass.
func TestSweepLateness(t *testing.T) {
	const nb, ttl, step = 64, 16 * time.Minute, 5 * time.Second
	e := newSweepEnv(t, nb, ttl)
	r := e.store(t)
	p := state.Partition{Topic: "observations", ID: 0}
	if _, err := r.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	const n = 400
	objs := make([]string, n)
	written := make([]time.Time, n)
	for i := range objs {
		objs[i] = fmt.Sprint("https://example.org/", i)
	}
	start := e.clk.Now()
	next := int64(-1)
	gone := make([]time.Time, n)
	for k := 0; ; k++ {
		var w []state.Write
		if k < 48 { // the first 4 minutes: 8-9 objects per commit
			for i := k * n / 48; i < (k+1)*n/48; i++ {
				w = append(w, state.Write{Object: objs[i], Value: []byte("v")})
				written[i] = e.clk.Now()
			}
		}
		if err := r.Commit(ctx, p, 1, next, next+1, w); err != nil {
			t.Fatal(err)
		}
		next++
		now := e.clk.Now()
		left := 0
		for i, in := range e.stored(t, r, p, objs) {
			if !in && gone[i].IsZero() && !written[i].IsZero() {
				gone[i] = now
			}
			if in || written[i].IsZero() {
				left++
			}
		}
		if left == 0 {
			break
		}
		if now.Sub(start) > 2*ttl {
			t.Fatalf("%d objects not deleted after %v", left, 2*ttl)
		}
		e.clk.Add(step)
	}
	late := make([]time.Duration, n)
	var sum time.Duration
	for i := range objs {
		late[i] = gone[i].Sub(written[i].Add(ttl))
		if late[i] < 0 {
			t.Fatalf("%s deleted %v before it was idle", objs[i], -late[i])
		}
		sum += late[i]
	}
	slices.Sort(late)
	bound := ttl/16 + step + time.Second
	t.Logf("lateness of %d deletions: median %v, p90 %v, max %v, mean %v (bound %v; expired %d)",
		n, late[n/2], late[n*9/10], late[n-1], sum/n, bound, r.Expired())
	if late[n-1] > bound {
		t.Fatalf("max lateness %v > bound %v", late[n-1], bound)
	}
	if r.Expired() != n {
		t.Fatalf("expired %d; want %d", r.Expired(), n)
	}
}
