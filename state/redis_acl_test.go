package state_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
)

// TestLeastPrivilegeACL runs the store as a user with exactly
// RedisACLRules — claim, commit with and without expiry, get, expired-key
// notifications, the durability check — and checks that the user can do
// nothing else: no CONFIG, no keyspace-wide or destructive commands, no key
// outside the store's patterns, no other Pub/Sub channel.
func TestLeastPrivilegeACL(t *testing.T) {
	for _, format := range []string{state.KeyFormatReadable, state.KeyFormatCompact} {
		t.Run(format, func(t *testing.T) {
			cfg := state.RedisConfig{KeyPrefix: "cr:", KeyFormat: format, ExpiryEvents: state.ExpiryEventsSubscribe, IdleTTL: 50 * time.Millisecond}
			rules := state.RedisACLRules(cfg)
			if strings.Contains(rules, "@all") && !strings.Contains(rules, "-@all") || strings.Contains(rules, "+@") || strings.Contains(rules, "allkeys") ||
				strings.Contains(rules, "~*") || strings.Contains(rules, "config") {
				t.Fatalf("rules grant too much: %s", rules)
			}
			s := redistest.Start(t, redistest.WithUser("changerate", "pa55", rules), redistest.WithAOF(),
				redistest.WithArgs("--notify-keyspace-events", "Ex"))
			cfg.Addrs, cfg.Username, cfg.Password = []string{s.Addr}, "changerate", "pa55"
			r, err := state.NewRedis(cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.CheckDurability(ctx); err != nil {
				t.Fatalf("CheckDurability as the restricted user: %v", err)
			}
			p := state.Partition{Topic: "observations", ID: 3}
			if _, err := r.Claim(ctx, p, 1); err != nil {
				t.Fatal(err)
			}
			if err := r.Commit(ctx, p, 1, -1, 10, []state.Write{{Object: "http://a.example/", Value: []byte("v1")}, {Object: "http://b.example/", Value: []byte("v2")}}); err != nil {
				t.Fatal(err)
			}
			got, err := r.Get(ctx, p, []string{"http://a.example/", "http://b.example/"}, nil)
			if err != nil || string(got[0]) != "v1" || string(got[1]) != "v2" {
				t.Fatalf("Get = %q, %v", got, err)
			}
			// The objects expire after 50ms; the store sees the notifications.
			deadline := time.Now().Add(5 * time.Second)
			for r.Expired() < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := r.Expired(); n != 2 {
				t.Errorf("expired objects counted: %d, want 2", n)
			}
			if _, err := r.Claim(ctx, p, 2); err != nil { // takeover path: HMGET/HSET in a script
				t.Fatal(err)
			}
			if err := r.Commit(ctx, p, 1, 10, 11, nil); !errors.Is(err, state.ErrFenced) {
				t.Fatalf("stale epoch commit: %v, want ErrFenced", err)
			}

			// What the user may not do.
			c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "changerate", Password: "pa55"})
			defer c.Close()
			for _, cmd := range [][]any{
				{"CONFIG", "GET", "maxmemory-policy"}, {"CONFIG", "SET", "appendonly", "no"}, {"KEYS", "*"}, {"SCAN", "0"},
				{"FLUSHALL"}, {"FLUSHDB"}, {"SHUTDOWN"}, {"ACL", "LIST"}, {"SET", "other:key", "x"},
				{"GET", "session:1"}, {"PUBLISH", "ch", "x"}, {"SUBSCRIBE", "other"}, {"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"},
				{"MONITOR"}, {"CLIENT", "KILL", "ID", "1"}, {"REPLICAOF", "NO", "ONE"}, {"BGSAVE"}, {"EXPIRE", "{cr:observations:3}:meta", "1"},
			} {
				err := c.Do(ctx, cmd...).Err()
				if err == nil || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("%v as the restricted user: %v, want NOPERM", cmd, err)
				}
			}
			// A script cannot reach other keys either: Redis checks the commands scripts call.
			if err := c.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{"other:key"}).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") &&
				!strings.Contains(err.Error(), "permission") {
				t.Errorf("EVAL on a foreign key: %v, want a permission error", err)
			}
		})
	}
}

func TestCheckDurability(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redistest.Option
		want []string // substrings of the error; nil: no error
	}{
		{"aof noeviction", []redistest.Option{redistest.WithAOF()}, nil},
		{"no aof", nil, []string{"appendonly is off"}},
		{"allkeys-lru", []redistest.Option{redistest.WithAOF(), redistest.WithArgs("--maxmemory-policy", "allkeys-lru")}, []string{`maxmemory-policy is "allkeys-lru"`}},
		{"both", []redistest.Option{redistest.WithArgs("--maxmemory-policy", "volatile-ttl")}, []string{"appendonly is off", `"volatile-ttl"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Start(t, tc.opts...)
			r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{ExpiryEvents: state.ExpiryEventsOff}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = r.CheckDurability(ctx)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, state.ErrNotDurable) {
				t.Fatalf("err = %v, want ErrNotDurable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), s.Addr) {
					t.Errorf("err = %v, want it to name %s and %q", err, s.Addr, w)
				}
			}
		})
	}
}

// TestSentinel runs the store through go-redis's failover client: a
// master, a replica and one Sentinel (real redis-server processes); after
// SENTINEL FAILOVER the store follows the new master and keeps its state.
func TestSentinel(t *testing.T) {
	master := redistest.Start(t, redistest.WithAOF())
	replica := redistest.Start(t, redistest.WithAOF(), redistest.WithArgs("--replicaof", "127.0.0.1", portOf(t, master.Addr)))
	sentinel := startSentinel(t, master.Addr)
	waitFor(t, "replica in sync", func() bool {
		info, _ := replica.Client.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	cfg := state.RedisConfig{Addrs: []string{sentinel}, SentinelMaster: "mymaster", KeyPrefix: "cr:", ExpiryEvents: state.ExpiryEventsOff}
	r, err := state.NewRedis(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CheckDurability(ctx); err != nil {
		t.Fatal(err)
	}
	p := state.Partition{Topic: "observations", ID: 0}
	if _, err := r.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, p, 1, -1, 5, []state.Write{{Object: "o", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	// Let the replica catch up before failing over, as Sentinel would only
	// promote an up-to-date replica in production.
	if err := master.Client.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer sc.Close()
	if err := sc.Failover(ctx, "mymaster").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "failover", func() bool {
		a, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		return err == nil && net.JoinHostPort(a[0], a[1]) == replica.Addr
	})
	waitFor(t, "the old master demoted", func() bool {
		info, _ := master.Client.Info(ctx, "replication").Result()
		return strings.Contains(info, "role:slave")
	})
	waitFor(t, "commit on the new master", func() bool {
		return r.Commit(ctx, p, 1, 5, 6, []state.Write{{Object: "o", Value: []byte("w")}}) == nil
	})
	got, err := r.Get(ctx, p, []string{"o"}, nil)
	if err != nil || string(got[0]) != "w" {
		t.Fatalf("Get after failover = %q, %v", got, err)
	}
	if v, _ := replica.Client.HGet(ctx, r.MetaKey(p), "next").Result(); v != "6" {
		t.Errorf("the new master (the old replica) has next offset %q, want 6", v)
	}
}

func portOf(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSentinel starts redis-server --sentinel on a free port monitoring
// masterAddr as "mymaster" (quorum 1) and returns its address.
func startSentinel(t *testing.T, masterAddr string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	host, mport, _ := net.SplitHostPort(masterAddr)
	conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\n",
		port, dir, host, mport)
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, path, "--sentinel")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	waitFor(t, "sentinel sees a replica", func() bool {
		rs, err := sc.Replicas(ctx, "mymaster").Result()
		return err == nil && len(rs) > 0
	})
	return addr
}

// TestLeastPrivilegeACLBuckets runs the bucketed layout as a user with
// exactly its RedisACLRules: the migration of the previous release's keys
// at Claim (SCAN, GET, PTTL, HSET, DEL in a script), commits with their
// sweep (HSET, HDEL, HGETALL), reads (HMGET); KEYS and CONFIG stay denied.
func TestLeastPrivilegeACLBuckets(t *testing.T) {
	clk := &fakeClock{now: time.Now()}
	cfg := state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, ExpiryEvents: state.ExpiryEventsOff, IdleTTL: time.Hour, Buckets: 16, Now: clk.Now}
	rules := state.RedisACLRules(cfg)
	s := redistest.Start(t, redistest.WithUser("changerate", "pa55", rules))
	cfg.Addrs, cfg.Username, cfg.Password = []string{s.Addr}, "changerate", "pa55"
	// The previous release's keys, written by a compact store whose rules
	// are a subset of these.
	oldCfg := cfg
	oldCfg.KeyFormat = state.KeyFormatCompact
	old, err := state.NewRedis(oldCfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	p := state.Partition{Topic: "observations", ID: 3}
	if _, err := old.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, p, 1, -1, 10, []state.Write{{Object: "http://a.example/", Value: []byte("v1")}}); err != nil {
		t.Fatal(err)
	}
	r, err := state.NewRedis(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if next, err := r.Claim(ctx, p, 2); err != nil || next != 10 || r.Migrated() != 1 {
		t.Fatalf("Claim = %d, %v, migrated %d; want 10, 1", next, err, r.Migrated())
	}
	if err := r.Commit(ctx, p, 2, 10, 11, []state.Write{{Object: "http://b.example/", Value: []byte("v2")}, {Object: "http://c.example/"}}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, p, []string{"http://a.example/", "http://b.example/"}, nil)
	if err != nil || string(got[0]) != "v1" || string(got[1]) != "v2" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	clk.Add(2 * time.Hour) // both idle; a commit sweeps its 8 buckets per commit
	for i := 0; i < 2; i++ {
		clk.Add(time.Hour / 16)
		if err := r.Commit(ctx, p, 2, 11, 11, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Expired(); n != 2 {
		t.Fatalf("swept %d; want 2", n)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "changerate", Password: "pa55"})
	defer c.Close()
	for _, cmd := range [][]any{{"KEYS", "*"}, {"CONFIG", "GET", "maxmemory-policy"}, {"FLUSHALL"}, {"HSET", "other:key", "f", "x"}} {
		if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v as the restricted user: %v, want NOPERM", cmd, err)
		}
	}
}
