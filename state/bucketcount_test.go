package state_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
)

// TestBucketCountKeptByClaimedPartition: RedisConfig.Buckets
// (CHANGERATE_REDIS_BUCKETS) applies to partitions claimed for the first
// time only. A process configured with 64 buckets that takes over a
// partition first claimed with 16 keeps 16 (the count in its meta hash):
// it reads every object the first owner wrote, its own writes go to the
// same 16 bucket keys, and a process that has not claimed the partition
// reads it too. A partition it claims first gets its 64. Were the
// configured count used for the claimed partition, an object's bucket
// would change (hash mod 64 instead of mod 16) and the reads would miss.
func TestBucketCountKeptByClaimedPartition(t *testing.T) {
	s := redistest.Start(t)
	clk := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := func(nb int) state.RedisConfig {
		return state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, IdleTTL: time.Hour, Buckets: nb, Now: clk.Now}
	}
	p := state.Partition{Topic: "observations", ID: 3}
	q := state.Partition{Topic: "observations", ID: 4}
	var objs, more []string
	for i := 0; i < 400; i++ {
		objs = append(objs, fmt.Sprint("https://example.org/a/", i))
		more = append(more, fmt.Sprint("https://example.org/b/", i))
	}

	a := newRedisStore(t, s.Client, cfg(16))
	if _, err := a.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, p, 1, -1, 0, writesOf(objs, "a")); err != nil {
		t.Fatal(err)
	}

	b := newRedisStore(t, s.Client, cfg(64))
	if next, err := b.Takeover(ctx, p, 2); err != nil || next != 0 {
		t.Fatalf("Takeover = %d, %v; want 0", next, err)
	}
	for i, v := range get(t, b, p, objs...) {
		if string(v) != "a" {
			t.Fatalf("object %d read as %q after the takeover; want %q", i, v, "a")
		}
	}
	if err := b.Commit(ctx, p, 2, 0, 1, writesOf(more, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, q, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, q, 1, -1, 0, writesOf(append(objs, more...), "q")); err != nil {
		t.Fatal(err)
	}

	// Stored counts, and the bucket keys each partition has in Redis.
	for _, c := range []struct {
		p    state.Partition
		want int
	}{{p, 16}, {q, 64}} {
		nb, err := s.Client.HGet(ctx, b.MetaKey(c.p), "nb").Result()
		if err != nil || nb != fmt.Sprint(c.want) {
			t.Errorf("%v: stored nb %q, %v; want %d", c.p, nb, err, c.want)
		}
		tag := strings.TrimSuffix(b.MetaKey(c.p), ":meta")
		keys, err := s.Client.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range keys {
			if strings.HasPrefix(k, tag+":") && k != b.MetaKey(c.p) {
				n++
			}
		}
		// 800 objects over 16 or 64 buckets: some bucket is empty with
		// chance below nb·(1-1/nb)^800 < 3e-4, so all are there (the hash
		// is fixed: the test is deterministic); never more than nb.
		if n != c.want {
			t.Errorf("%v: %d bucket keys; want %d", c.p, n, c.want)
		}
	}

	// A process that has not claimed p (a reader, /v1/objects) reads it
	// with the stored count, whatever its own.
	r := newRedisStore(t, s.Client, cfg(256))
	for i, v := range get(t, r, p, append(objs, more...)...) {
		if want := map[bool]string{true: "a", false: "b"}[i < len(objs)]; string(v) != want {
			t.Fatalf("reader: object %d read as %q; want %q", i, v, want)
		}
	}
	for i, v := range get(t, r, q, append(objs, more...)...) {
		if string(v) != "q" {
			t.Fatalf("reader: object %d of %v read as %q; want %q", i, q, v, "q")
		}
	}
}
