package state_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func newRedisStore(t *testing.T, c redis.UniversalClient, cfg state.RedisConfig) *state.Redis {
	t.Helper()
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = uniquePrefix(t)
	}
	r, err := state.NewRedisFromClient(c, cfg, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestHashTagOneSlot checks with CLUSTER KEYSLOT that every key of a
// partition, whatever the object name, is in the slot of its meta key, and
// that different partitions spread over the masters.
func TestHashTagOneSlot(t *testing.T) {
	cl := sharedCluster(t)
	r := newRedisStore(t, cl.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatReadable})
	objects := []string{"a", "http://example.com/x?y={z}", "}{", "{}", "{b}", strings.Repeat("long", 100), ""}
	slots := map[int64]bool{}
	for id := int32(0); id < 32; id++ {
		p := state.Partition{Topic: "observations", ID: id}
		meta := r.MetaKey(p)
		if want := fmt.Sprintf("{cr:observations:%d}:meta", id); meta != want {
			t.Fatalf("MetaKey = %q; want %q", meta, want)
		}
		slot, err := cl.Client.ClusterKeySlot(ctx, meta).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot] = true
		for _, o := range objects {
			s, err := cl.Client.ClusterKeySlot(ctx, r.ObjectKey(p, o)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if s != slot {
				t.Fatalf("%v: object %q in slot %d, meta in slot %d", p, o, s, slot)
			}
		}
	}
	if len(slots) < 16 {
		t.Fatalf("32 partitions use only %d slots", len(slots))
	}
	// The partitions' commits land on more than one master.
	counts := map[string]int{}
	for id := int32(0); id < 32; id++ {
		p := state.Partition{Topic: "spread", ID: id}
		if _, err := r.Claim(ctx, p, 1); err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(ctx, p, 1, -1, 1, []state.Write{{Object: "x", Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		n, err := cl.Client.MasterForKey(ctx, r.MetaKey(p))
		if err != nil {
			t.Fatal(err)
		}
		counts[n.Options().Addr]++
	}
	if len(counts) != 3 {
		t.Fatalf("32 partitions on %d masters (%v); want 3", len(counts), counts)
	}
}

// TestClusterConfig goes through NewRedis with Cluster: true, as cmd does.
func TestClusterConfig(t *testing.T) {
	cl := sharedCluster(t)
	reg := prometheus.NewRegistry()
	r, err := state.NewRedis(state.RedisConfig{Addrs: cl.Addrs[:1], Cluster: true, KeyPrefix: uniquePrefix(t), KeyFormat: state.KeyFormatReadable, IdleTTL: time.Hour}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.Client().(*redis.ClusterClient); !ok {
		t.Fatalf("client is %T", r.Client())
	}
	for id := int32(0); id < 8; id++ {
		p := state.Partition{Topic: "cfg", ID: id}
		if _, err := r.Claim(ctx, p, 1); err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(ctx, p, 1, -1, 5, []state.Write{{Object: "o", Value: []byte{byte(id)}}}); err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(ctx, p, []string{"o"}, nil)
		if err != nil || len(got[0]) != 1 || got[0][0] != byte(id) {
			t.Fatalf("%v: Get = %v, %v", p, got, err)
		}
		ttl, err := cl.Client.PTTL(ctx, r.ObjectKey(p, "o")).Result()
		if want := time.Hour + r.ExpiryGrace(); err != nil || ttl < want-time.Minute || ttl > want {
			t.Fatalf("PTTL = %v, %v; want about %v (IdleTTL + ExpiryGrace)", ttl, err, want)
		}
	}
	// Expiry notifications were enabled on every master.
	err = cl.Client.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		v, err := n.ConfigGet(ctx, "notify-keyspace-events").Result()
		if err != nil {
			return err
		}
		if f := v["notify-keyspace-events"]; !strings.Contains(f, "E") || !strings.Contains(f, "x") {
			return fmt.Errorf("%s: notify-keyspace-events %q", n.Options().Addr, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  state.RedisConfig
		want string // substring of the error; "" = valid
	}{
		{"zero value", state.RedisConfig{}, ""},
		{"full", state.RedisConfig{Addrs: []string{"r:6380"}, Username: "u", Password: "p", DB: 2, KeyPrefix: "x:", IdleTTL: time.Hour,
			TLS: state.RedisTLS{Enable: true, ServerName: "r"}, PoolSize: 20, ExpiryEvents: "off"}, ""},
		{"bad addr", state.RedisConfig{Addrs: []string{"nohost"}}, "Addrs"},
		{"cluster db", state.RedisConfig{Cluster: true, DB: 1}, "DB"},
		{"negative db", state.RedisConfig{DB: -1}, "DB"},
		{"brace prefix", state.RedisConfig{KeyPrefix: "a{"}, "KeyPrefix"},
		{"sub-ms ttl", state.RedisConfig{IdleTTL: time.Microsecond}, "IdleTTL"},
		{"negative ttl", state.RedisConfig{IdleTTL: -time.Second}, "IdleTTL"},
		{"expiry mode", state.RedisConfig{ExpiryEvents: "sometimes"}, "ExpiryEvents"},
		{"pool", state.RedisConfig{PoolSize: -1}, "PoolSize"},
		{"timeout", state.RedisConfig{ReadTimeout: -1}, "ReadTimeout"},
		{"cert without key", state.RedisConfig{TLS: state.RedisTLS{Enable: true, CertFile: "c.pem"}}, "KeyFile"},
		{"tls options without enable", state.RedisConfig{TLS: state.RedisTLS{CAFile: "ca.pem"}}, "TLS.Enable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v; want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "state: ") {
				t.Fatalf("Validate = %v; want an error naming %s", err, c.want)
			}
		})
	}
	if err := (state.MemoryConfig{IdleTTL: -1}).Validate(); err == nil {
		t.Fatal("negative Memory IdleTTL accepted")
	}
}

// roundTrip claims, commits and reads one object through r.
func roundTrip(t *testing.T, r state.Store) {
	t.Helper()
	p := state.Partition{Topic: "rt", ID: 0}
	if _, err := r.Claim(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, p, 1, -1, 1, []state.Write{{Object: "o", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, p, []string{"o"}, nil); err != nil || string(got[0]) != "v" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}

func TestAuth(t *testing.T) {
	t.Run("acl user", func(t *testing.T) {
		// The user has exactly the store's least-privilege rules (with
		// ExpiryEvents "config": CONFIG GET/SET of notify-keyspace-events).
		s := redistest.Start(t, redistest.WithUser("aggregator", "pa55", state.RedisACLRules(state.RedisConfig{})),
			redistest.WithPassword("admin-only"))
		r, err := state.NewRedis(state.RedisConfig{Addrs: []string{s.Addr}, Username: "aggregator", Password: "pa55"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		roundTrip(t, r)
		if _, err := state.NewRedis(state.RedisConfig{Addrs: []string{s.Addr}, Username: "aggregator", Password: "wrong"}, nil, nil); err == nil {
			t.Fatal("wrong password accepted")
		}
		if _, err := state.NewRedis(state.RedisConfig{Addrs: []string{s.Addr}}, nil, nil); err == nil {
			t.Fatal("default user accepted without its password")
		}
	})
	t.Run("requirepass", func(t *testing.T) {
		s := redistest.Start(t, redistest.WithPassword("s3cret"))
		r, err := state.NewRedis(state.RedisConfig{Addrs: []string{s.Addr}, Password: "s3cret", DB: 3}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		roundTrip(t, r)
		if n, err := s.Client.Do(ctx, "SELECT", 3).Result(); err != nil {
			t.Fatal(n, err)
		}
		if _, err := state.NewRedis(state.RedisConfig{Addrs: []string{s.Addr}}, nil, nil); err == nil {
			t.Fatal("missing password accepted")
		}
	})
}

// writeCerts writes a CA, a server certificate for localhost/127.0.0.1 and
// a client certificate, all PEM, into dir.
func writeCerts(t *testing.T, dir string) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	ca = write("ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kb)
	}
	srvCert, srvKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, sc, sk, cc, ck := writeCerts(t, dir)
	cert, err := tls.LoadX509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	s := redistest.Start(t, redistest.WithTLS(redistest.TLS{CertFile: sc, KeyFile: sk, CAFile: ca, AuthClients: "yes",
		Client: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}})) //nolint:gosec // harness only
	good := state.RedisConfig{Addrs: []string{s.Addr}, TLS: state.RedisTLS{Enable: true, CAFile: ca, CertFile: cc, KeyFile: ck, ServerName: "localhost"}}
	r, err := state.NewRedis(good, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	roundTrip(t, r)
	bad := []state.RedisConfig{
		{Addrs: []string{s.Addr}, DialTimeout: 2 * time.Second},                                                          // plaintext
		{Addrs: []string{s.Addr}, TLS: state.RedisTLS{Enable: true, CAFile: ca, ServerName: "localhost"}},                // no client cert
		{Addrs: []string{s.Addr}, TLS: state.RedisTLS{Enable: true, CertFile: cc, KeyFile: ck, ServerName: "localhost"}}, // CA not trusted
	}
	for i, cfg := range bad {
		cfg.ReadTimeout = 2 * time.Second
		if r, err := state.NewRedis(cfg, nil, nil); err == nil {
			_ = r.Close()
			t.Errorf("bad TLS config %d accepted", i)
		}
	}
}

// TestScriptCacheFlushed: after SCRIPT FLUSH (or a restart without the
// script cache) EVALSHA fails with NOSCRIPT and the store falls back to EVAL.
func TestScriptCacheFlushed(t *testing.T) {
	s := sharedServer(t)
	r := newRedisStore(t, s.Client, state.RedisConfig{KeyFormat: state.KeyFormatReadable})
	if _, err := r.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		if err := s.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(ctx, part, 1, i-1, i, []state.Write{{Object: "o", Value: []byte("v")}}); err != nil {
			t.Fatalf("commit %d after SCRIPT FLUSH: %v", i, err)
		}
	}
}

// TestIdleTTLRefreshed: every commit of an object resets its TTL; deletes
// and the meta key have none; IdleTTL 0 removes a TTL set earlier.
func TestIdleTTLRefreshed(t *testing.T) {
	s := sharedServer(t)
	prefix := uniquePrefix(t)
	r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: prefix, KeyFormat: state.KeyFormatReadable, IdleTTL: 10 * time.Minute})
	if _, err := r.Claim(ctx, part, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, part, 1, -1, 1, []state.Write{{Object: "a", Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.PExpire(ctx, r.ObjectKey(part, "a"), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, part, 1, 1, 2, []state.Write{{Object: "a", Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if ttl := s.Client.PTTL(ctx, r.ObjectKey(part, "a")).Val(); ttl < 9*time.Minute {
		t.Fatalf("PTTL after commit = %v; want about 10m", ttl)
	}
	if ttl := s.Client.PTTL(ctx, r.MetaKey(part)).Val(); ttl != -1 {
		t.Fatalf("meta PTTL = %v; want none (-1)", ttl)
	}
	forever := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: prefix, KeyFormat: state.KeyFormatReadable})
	if err := forever.Commit(ctx, part, 1, 2, 3, []state.Write{{Object: "a", Value: []byte("3")}}); err != nil {
		t.Fatal(err)
	}
	if ttl := s.Client.PTTL(ctx, r.ObjectKey(part, "a")).Val(); ttl != -1 {
		t.Fatalf("PTTL with IdleTTL 0 = %v; want none (-1)", ttl)
	}
}

// TestExpiryEventFlagsKept: NewRedis adds E and x to the flags already set
// and keeps them; "off" neither changes nor counts.
func TestExpiryEventFlagsKept(t *testing.T) {
	s := redistest.Start(t)
	if err := s.Client.ConfigSet(ctx, "notify-keyspace-events", "Kg").Err(); err != nil {
		t.Fatal(err)
	}
	off := newRedisStore(t, s.Client, state.RedisConfig{ExpiryEvents: state.ExpiryEventsOff})
	if f := s.Client.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; f != "gK" && f != "Kg" {
		t.Fatalf("flags changed with ExpiryEvents off: %q", f)
	}
	newRedisStore(t, s.Client, state.RedisConfig{})
	f := s.Client.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
	for _, c := range "KgEx" {
		if !strings.ContainsRune(f, c) {
			t.Fatalf("flags %q lack %c", f, c)
		}
	}
	_ = off
}

// TestExpiredCountsOnlyOwnPrefix: keys of other prefixes and non-object
// keys expiring are not counted.
func TestExpiredCountsOnlyOwnPrefix(t *testing.T) {
	s := redistest.Start(t)
	r := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "mine:", KeyFormat: state.KeyFormatReadable, ExpiryScope: state.ExpiryScopeAll})
	other := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "other:", KeyFormat: state.KeyFormatReadable, IdleTTL: 50 * time.Millisecond})
	mine := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "mine:", KeyFormat: state.KeyFormatReadable, IdleTTL: 50 * time.Millisecond, ExpiryEvents: state.ExpiryEventsOff})
	for _, st := range []*state.Redis{other, mine} {
		if _, err := st.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, part, 1, -1, 1, []state.Write{{Object: "a", Value: []byte("1")}, {Object: "b", Value: []byte("1")}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"{mine:x:1}:meta", "unrelated"} {
		if err := s.Client.Set(ctx, k, "v", 50*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until other has seen its 2 expiries; by then Redis has expired
	// all keys (same TTL, earlier or equal deadlines), and r has seen its.
	if n := waitExpired(t, other, 2); n != 2 {
		t.Fatalf("other counted %d; want 2", n)
	}
	if n := waitExpired(t, r, 2); n != 2 {
		t.Fatalf("mine counted %d; want 2", n)
	}
	if n := s.Client.DBSize(ctx).Val(); n != 2 { // the two meta hashes
		t.Fatalf("dbsize = %d; want 2", n)
	}
}

// TestExpiryCountedAcrossRestart: after redis-server is killed and
// restarted (forgetting notify-keyspace-events), the store re-enables the
// notifications and its subscription reconnects, so expiries are counted.
func TestExpiryCountedAcrossRestart(t *testing.T) {
	s := redistest.Start(t)
	reg := prometheus.NewRegistry()
	r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyFormat: state.KeyFormatCompact, IdleTTL: 100 * time.Millisecond, ExpiryEventsRecheck: 50 * time.Millisecond}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	commit := func(from, to int64) {
		t.Helper()
		if _, err := r.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(ctx, part, 1, from, to, []state.Write{{Object: "a", Value: []byte("1")}, {Object: "b", Value: []byte("2")}}); err != nil {
			t.Fatal(err)
		}
	}
	commit(-1, 1)
	if n := waitExpired(t, r, 2); n != 2 {
		t.Fatalf("expired before restart = %d; want 2", n)
	}
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// Wait until the flags are back (the recheck) before writing again.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.Client.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"], "x") {
		if time.Now().After(deadline) {
			t.Fatal("notify-keyspace-events not re-enabled after restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The store's subscription reconnects on its own; keep writing batches
	// until expiries are counted again (a batch may expire before the
	// subscription is back).
	from := int64(-1) // no AOF: the restart emptied Redis
	for i := 0; r.Expired() < 4; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("expired after restart = %d; want 4", r.Expired())
		}
		commit(from, from+2)
		from += 2
		time.Sleep(150 * time.Millisecond)
	}
	if got := gatherValue(t, reg, "changerate_state_expired_objects_total"); got != float64(r.Expired()) {
		t.Fatalf("metric %v != Expired() %d", got, r.Expired())
	}
}

// TestRedisMetrics: latency by op, batch sizes and rejections are exported.
func TestRedisMetrics(t *testing.T) {
	s := sharedServer(t)
	reg := prometheus.NewRegistry()
	r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{KeyPrefix: uniquePrefix(t), KeyFormat: state.KeyFormatReadable}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Claim(ctx, part, 2); err != nil {
		t.Fatal(err)
	}
	w := []state.Write{{Object: "a", Value: []byte("1")}, {Object: "b", Value: []byte("2")}, {Object: "c", Value: nil}}
	if err := r.Commit(ctx, part, 2, -1, 3, w); err != nil {
		t.Fatal(err)
	}
	_ = r.Commit(ctx, part, 2, -1, 3, w) // a repeat: already_committed
	_ = r.Commit(ctx, part, 1, 3, 4, w)  // fenced
	if _, err := r.Get(ctx, part, []string{"a"}, nil); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]uint64{}
	var batchSum float64
	var batchCount uint64
	for _, mf := range mfs {
		switch mf.GetName() {
		case "changerate_state_redis_command_seconds":
			for _, m := range mf.GetMetric() {
				ops[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		case "changerate_state_commit_batch_objects":
			batchSum = mf.GetMetric()[0].GetHistogram().GetSampleSum()
			batchCount = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if ops["claim"] != 1 || ops["commit"] != 3 || ops["get"] != 1 {
		t.Fatalf("latency samples by op = %v; want claim 1, commit 3, get 1", ops)
	}
	if batchCount != 1 || batchSum != 3 {
		t.Fatalf("batch histogram: %d samples, sum %v; want 1, 3", batchCount, batchSum)
	}
	if f, m := labeledCounter(t, reg, "changerate_state_commit_rejected_total", "fenced"), labeledCounter(t, reg, "changerate_state_commit_rejected_total", "already_committed"); f != 1 || m != 1 {
		t.Fatalf("rejected fenced %v already_committed %v; want 1, 1", f, m)
	}
}

// TestExpiryScopeOwned: two stores (as two aggregator processes) on one
// server each count the expiries of the partitions they own, and a store
// stops counting a partition once it is fenced from it.
func TestExpiryScopeOwned(t *testing.T) {
	s := redistest.Start(t)
	const ttl = 50 * time.Millisecond
	a := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatCompact, IdleTTL: ttl})
	b := newRedisStore(t, s.Client, state.RedisConfig{KeyPrefix: "cr:", KeyFormat: state.KeyFormatCompact, IdleTTL: ttl})
	p0, p1 := state.Partition{Topic: "obs", ID: 0}, state.Partition{Topic: "obs", ID: 1}
	write := func(st *state.Redis, p state.Partition, epoch, from, to int64, n int) error {
		var w []state.Write
		for i := 0; i < n; i++ {
			w = append(w, state.Write{Object: fmt.Sprint("o", i), Value: []byte("v")})
		}
		return st.Commit(ctx, p, epoch, from, to, w)
	}
	for _, c := range []struct {
		st *state.Redis
		p  state.Partition
		n  int
	}{{a, p0, 3}, {b, p1, 5}} {
		if _, err := c.st.Claim(ctx, c.p, 1); err != nil {
			t.Fatal(err)
		}
		if err := write(c.st, c.p, 1, -1, 0, c.n); err != nil {
			t.Fatal(err)
		}
	}
	if na, nb := waitExpired(t, a, 3), waitExpired(t, b, 5); na != 3 || nb != 5 {
		t.Fatalf("expired a=%d b=%d; want 3, 5", na, nb)
	}
	// p0 moves to b; a learns it at its next commit.
	if _, err := b.Claim(ctx, p0, 2); err != nil {
		t.Fatal(err)
	}
	if err := write(a, p0, 1, 0, 1, 1); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("commit of the old owner = %v; want ErrFenced", err)
	}
	if err := write(b, p0, 2, 0, 1, 7); err != nil {
		t.Fatal(err)
	}
	if nb := waitExpired(t, b, 12); nb != 12 {
		t.Fatalf("expired b=%d; want 12", nb)
	}
	// Let any late notification arrive (the keys are gone: DBSIZE counts the
	// two meta hashes only) before checking that a did not count p0's.
	for s.Client.DBSize(ctx).Val() != 2 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if na := a.Expired(); na != 3 {
		t.Fatalf("expired a=%d after losing p0; want 3", na)
	}
}

// TestEvictionWarning: NewRedis warns when Redis may evict state keys.
func TestEvictionWarning(t *testing.T) {
	s := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	var buf bytes.Buffer
	r, err := state.NewRedisFromClient(s.Client, state.RedisConfig{}, slog.New(slog.NewTextHandler(&buf, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !strings.Contains(buf.String(), "noeviction") || !strings.Contains(buf.String(), "allkeys-lru") {
		t.Fatalf("no eviction warning in log: %q", buf.String())
	}
}

// TestMetricsShared: two stores on one registry share the collectors.
func TestMetricsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := state.NewMemory(state.MemoryConfig{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := state.NewMemory(state.MemoryConfig{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*state.Memory{m1, m2} {
		if _, err := m.Claim(ctx, part, 1); err != nil {
			t.Fatal(err)
		}
		if err := m.Commit(ctx, part, 1, 5, 6, nil); !errors.Is(err, state.ErrOffsetMismatch) {
			t.Fatal(err)
		}
	}
	if got := labeledCounter(t, reg, "changerate_state_commit_rejected_total", "offset_mismatch"); got != 2 {
		t.Fatalf("shared mismatch counter = %v; want 2", got)
	}
}
