package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// TestSlotMigrationUnderLoad moves the Cluster slot of a partition (its
// meta hash and its buckets) from one master to another, key by key with
// MIGRATE as redis-cli --cluster reshard does, while the partition's
// owner keeps committing batches; commits refused during the move
// (TRYAGAIN, ASK to keys not yet moved) changed nothing and are retried.
// Afterwards every object holds the value of its last committed batch and
// the stored offset is the last commit's: nothing lost, nothing applied
// twice. The longest MIGRATE call is logged (a bucket's block).
func TestSlotMigrationUnderLoad(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	r, err := state.NewRedisFromClient(cl.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, Buckets: 64, IdleTTL: time.Hour}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := state.Partition{Topic: "observations", ID: 5}
	if _, err := r.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	const objects = 3000
	want := map[string]string{}
	var mu sync.Mutex
	next := int64(-1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	var retries int
	go func() {
		rng := rand.New(rand.NewPCG(5, 5))
		for b := 0; ; b++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			w := make([]state.Write, 60)
			for i := range w {
				w[i] = state.Write{Object: fmt.Sprint("https://example.org/", rng.IntN(objects)), Value: []byte(strconv.Itoa(b))}
			}
			for attempt := 0; ; attempt++ {
				err := r.Commit(ctx, p, 1, next, next+1, w)
				if err == nil || errors.Is(err, state.ErrAlreadyCommitted) {
					break
				}
				if errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrOffsetMismatch) || attempt > 2000 {
					done <- fmt.Errorf("batch %d: %w", b, err)
					return
				}
				mu.Lock()
				retries++
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			for _, x := range w {
				want[x.Object] = string(x.Value)
			}
			next++
			mu.Unlock()
		}
	}()
	time.Sleep(200 * time.Millisecond) // buckets filled
	slot := int(cl.Client.ClusterKeySlot(ctx, r.MetaKey(p)).Val())
	src, err := cl.Client.MasterForKey(ctx, r.MetaKey(p))
	if err != nil {
		t.Fatal(err)
	}
	srcID := src.ClusterMyID(ctx).Val()
	var dst *redis.Client
	for _, n := range cl.Nodes {
		if id := n.Client.ClusterMyID(ctx).Val(); id != srcID && dst == nil {
			dst = n.Client
		}
	}
	dstID := dst.ClusterMyID(ctx).Val()
	dstOpt := dst.Options()
	host, port, _ := strings.Cut(dstOpt.Addr, ":")
	must := func(err error) {
		t.Helper()
		if err != nil {
			close(stop)
			<-done
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	var moved int
	var longest time.Duration
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond) // commits in between
		t0 := time.Now()
		must(src.Do(ctx, "MIGRATE", host, port, "", 0, 5000, "KEYS", keys[0]).Err())
		longest = max(longest, time.Since(t0))
		moved++
	}
	for _, n := range cl.Nodes {
		must(n.Client.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	}
	time.Sleep(300 * time.Millisecond) // commits on the new node
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := r.Claim(ctx, p, 1); err != nil || n != next {
		t.Fatalf("stored offset %d, %v; the last commit's %d", n, err, next)
	}
	names := make([]string, 0, len(want))
	for o := range want {
		names = append(names, o)
	}
	slices.Sort(names)
	got := get(t, r, p, names...)
	for i, o := range names {
		if string(got[i]) != want[o] {
			t.Fatalf("%s = %q; want %q (its last committed batch)", o, got[i], want[o])
		}
	}
	if owner, _ := cl.Client.MasterForKey(ctx, r.MetaKey(p)); owner.ClusterMyID(ctx).Val() != dstID {
		t.Fatal("the slot did not move")
	}
	t.Logf("moved %d keys of slot %d (meta + buckets) under load: %d batches committed, %d commits retried, %d objects checked; longest MIGRATE %v",
		moved, slot, next+1, retries, len(names), longest)
}
