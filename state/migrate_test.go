package state_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
	"github.com/redis/go-redis/v9"
)

// TestMigrateFromPerObjectKeys: a real redis-server holds the previous
// release's layout (written by a KeyFormatCompact store: the same Lua
// commit script and keys, SET PX per object); a bucketed store's Claim
// moves every object into the buckets with its value and the lifetime
// its TTL promised, deletes the old keys, and reads and commits go on
// from the stored offset. A commit of the previous release after that
// (a rollback) is migrated again at the next Claim, its values winning.
// Nothing is lost at any step.
func TestMigrateFromPerObjectKeys(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprint("cluster=", cluster), func(t *testing.T) {
			var c redis.UniversalClient
			if cluster {
				c = sharedCluster(t).Client
			} else {
				c = redistest.Start(t).Client
			}
			flushAll(t, c)
			testMigrate(t, c)
		})
	}
}

func testMigrate(t *testing.T, c redis.UniversalClient) {
	const ttl = time.Hour
	old := newRedisStore(t, c, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatCompact, IdleTTL: ttl})
	p := state.Partition{Topic: "observations", ID: 7}
	const n = 700 // more than one migration chunk (256)
	want := map[string][]byte{}
	var names []string
	var w []state.Write
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("https://example.org/%d", i)
		names = append(names, name)
		v := []byte(fmt.Sprintf("state-%d-%x", i, i*i))
		want[name] = v
		w = append(w, state.Write{Object: name, Value: v})
	}
	if _, err := old.Claim(ctx, p, 3); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, p, 3, -1, 40, w[:400]); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, p, 3, 40, 70, w[400:]); err != nil {
		t.Fatal(err)
	}
	// Another partition's old keys stay where they are.
	other := state.Partition{Topic: "observations", ID: 8}
	if _, err := old.Claim(ctx, other, 3); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, other, 3, -1, 1, w[:5]); err != nil {
		t.Fatal(err)
	}
	oldKeys := countKeys(t, c, 14)
	if oldKeys != n+5 {
		t.Fatalf("%d per-object keys before the upgrade; want %d", oldKeys, n+5)
	}

	clk := &fakeClock{now: time.Now()}
	nw := newRedisStore(t, c, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, IdleTTL: ttl, Buckets: 64, Now: clk.Now})
	// A read before the new release claims finds the old keys.
	if g := get(t, nw, p, names[0]); !bytes.Equal(g[0], want[names[0]]) {
		t.Fatalf("read before the claim = %q; want %q", g[0], want[names[0]])
	}
	next, err := nw.Claim(ctx, p, 4)
	if err != nil || next != 70 {
		t.Fatalf("Claim = %d, %v; want 70", next, err)
	}
	if m := nw.Migrated(); m != n {
		t.Fatalf("migrated %d objects; want %d", m, n)
	}
	if k := countKeys(t, c, 14); k != 5 {
		t.Fatalf("%d per-object keys after the migration; want 5 (the other partition's)", k)
	}
	checkAll := func(what string) {
		t.Helper()
		got := get(t, nw, p, names...)
		for i, name := range names {
			if !bytes.Equal(got[i], want[name]) {
				t.Fatalf("%s: %s = %q; want %q", what, name, got[i], want[name])
			}
		}
	}
	checkAll("after the migration")
	// The old TTL (IdleTTL + IdleTTL/16 from the write) is kept: alive
	// just before IdleTTL·17/16, gone just after.
	clk.Add(ttl + ttl/16 - 10*time.Second)
	checkAll("just before the old TTL")
	clk.Add(20 * time.Second)
	for i, v := range get(t, nw, p, names[:3]...) {
		if v != nil {
			t.Fatalf("%s alive after its old TTL: %q", names[i], v)
		}
	}
	clk.Add(-ttl - ttl/16 - 10*time.Second) // back to the upgrade

	// The new release commits; a claim again migrates nothing.
	want[names[0]] = []byte("new")
	if err := nw.Commit(ctx, p, 4, 70, 80, []state.Write{{Object: names[0], Value: want[names[0]]}}); err != nil {
		t.Fatal(err)
	}
	if next, err := nw.Claim(ctx, p, 4); err != nil || next != 80 || nw.Migrated() != n {
		t.Fatalf("re-Claim = %d, %v, migrated %d; want 80, %d", next, err, nw.Migrated(), n)
	}
	// The previous release takes the partition back (a rollback) and
	// writes per-object keys again; the new release's next claim moves
	// them, and they win over the bucket's older values.
	if _, err := old.Claim(ctx, p, 5); err != nil {
		t.Fatal(err)
	}
	want[names[1]] = []byte("rolled back")
	if err := old.Commit(ctx, p, 5, 80, 90, []state.Write{{Object: names[1], Value: want[names[1]]}}); err != nil {
		t.Fatal(err)
	}
	if err := nw.Commit(ctx, p, 4, 80, 85, nil); err == nil {
		t.Fatal("the fenced bucketed store committed")
	}
	if next, err := nw.Claim(ctx, p, 6); err != nil || next != 90 || nw.Migrated() != n+1 {
		t.Fatalf("Claim after the rollback = %d, %v, migrated %d; want 90, %d", next, err, nw.Migrated(), n+1)
	}
	checkAll("after the rollback and the second migration")
	// The previous release, fenced now, cannot write.
	if err := old.Commit(ctx, p, 5, 90, 91, []state.Write{{Object: names[2], Value: []byte("zombie")}}); err == nil {
		t.Fatal("the old release's zombie committed")
	}
	checkAll("after the zombie's attempt")
	snap, err := nw.Snapshot(ctx, p)
	if err != nil || len(snap.Objects) != n || snap.Next != 90 {
		t.Fatalf("snapshot: %d objects, next %d, %v; want %d, 90", len(snap.Objects), snap.Next, err, n)
	}
}

// countKeys counts the keys of length n on every master of c.
func countKeys(t *testing.T, c redis.UniversalClient, n int) int {
	t.Helper()
	count := 0
	scan := func(node *redis.Client) {
		iter := node.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			if len(iter.Val()) == n {
				count++
			}
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var nodes []*redis.Client
		_ = cc.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
			mu.Lock()
			nodes = append(nodes, node)
			mu.Unlock()
			return nil
		})
		for _, node := range nodes {
			scan(node)
		}
	} else {
		scan(c.(*redis.Client))
	}
	return count
}
