package e2e

// Harness of the fault-injection tests (faults_test.go): a seeded workload
// of observations produced straight into kfake, aggregator child processes
// that can be killed, paused and terminated, and byte-exact dumps of the
// Redis state.

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
)

// envObservations sets the size of the fault tests' workload (default
// 1,000,000: the whole TestFaults takes about 3 minutes with -race on 2
// cores, the aggregator kill scenario about 40 s of it); e.g. 200000 for a
// quicker run.
const envObservations = "CHANGERATE_E2E_OBSERVATIONS"

// workloadSize is the number of observations of the fault tests.
func workloadSize() int {
	if n, err := strconv.Atoi(os.Getenv(envObservations)); err == nil && n >= 10000 {
		return n
	}
	return 1_000_000
}

// truthObject is one generated object and the rates it was generated with.
type truthObject struct {
	URL                    string
	ChangeRate, AccessRate float64 // per second
	VisitEvery             time.Duration
}

// workload is a seeded stream of observations: visits (with content
// digests that change as a Poisson process) and accesses (a Poisson
// process), for many objects, in time order.
type workload struct {
	Objects []truthObject
	Obs     []records.Observation
	Values  [][]byte // JSON of Obs
}

// genWorkload returns n observations of about n/160 objects over 30 days.
// Objects are visited every 6–24 h; their content changes at a rate
// log-uniform in [1/10 d, 1/12 h] and they are accessed at a rate
// log-uniform in [1/48 h, 1/2 h].
func genWorkload(seed uint64, n int) *workload {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const span = int64(30 * 24 * time.Hour)
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	logUniform := func(lo, hi float64) float64 {
		return math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))
	}
	exp := func(rate float64) int64 { return int64(rng.ExpFloat64() / rate * 1e9) }
	// event is a visit (changes ≥ 0: the content version seen) or an
	// access (changes < 0) of object obj at t ns after start.
	type event struct {
		t       int64
		obj     int32
		changes int32
	}
	w := &workload{}
	var evs []event
	var sites []string
	for i := 0; len(evs) < n+n/5 || i < n/160+1; i++ {
		site := "site" + strconv.Itoa(100 + i%37)[1:] + ".example.org"
		o := truthObject{
			URL:        "http://" + site + "/page/" + strconv.Itoa(1000000 + i)[1:] + ".html",
			ChangeRate: logUniform(1/(10*86400.0), 1/(12*3600.0)),
			AccessRate: logUniform(1/(48*3600.0), 1/(2*3600.0)),
			VisitEvery: time.Duration(6+rng.IntN(19)) * time.Hour,
		}
		w.Objects = append(w.Objects, o)
		sites = append(sites, site)
		var changes []int64
		for t := exp(o.ChangeRate); t < span; t += exp(o.ChangeRate) {
			changes = append(changes, t)
		}
		// Visits at a random phase, with ±10 min jitter.
		every := int64(o.VisitEvery)
		k := 0
		for t := rng.Int64N(every); t < span; t += every {
			vt := max(t+rng.Int64N(int64(20*time.Minute))-int64(10*time.Minute), 0)
			for k < len(changes) && changes[k] <= vt {
				k++
			}
			evs = append(evs, event{vt, int32(i), int32(k)})
		}
		for t := exp(o.AccessRate); t < span; t += exp(o.AccessRate) {
			evs = append(evs, event{t / 1e6 * 1e6, int32(i), -1})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.t, b.t) })
	evs = evs[:n]
	w.Obs = make([]records.Observation, n)
	w.Values = make([][]byte, n)
	tags := make([]string, len(w.Objects))
	for i, o := range w.Objects {
		h := fnv.New64a()
		h.Write([]byte(o.URL))
		tags[i] = "sha1:" + strconv.FormatUint(h.Sum64()|1<<63, 16)
	}
	var buf []byte
	for i, e := range evs {
		o := &w.Obs[i]
		o.Object, o.Site, o.Time, o.Status = w.Objects[e.obj].URL, sites[e.obj], start.Add(time.Duration(e.t)), 200
		if e.changes >= 0 {
			o.Kind, o.Digest, o.Format = records.KindVisit, tags[e.obj]+"-"+strconv.Itoa(int(e.changes)), "heritrix"
		} else {
			o.Kind, o.Format = records.KindAccess, "squid"
		}
		// The JSON of records.Observation, built by hand (encoding/json is
		// slow under -race); checked against DecodeObservation below.
		buf = append(buf[:0], `{"object":"`...)
		buf = append(buf, o.Object...)
		buf = append(buf, `","site":"`...)
		buf = append(buf, o.Site...)
		buf = append(buf, `","time":"`...)
		buf = o.Time.AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, `","kind":"`...)
		buf = append(buf, o.Kind...)
		if o.Digest != "" {
			buf = append(buf, `","digest":"`...)
			buf = append(buf, o.Digest...)
		}
		buf = append(buf, `","status":200,"format":"`...)
		buf = append(buf, o.Format...)
		buf = append(buf, `"}`...)
		w.Values[i] = slices.Clone(buf)
	}
	for i := 0; i < n; i += max(1, n/1000) {
		got, err := records.DecodeObservation(w.Values[i])
		if err != nil || !reflect.DeepEqual(got, w.Obs[i]) {
			panic(fmt.Sprintf("genWorkload: %s decodes to %+v, %v; want %+v", w.Values[i], got, err, w.Obs[i]))
		}
	}
	return w
}

func highWatermarks(t *testing.T, kc *kafkatest.Cluster, topic string) map[int32]int64 {
	t.Helper()
	hw := map[int32]int64{}
	for p, b := range kc.Offsets(t, topic) {
		hw[p] = b.End
	}
	return hw
}

// syncBuffer is a goroutine-safe log buffer that keeps the last 64 KiB.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	if len(s.b) > 1<<16 {
		s.b = append([]byte(nil), s.b[len(s.b)-1<<15:]...)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// aggProc is one aggregator child process.
type aggProc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	log     *syncBuffer
	http    string
	done    chan struct{}
	waitErr error
}

// The publication interval and access reporting period of the tests'
// aggregators (and of the oracle): longer than the defaults (10m, 1h), so
// that the broker holds fewer output records.
const (
	emitInterval = 48 * time.Hour
	reportPeriod = 24 * time.Hour
)

// aggEnv returns the environment of an aggregator of the tests: service
// mode, no topic creation, short sessions, warnings only. extra
// overrides.
func aggEnv(brokers, redisAddrs, group, suffix string, extra ...string) []string {
	env := []string{
		"CHANGERATE_KAFKA_BROKERS=" + brokers,
		"CHANGERATE_REDIS_ADDRS=" + redisAddrs,
		"CHANGERATE_REDIS_REQUIRE_DURABLE=false", // most test servers run without AOF
		"CHANGERATE_KAFKA_GROUP=" + group,
		"CHANGERATE_CREATE_TOPICS=false",
		"CHANGERATE_KAFKA_SESSION_TIMEOUT=3s",
		"CHANGERATE_KAFKA_HEARTBEAT=300ms",
		"CHANGERATE_LOG_LEVEL=warn",
		"CHANGERATE_REDIS_KEY_FORMAT=compact",
		"CHANGERATE_EMIT_INTERVAL=" + emitInterval.String(),
		"CHANGERATE_REPORT_PERIOD=" + reportPeriod.String(),
		"CHANGERATE_ESTIMATES_TOPIC=estimates" + suffix,
		"CHANGERATE_ACCESS_REPORTS_TOPIC=access-reports" + suffix,
		"CHANGERATE_ALERTS_TOPIC=alerts" + suffix,
		"CHANGERATE_DEAD_LETTER_TOPIC=dead-letter" + suffix,
		"CHANGERATE_LATE_TOPIC=late" + suffix,
		// The end of the stream stays in the reorder buffers: the final
		// state is a function of the input alone (the oracle models it).
		"CHANGERATE_IDLE_RELEASE=0s",
	}
	return append(env, extra...)
}

// outputTopics creates the output topics of one run (see aggEnv).
func outputTopics(t *testing.T, kc *kafkatest.Cluster, suffix string) {
	t.Helper()
	kc.CreateTopic(t, "estimates"+suffix, 4, "cleanup.policy", "compact")
	kc.CreateTopic(t, "access-reports"+suffix, 4)
	kc.CreateTopic(t, "alerts"+suffix, 4)
	kc.CreateTopic(t, "dead-letter"+suffix, 1)
	kc.CreateTopic(t, "late"+suffix, 1)
}

// startAgg starts the aggregator binary with env (plus a free HTTP
// address). The process is killed at cleanup if still running.
func startAgg(t *testing.T, bin, name string, env []string) *aggProc {
	t.Helper()
	a := &aggProc{t: t, name: name, log: &syncBuffer{}, http: freeAddr(t), done: make(chan struct{})}
	a.cmd = exec.Command(bin)
	a.cmd.Env = append(append(os.Environ(), env...), "CHANGERATE_HTTP_ADDR="+a.http)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { a.waitErr = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		select {
		case <-a.done:
		default:
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
			_ = a.cmd.Process.Kill()
			<-a.done
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", a.name, a.log.String())
		}
	})
	return a
}

func (a *aggProc) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// kill9 sends SIGKILL and waits for the process to end.
func (a *aggProc) kill9() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// signal sends sig to the process.
func (a *aggProc) signal(sig syscall.Signal) {
	if err := a.cmd.Process.Signal(sig); err != nil {
		a.t.Fatalf("%s: signal %v: %v", a.name, sig, err)
	}
}

// terminate sends SIGTERM and fails the test unless the process exits
// cleanly within timeout.
func (a *aggProc) terminate(timeout time.Duration) {
	a.t.Helper()
	// A process that answers HTTP has installed its SIGTERM handler.
	c := http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(timeout); !a.exited(); time.Sleep(20 * time.Millisecond) {
		if resp, err := c.Get("http://" + a.http + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%s does not answer HTTP\n%s", a.name, a.log.String())
		}
	}
	a.signal(syscall.SIGTERM)
	select {
	case <-a.done:
		if a.waitErr != nil {
			a.t.Fatalf("%s exited with %v after SIGTERM\n%s", a.name, a.waitErr, a.log.String())
		}
	case <-time.After(timeout):
		a.t.Fatalf("%s did not exit within %v of SIGTERM\n%s", a.name, timeout, a.log.String())
	}
}

// metrics returns the samples of the process's /metrics whose name (with
// labels) starts with prefix, or nil if it does not answer.
func (a *aggProc) metrics(prefix string) map[string]float64 {
	return scrape("http://"+a.http+"/metrics", prefix)
}

func scrape(url, prefix string) map[string]float64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// metric returns the sum of the samples of name (any labels) in m.
func metricSum(m map[string]float64, name string) float64 {
	var s float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			s += v
		}
	}
	return s
}

// redisNext returns the stored next offset of every partition (absent:
// none stored).
func redisNext(ctx context.Context, c redis.UniversalClient, topic string, partitions int32) (map[int32]int64, error) {
	out := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		v, err := c.HGet(ctx, metaKey(topic, p), "next").Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, err
		}
		out[p] = n
	}
	return out, nil
}

// progress returns how many messages the stored offsets cover.
func progress(next map[int32]int64) int64 {
	var s int64
	for _, n := range next {
		s += n
	}
	return s
}

// waitCaughtUp waits until Redis stores every partition's high watermark
// as its next offset. It fails the test after timeout, or when every
// process of procs has exited.
func waitCaughtUp(t *testing.T, c redis.UniversalClient, topic string, hw map[int32]int64, timeout time.Duration, procs ...*aggProc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var want int64
	for _, e := range hw {
		want += e
	}
	for {
		next, err := redisNext(context.Background(), c, topic, int32(len(hw)))
		done := err == nil
		for p, e := range hw {
			if next[p] != e {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, a := range procs {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", a.name, a.log.String())
			}
			t.Fatalf("not caught up within %v: stored offsets %v (%d of %d), err %v\n%s", timeout, next, progress(next), want, err, logs.String())
		}
		alive := len(procs) == 0
		for _, a := range procs {
			alive = alive || !a.exited()
		}
		if !alive {
			var logs strings.Builder
			for _, a := range procs {
				fmt.Fprintf(&logs, "--- %s (%v):\n%s\n", a.name, a.waitErr, a.log.String())
			}
			t.Fatalf("every aggregator exited before catching up: offsets %v\n%s", next, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dump is a Redis state: every key's value; hashes as their sorted
// "field=value" lines without the fields of metaVolatile.
type dump map[string]string

// metaVolatile are the fields of a partition's meta hash that depend on
// the history of the consumer group and on where batches started, not on
// the input: "epoch" and "pe" (the owner's and the last commit's
// consumer-group generation) and "prev" (the first offset of the last
// committed batch, kept to recognise a retried commit). The partition's
// offset ("next") and every other field are compared.
var metaVolatile = map[string]bool{"epoch": true, "pe": true, "prev": true}

// dumpRedis reads every key of every master with SCAN and GET/HGETALL.
// TTLs are ignored.
func dumpRedis(t *testing.T, c redis.UniversalClient) dump {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	d := dump{}
	one := func(ctx context.Context, n *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, "*", 2000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				typ, err := n.Type(ctx, k).Result()
				if err != nil {
					return err
				}
				var v string
				switch typ {
				case "string":
					v, err = n.Get(ctx, k).Result()
				case "hash":
					var h map[string]string
					h, err = n.HGetAll(ctx, k).Result()
					var lines []string
					for f, x := range h {
						if !metaVolatile[f] {
							lines = append(lines, f+"="+x)
						}
					}
					sort.Strings(lines)
					v = "hash:" + strings.Join(lines, ",")
				default:
					err = fmt.Errorf("key %q has unexpected type %s", k, typ)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				mu.Lock()
				d[k] = v
				mu.Unlock()
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachMaster(ctx, one)
	case *redis.Client:
		err = one(ctx, cc)
	default:
		t.Fatalf("dumpRedis: client %T", c)
	}
	if err != nil {
		t.Fatalf("dumpRedis: %v", err)
	}
	return d
}

// epochs returns the stored epoch of every partition's meta key.
func epochs(t *testing.T, c redis.UniversalClient, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		v, err := c.HGet(context.Background(), metaKey(topic, p), "epoch").Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[p], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}

// compareDumps fails t if got differs from want, listing a few of the
// differences.
func compareDumps(t *testing.T, what string, want, got dump) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %q", k))
		case g != v:
			diffs = append(diffs, fmt.Sprintf("differs %q: want %q got %q", k, clip(v), clip(g)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %q", k))
		}
	}
	if len(diffs) == 0 {
		return
	}
	sort.Strings(diffs)
	t.Errorf("%s: %d of %d keys differ from the clean run; first ones:\n%s", what, len(diffs), len(want),
		strings.Join(diffs[:min(len(diffs), 10)], "\n"))
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// dumpStats summarises a dump: objects, meta keys and value bytes.
func dumpStats(d dump) (objects, metas, bytes int) {
	for k, v := range d {
		if strings.HasSuffix(k, ":meta") {
			metas++
			continue
		}
		objects++
		bytes += len(v)
	}
	return
}

// owned returns how many partitions the process reports owning on /readyz
// (-1 if it is not ready).
func (a *aggProc) owned() int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + a.http + "/readyz")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "owns ") {
			n++
		}
	}
	return n
}

// waitOwned waits until the process owns n partitions.
func (a *aggProc) waitOwned(n int, timeout time.Duration) {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	for a.owned() != n {
		if a.exited() || time.Now().After(deadline) {
			a.t.Fatalf("%s does not own %d partitions (exited %v: %v)\n%s", a.name, n, a.exited(), a.waitErr, a.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The tests' aggregators use the compact key layout of package state (the
// binary's default, pinned by aggEnv): metaKey and objectKey compute it
// (copied from state.Redis so that pure code such as the oracle needs no
// Redis client), and checkLayout checks the copy against the package.
const keyPrefix = "cr:"

const b64Tag = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func keyTag(topic string, p int32) string {
	h := sha256.Sum256([]byte(keyPrefix + topic))
	tag := []byte{'{', b64Tag[h[0]&63]}
	for id := uint32(p); ; {
		tag = append(tag, b64Tag[id&63])
		if id >>= 6; id == 0 {
			break
		}
	}
	return string(append(tag, '}'))
}

// metaKey is the key of a partition's hash of epoch, next offset, owner.
func metaKey(topic string, p int32) string { return keyTag(topic, p) + ":meta" }

// objectKey is the key of an object's value.
func objectKey(topic string, p int32, object string) string {
	tag := keyTag(topic, p)
	h := sha256.Sum256([]byte(object))
	return tag + string(h[:14-len(tag)])
}

// metaOwner is the meta hash's "owner" field of compact keys.
func metaOwner(topic string, p int32) string { return keyPrefix + topic + ":" + strconv.Itoa(int(p)) }

// checkLayout fails t if metaKey and objectKey differ from package state's.
func checkLayout(t *testing.T, c redis.UniversalClient, topic string) {
	t.Helper()
	r, err := state.NewRedisFromClient(c, state.RedisConfig{KeyPrefix: keyPrefix, KeyFormat: state.KeyFormatCompact,
		ExpiryEvents: state.ExpiryEventsOff}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1, 7, 63, 64, 1000} {
		sp := state.Partition{Topic: topic, ID: p}
		if got, want := metaKey(topic, p), r.MetaKey(sp); got != want {
			t.Fatalf("test key layout out of date: meta key %q, package state %q", got, want)
		}
		if got, want := objectKey(topic, p, "http://x.example/a"), r.ObjectKey(sp, "http://x.example/a"); got != want {
			t.Fatalf("test key layout out of date: object key %q, package state %q", got, want)
		}
	}
}
