package state_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
)

// TestMemoryIdleTTL: an object lives exactly IdleTTL after its last
// commit on the injected clock (Get and Snapshot stop seeing it then); it
// is deleted and counted once, by the sweep of its bucket inside a commit
// or by Sweep, never by a read.
func TestMemoryIdleTTL(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	const ttl = 16 * time.Second // sweep period 1 s; 4 buckets: a pass in 1 s
	m, err := state.NewMemory(state.MemoryConfig{IdleTTL: ttl, Now: clk.Now, Buckets: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	commit := func(from, to int64, objs ...string) {
		t.Helper()
		var w []state.Write
		for _, o := range objs {
			w = append(w, state.Write{Object: o, Value: []byte(o)})
		}
		if err := m.Commit(ctx, part, 1, from, to, w); err != nil {
			t.Fatal(err)
		}
	}
	commit(-1, 1, "a", "b", "c", "d") // t=0: live until 16 s
	clk.Add(6 * time.Second)          // t=6
	commit(1, 1)                      // a sweep of 4 buckets (a pass), nothing idle
	if m.Expired() != 0 || m.Len() != 4 {
		t.Fatalf("t=6: expired %d, len %d", m.Expired(), m.Len())
	}
	commit(1, 2, "b") // b now lives until 22
	clk.Add(10*time.Second - time.Millisecond)
	if g := get(t, m, part, "a", "b"); string(g[0]) != "a" || string(g[1]) != "b" {
		t.Fatalf("t=15.999: %q; want [a b]", g)
	}
	clk.Add(time.Millisecond) // t=16: a, c, d idle now
	if g := get(t, m, part, "a", "b"); g[0] != nil || string(g[1]) != "b" {
		t.Fatalf("t=16: %q; want [nil b]", g)
	}
	if n := m.Expired(); n != 0 || m.Len() != 4 {
		t.Fatalf("a read deleted: expired %d, len %d", n, m.Len())
	}
	commit(2, 3, "c") // rewrites c (no count: it was not swept), sweeps a pass: a, d
	if n := m.Expired(); n != 2 {
		t.Fatalf("expired after a sweeping commit = %d; want 2 (a, d)", n)
	}
	snap, err := m.Snapshot(ctx, part)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 2 || snap.Next != 3 {
		t.Fatalf("snapshot at t=16 = %v", snap)
	}
	clk.Add(6 * time.Second) // t=22: b idle
	if n := m.Sweep(); n != 1 || m.Expired() != 3 {
		t.Fatalf("Sweep = %d, total %d; want 1, 3", n, m.Expired())
	}
	if ps := m.Partitions(); len(ps) != 1 || ps[0] != part {
		t.Fatalf("Partitions = %v", ps)
	}
}

// TestMemoryNoTTL: with IdleTTL 0 nothing expires.
func TestMemoryNoTTL(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	m, _ := state.NewMemory(state.MemoryConfig{Now: clk.Now}, nil)
	if _, err := m.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(ctx, part, 1, -1, 0, []state.Write{{Object: "a", Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(100 * 365 * 24 * time.Hour)
	if n := m.Sweep(); n != 0 || string(get(t, m, part, "a")[0]) != "x" {
		t.Fatalf("object expired without IdleTTL")
	}
}

// TestCompactKeyCollision: two partitions of different topics whose compact
// tags coincide cannot both claim; the second gets ErrKeyCollision and
// cannot commit.
func TestCompactKeyCollision(t *testing.T) {
	s := sharedServer(t)
	flushAll(t, s.Client)
	// Find a second topic whose tag character equals that of "alpha".
	code := func(topic string) byte { h := sha256.Sum256([]byte("cr:" + topic)); return h[0] & 63 }
	other := ""
	for i := 0; other == ""; i++ {
		if c := fmt.Sprintf("topic%d", i); code(c) == code("alpha") {
			other = c
		}
	}
	r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatCompact})
	a := state.Partition{Topic: "alpha", ID: 5}
	b := state.Partition{Topic: other, ID: 5}
	if r.MetaKey(a) != r.MetaKey(b) {
		t.Fatalf("tags differ: %q %q", r.MetaKey(a), r.MetaKey(b))
	}
	if _, err := r.Claim(ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, a, 1, -1, 1, []state.Write{{Object: "x", Value: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Claim(ctx, b, 1); !errors.Is(err, state.ErrKeyCollision) {
		t.Fatalf("Claim of a colliding partition = %v; want ErrKeyCollision", err)
	}
	if err := r.Commit(ctx, b, 1, 1, 2, []state.Write{{Object: "x", Value: []byte("b")}}); !errors.Is(err, state.ErrKeyCollision) {
		t.Fatalf("Commit of a colliding partition = %v; want ErrKeyCollision", err)
	}
	if g := get(t, r, a, "x"); string(g[0]) != "a" {
		t.Fatalf("value overwritten: %q", g[0])
	}
	// Another partition ID of the colliding topic has its own tag.
	if _, err := r.Claim(ctx, state.Partition{Topic: other, ID: 6}, 1); err != nil {
		t.Fatal(err)
	}
}

// TestMemorySweeper: RunSweeper removes expired objects without reads.
func TestMemorySweeper(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	m, _ := state.NewMemory(state.MemoryConfig{IdleTTL: time.Second, Now: clk.Now}, nil)
	if _, err := m.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(ctx, part, 1, -1, 0, []state.Write{{Object: "a", Value: []byte("x")}, {Object: "b", Value: []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second)
	c, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- m.RunSweeper(c, time.Millisecond) }()
	deadline := time.Now().Add(30 * time.Second)
	for m.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSweeper = %v", err)
	}
	if m.Expired() != 2 {
		t.Fatalf("expired = %d; want 2", m.Expired())
	}
}
