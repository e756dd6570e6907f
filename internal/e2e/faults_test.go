package e2e

// Fault-injection tests of the effectively-once aggregation (issues 6 and
// 11; the workload arrives out of event-time order, see disorder_test.go): the
// real aggregator binary as child processes, real redis-server processes
// (standalone with AOF, and a 3-master Cluster) and the in-process kfake
// broker. Every scenario ends with the whole Redis state (every object value
// and every partition's next offset, read with SCAN + GET/HGETALL, TTLs
// ignored) equal byte for byte to the state of one clean run, and to an
// independent oracle that applies the same observations in process with
// aggregate.Object.Apply, in the order the partitions' reorder buffers
// release them (modelled independently in disorder_test.go; the model is
// checked against the processor in process by TestOracleMatchesProcessor).
//
// Every crash point is checked too: after each kill the state must be
// exactly the oracle's state at the offsets Redis stores (no partial
// batch, no value ahead of or behind its offset). The meta hash's "epoch",
// "pe" and "prev" fields are not compared (see metaVolatile).
//
// The workload has 1,000,000 observations (CHANGERATE_E2E_OBSERVATIONS=n
// for another size, at least 10,000); CHANGERATE_E2E_SEED changes the workload and the
// fault points. The tests are skipped with -short.
//
//	go test -race -run 'TestFaults|TestPoison|TestGroup' -v ./internal/e2e/
//	CHANGERATE_E2E_OBSERVATIONS=200000 go test -race -run 'TestFaults$' -v ./internal/e2e/

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/records"
)

const (
	obsTopic      = "observations"
	obsPartitions = 8
	// faultSeed seeds the workload and the fault points; override with
	// CHANGERATE_E2E_SEED to explore other schedules.
	faultSeed = 20261121
)

func seedFromEnv() uint64 {
	if s := os.Getenv("CHANGERATE_E2E_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return v
		}
	}
	return faultSeed
}

// fixture is what the scenarios of TestFaults share: one kfake broker with
// the observations topic, the workload, and the clean run's state.
type fixture struct {
	aggBin string
	kc     *kafkatest.Cluster
	w      *workload
	place  map[int32][]placed // per partition, in offset order
	hw     map[int32]int64
	total  int64
	seed   uint64

	ref    dump                 // state of the clean run
	refEst map[string]string    // the clean run's latest estimate per key
	bounds map[string]estBounds // per object: what its latest estimates must reflect (dueBounds)
}

// placed is where one observation of a workload went.
type placed struct {
	off int64 // offset in its partition
	idx int   // index in the workload
}

// produceTracked produces the workload into topic (keyed by object), with
// the records extra(i) before observation i (nil: none), and returns where
// each observation went.
func produceTracked(t *testing.T, kc *kafkatest.Cluster, topic string, w *workload, extra func(i int) []*kgo.Record) map[int32][]placed {
	t.Helper()
	cl := kc.Client(t, kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(50000))
	type rec struct {
		r   *kgo.Record
		idx int // -1: an extra record
	}
	var all []rec
	for i := range w.Values {
		if extra != nil {
			for _, x := range extra(i) {
				all = append(all, rec{x, -1})
			}
		}
		all = append(all, rec{&kgo.Record{Topic: topic, Key: []byte(w.Obs[i].Object), Value: w.Values[i]}, i})
	}
	// Records above 512 KiB go alone through a client allowing 16 MiB
	// batches (for topics with a larger max.message.bytes); chunks are
	// acknowledged in order, so each partition keeps the input order.
	var big *kgo.Client
	var chunk []*kgo.Record
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		if err := cl.ProduceSync(context.Background(), chunk...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		chunk = chunk[:0]
	}
	for _, r := range all {
		if len(r.r.Value) > 512<<10 {
			flush()
			if big == nil {
				big = kc.Client(t, kgo.ProducerBatchMaxBytes(16<<20))
			}
			if err := big.ProduceSync(context.Background(), r.r).FirstErr(); err != nil {
				t.Fatalf("produce %d bytes: %v", len(r.r.Value), err)
			}
			continue
		}
		chunk = append(chunk, r.r)
		if len(chunk) == 20000 {
			flush()
		}
	}
	flush()
	place := map[int32][]placed{}
	for _, r := range all {
		if r.idx >= 0 {
			place[r.r.Partition] = append(place[r.r.Partition], placed{r.r.Offset, r.idx})
		}
	}
	for _, l := range place {
		sort.Slice(l, func(i, j int) bool { return l[i].off < l[j].off })
	}
	return place
}

// oracle returns the state that applying, per partition p, the
// observations at offsets below next[p] gives: the objects' encoded values
// (aggregate.Object.AppendBinary after Apply of each observation in the
// order the partition's reorder buffer releases them, with the tests'
// model), the partition's site profiles and alert book (aggregate.Detector,
// which applies them as the Processor does), each partition's meta and its
// reorder-buffer position.
func oracle(w *workload, topic string, place map[int32][]placed, next map[int32]int64) dump {
	m := aggregate.DefaultModel()
	m.EmitInterval, m.ReportPeriod = emitInterval, reportPeriod
	var eff aggregate.Effects
	d := dump{}
	for p, n := range next {
		d[metaKey(topic, p)] = "hash:next=" + strconv.FormatInt(n, 10) + ",owner=" + metaOwner(topic, p)
		objs := map[string]*aggregate.Object{}
		touched := map[string]bool{}
		// The partition's reorder buffer decides the order (disorder_test.go).
		times, offs := make([]int64, len(place[p])), make([]int64, len(place[p]))
		for i, x := range place[p] {
			times[i], offs[i] = w.Obs[x.idx].Time.UnixMilli(), x.off
		}
		rm := modelReorder(times, offs, n, aggregate.DefaultConfig().ReorderWindow)
		if rm.seen {
			d[objectKey(topic, p, aggregate.ReorderObject)] = string(aggregate.ReorderPosition(rm.latest, rm.wm, rm.earliest))
		}
		det := aggregate.NewDetector(&m)
		for _, i := range rm.order {
			x := place[p][i]
			o := &w.Obs[x.idx]
			ob := objs[o.Object]
			if ob == nil {
				ob = &aggregate.Object{}
				objs[o.Object] = ob
			}
			host := aggregate.Site(o.Object)
			eff.Reset()
			if oc := det.Apply(o.Object, ob, o, &eff); oc != aggregate.Duplicate && oc != aggregate.Late {
				touched[o.Object] = true
			}
			if eff.Accesses || eff.Visits {
				touched[aggregate.SiteKeyPrefix+host] = true
			}
		}
		for k := range touched {
			if host, ok := strings.CutPrefix(k, aggregate.SiteKeyPrefix); ok {
				d[objectKey(topic, p, k)] = string(det.Site(host).AppendBinary(nil))
			}
		}
		if n > 0 { // every committed batch writes the alert book
			d[objectKey(topic, p, aggregate.AlertsKey)] = string(det.AlertBook())
		}
		for name, ob := range objs {
			if touched[name] {
				d[objectKey(topic, p, name)] = string(ob.AppendBinary(nil))
			}
		}
	}
	return d
}

// metaNext reads the partitions' next offsets from a dump.
func metaNext(t *testing.T, d dump, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		v, ok := d[metaKey(topic, p)]
		if !ok {
			continue
		}
		for _, f := range strings.Split(strings.TrimPrefix(v, "hash:"), ",") {
			if n, ok := strings.CutPrefix(f, "next="); ok {
				x, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					t.Fatalf("meta of partition %d: %q", p, v)
				}
				out[p] = x
			}
		}
	}
	return out
}

// checkConsistent fails t unless d is exactly the state of the offsets it
// stores: no partial batch, no value ahead of or behind its offset.
func (f *fixture) checkConsistent(t *testing.T, what string, d dump) map[int32]int64 {
	t.Helper()
	next := metaNext(t, d, obsTopic, obsPartitions)
	want := oracle(f.w, obsTopic, f.place, next)
	for p := int32(0); p < obsPartitions; p++ {
		// A partition claimed (epoch stored) before its first commit.
		k, claimed := metaKey(obsTopic, p), "hash:owner="+metaOwner(obsTopic, p)
		if _, ok := next[p]; !ok && d[k] == claimed {
			want[k] = claimed
		}
	}
	compareDumps(t, what+" (oracle at the stored offsets)", want, d)
	return next
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, aggBin := buildBinaries(t)
	f := &fixture{aggBin: aggBin, seed: seedFromEnv()}
	t0 := time.Now()
	f.w = genWorkload(f.seed, workloadSize())
	disorder(f.w, f.seed)
	t.Logf("workload: %d observations of %d objects (seed %d), generated in %v", len(f.w.Obs), len(f.w.Objects), f.seed, time.Since(t0).Round(time.Millisecond))
	f.kc = kafkatest.Start(t, kafkatest.Topic{Name: obsTopic, Partitions: obsPartitions})
	t0 = time.Now()
	f.place = produceTracked(t, f.kc, obsTopic, f.w, nil)
	f.hw = highWatermarks(t, f.kc, obsTopic)
	for p, e := range f.hw {
		f.total += e
		if l := f.place[p]; int(e) != len(l) || (e > 0 && (l[0].off != 0 || l[len(l)-1].off != e-1)) {
			t.Fatalf("partition %d: high watermark %d, produced %d", p, e, len(f.place[p]))
		}
	}
	t.Logf("produced into %d partitions in %v; high watermarks %v", obsPartitions, time.Since(t0).Round(time.Millisecond), f.hw)
	return f
}

// cleanRun runs one aggregator on a fresh Redis from start to end and
// keeps its state and estimates as the reference.
func (f *fixture) cleanRun(t *testing.T) {
	rds := redistest.Start(t)
	checkLayout(t, rds.Client, obsTopic)
	outputTopics(t, f.kc, "-ref")
	t0 := time.Now()
	a := startAgg(t, f.aggBin, "clean", aggEnv(f.kc.Addr(), rds.Addr, "clean", "-ref"))
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 10*time.Minute, a)
	el := time.Since(t0)
	m := a.metrics("changerate_")
	a.terminate(30 * time.Second)
	f.ref = dumpRedis(t, rds.Client)
	objs, metas, bytes := dumpStats(f.ref)
	t.Logf("clean run: %d observations in %v (%.0f obs/s incl. start-up), %d objects, %d partition metas, %d value bytes; committed %v, fenced %v; %s",
		f.total, el.Round(time.Millisecond), float64(f.total)/el.Seconds(), objs, metas, bytes,
		metricSum(m, "changerate_aggregator_messages_committed_total"), metricSum(m, "changerate_aggregator_fenced_commits_total"), cuts(m))
	// besides the objects, one seasonal profile per site and partition
	want := oracle(f.w, obsTopic, f.place, f.hw)
	wantObjs, _, _ := dumpStats(want)
	if objs != wantObjs || objs < len(f.w.Objects) || metas != obsPartitions {
		t.Fatalf("clean run stored %d objects and site profiles and %d metas, want %d (%d objects) and %d", objs, metas, wantObjs, len(f.w.Objects), obsPartitions)
	}
	// The clean run equals the in-process oracle: the comparisons below
	// check against both.
	compareDumps(t, "clean run vs oracle", want, f.ref)
	f.refEst = readLatest(t, f.kc, "estimates-ref")
	f.bounds = dueBounds(f.w, f.place, f.hw)
	checkLatestEstimates(t, "clean run", f.bounds, f.refEst)
}

// readLatest reads a topic to its high watermarks and returns the last
// value per key (kafkatest.ReadAll allows only 30 s, too little for the
// full-size workload's outputs under -race).
func readLatest(t *testing.T, kc *kafkatest.Cluster, topic string) map[string]string {
	t.Helper()
	bounds := kc.Offsets(t, topic)
	parts := map[int32]kgo.Offset{}
	want := int64(0)
	for p, b := range bounds {
		if b.End > b.Start {
			parts[p] = kgo.NewOffset().At(b.Start)
			want += b.End - b.Start
		}
	}
	m := map[string]string{}
	if want == 0 {
		return m
	}
	cl := kc.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var got int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, got, want, ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("read %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < bounds[r.Partition].End {
				got++
				m[string(r.Key)] = string(r.Value)
			}
		})
	}
	return m
}

// progressOf returns the messages covered by the stored offsets (0 while
// Redis does not answer).
func progressOf(c redis.UniversalClient) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	next, err := redisNext(ctx, c, obsTopic, obsPartitions)
	if err != nil {
		return 0
	}
	return progress(next)
}

// waitProgress waits until the stored offsets cover at least target
// messages.
func waitProgress(t *testing.T, c redis.UniversalClient, target int64, timeout time.Duration, procs ...*aggProc) int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p := progressOf(c)
		if p >= target {
			return p
		}
		for _, a := range procs {
			if a.exited() {
				t.Fatalf("%s exited (%v) at progress %d, waiting for %d\n%s", a.name, a.waitErr, p, target, a.log.String())
			}
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, a := range procs {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", a.name, a.log.String())
			}
			t.Fatalf("progress %d, want %d within %v\n%s", p, target, timeout, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFaults runs the fault scenarios of issue 6 on one shared workload.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end fault tests")
	}
	t.Parallel() // its own broker, Redis and processes
	f := newFixture(t)
	f.cleanRun(t)
	if t.Failed() {
		return
	}
	t.Run("KillAggregator", f.testKillAggregator)
	t.Run("ScaleOut", f.testScaleOut)
	t.Run("PausedMemberFenced", f.testPaused)
	t.Run("KillRedisAOF", f.testKillRedis)
	t.Run("RedisRewindIdle", f.testRedisRewindIdle)
	t.Run("RedisCluster", f.testCluster)
}

// finish waits for the replay to end, stops the processes with SIGTERM
// and compares the final state with the clean run.
func (f *fixture) finish(t *testing.T, c redis.UniversalClient, procs ...*aggProc) dump {
	t.Helper()
	waitCaughtUp(t, c, obsTopic, f.hw, 10*time.Minute, procs...)
	for _, a := range procs {
		if !a.exited() {
			a.terminate(30 * time.Second)
		}
	}
	d := dumpRedis(t, c)
	compareDumps(t, "final state", f.ref, d)
	return d
}

// 1. kill -9 of the aggregator at seeded random points of the replay,
// restarting it each time.
func (f *fixture) testKillAggregator(t *testing.T) {
	const kills = 6
	rng := rand.New(rand.NewPCG(f.seed, 1))
	rds := redistest.Start(t)
	outputTopics(t, f.kc, "-kill")
	env := aggEnv(f.kc.Addr(), rds.Addr, "kill", "-kill")
	t0 := time.Now()
	var gens []int64
	midReplay := 0
	for i := 0; i < kills; i++ {
		a := startAgg(t, f.aggBin, fmt.Sprintf("kill-%d", i), env)
		// Kill i lands in the i-th sixth of the first 80% of the replay,
		// then after a random 0–40 ms (mid-batch, mid-commit, mid-join).
		target := int64((float64(i) + rng.Float64()) / kills * 0.8 * float64(f.total))
		at := waitProgress(t, rds.Client, target, 5*time.Minute, a)
		time.Sleep(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		a.kill9()
		d := dumpRedis(t, rds.Client)
		next := f.checkConsistent(t, fmt.Sprintf("after kill %d", i+1), d)
		ep := epochs(t, rds.Client, obsTopic, obsPartitions)
		var maxEp int64
		for _, e := range ep {
			maxEp = max(maxEp, e)
		}
		gens = append(gens, maxEp)
		t.Logf("kill -9 #%d at stored progress %d (target %d), state consistent at %d; epochs %v", i+1, at, target, progress(next), ep)
		if progress(next) < f.total {
			midReplay++
		}
	}
	if midReplay < 5 {
		t.Errorf("only %d of %d kills landed before the end of the replay", midReplay, kills)
	}
	last := startAgg(t, f.aggBin, "kill-final", env)
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 10*time.Minute, last)
	m := last.metrics("changerate_")
	f.finish(t, rds.Client, last)
	t.Logf("%d kills, replay finished in %v; last process: committed %v, fenced commits %v, state rejections %v; epochs over time %v",
		kills, time.Since(t0).Round(time.Millisecond), metricSum(m, "changerate_aggregator_messages_committed_total"),
		metricSum(m, "changerate_aggregator_fenced_commits_total"), metricSum(m, "changerate_state_commit_rejected_total"), gens)
}

var committedRE = regexp.MustCompile(`msg="aggregator stopped" committed=(\d+)`)

// committedAtExit parses the count of committed messages an aggregator
// logs when it stops (LOG_LEVEL=info).
func committedAtExit(t *testing.T, a *aggProc) int64 {
	t.Helper()
	m := committedRE.FindStringSubmatch(a.log.String())
	if m == nil {
		t.Fatalf("%s logged no \"aggregator stopped\" line:\n%s", a.name, a.log.String())
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// translate returns the clean run's state as it would be stored for topic
// instead of the observations topic (same partitioning: same keys, same
// partition count).
func (f *fixture) translate(topic string) dump {
	keys := map[string]string{}
	for p, l := range f.place {
		keys[metaKey(obsTopic, p)] = metaKey(topic, p)
		keys[objectKey(obsTopic, p, aggregate.ReorderObject)] = objectKey(topic, p, aggregate.ReorderObject)
		keys[objectKey(obsTopic, p, aggregate.AlertsKey)] = objectKey(topic, p, aggregate.AlertsKey)
		for _, x := range l {
			o := &f.w.Obs[x.idx]
			keys[objectKey(obsTopic, p, o.Object)] = objectKey(topic, p, o.Object)
			site := aggregate.Site(o.Object) // the partition's seasonal profile of the site
			keys[objectKey(obsTopic, p, aggregate.SiteKeyPrefix+site)] = objectKey(topic, p, aggregate.SiteKeyPrefix+site)
		}
	}
	out := dump{}
	for k, v := range f.ref {
		nk, ok := keys[k]
		if !ok {
			nk = "untranslated:" + k
		}
		out[nk] = strings.Replace(v, "owner="+keyPrefix+obsTopic+":", "owner="+keyPrefix+topic+":", 1)
	}
	return out
}

// 2. scaling 1 → 3 → 1 during the replay. The workload is produced in ten
// slices into a topic of its own while the aggregators run, so that the
// scale-out and the scale-in happen mid-stream however fast they are.
func (f *fixture) testScaleOut(t *testing.T) {
	const topic = "obs-scale"
	f.kc.CreateTopic(t, topic, obsPartitions)
	rds := redistest.Start(t)
	outputTopics(t, f.kc, "-scale")
	env := aggEnv(f.kc.Addr(), rds.Addr, "scale", "-scale", "CHANGERATE_LOG_LEVEL=info",
		"CHANGERATE_OBSERVATIONS_TOPIC="+topic)
	const slices = 10
	place := map[int32][]placed{}
	produced := 0
	produceSlice := func() map[int32]int64 {
		k := produced
		lo, hi := k*len(f.w.Obs)/slices, (k+1)*len(f.w.Obs)/slices
		part := &workload{Obs: f.w.Obs[lo:hi], Values: f.w.Values[lo:hi]}
		for p, l := range produceTracked(t, f.kc, topic, part, nil) {
			for _, x := range l {
				place[p] = append(place[p], placed{x.off, x.idx + lo})
			}
		}
		produced++
		return highWatermarks(t, f.kc, topic)
	}
	const committed = "changerate_aggregator_messages_committed_total"
	t0 := time.Now()
	a := startAgg(t, f.aggBin, "scale-a", env)
	produceSlice()
	hw := produceSlice()
	waitCaughtUp(t, rds.Client, topic, hw, 5*time.Minute, a)
	// 1 → 3: both newcomers must own partitions and commit.
	b := startAgg(t, f.aggBin, "scale-b", env)
	c := startAgg(t, f.aggBin, "scale-c", env)
	for metricSum(b.metrics(committed), committed) < 1 || metricSum(c.metrics(committed), committed) < 1 {
		if produced == slices-2 {
			t.Fatalf("b and c committed nothing during %d slices\n%s\n%s", produced-2, b.log.String(), c.log.String())
		}
		hw = produceSlice()
		waitCaughtUp(t, rds.Client, topic, hw, 5*time.Minute, a, b, c)
	}
	at3 := produced
	hw = produceSlice()
	// 3 → 1 while the three process the new slice.
	var wg sync.WaitGroup
	for _, x := range []*aggProc{b, c} {
		wg.Add(1)
		go func() { defer wg.Done(); x.signal(syscall.SIGTERM); <-x.done }()
	}
	wg.Wait()
	for _, x := range []*aggProc{b, c} {
		if x.waitErr != nil {
			t.Fatalf("%s: exit after SIGTERM: %v\n%s", x.name, x.waitErr, x.log.String())
		}
	}
	at1 := produced
	for produced < slices {
		hw = produceSlice()
	}
	waitCaughtUp(t, rds.Client, topic, hw, 10*time.Minute, a)
	a.terminate(30 * time.Second)
	d := dumpRedis(t, rds.Client)
	compareDumps(t, "final state vs the clean run", f.translate(topic), d)
	compareDumps(t, "final state vs oracle", oracle(f.w, topic, place, hw), d)
	ca, cb, cc := committedAtExit(t, a), committedAtExit(t, b), committedAtExit(t, c)
	t.Logf("1→3 after slice %d of %d, 3→1 during slice %d, done in %v; committed by a %d, b %d, c %d (sum %d, messages %d)",
		at3, slices, at1, time.Since(t0).Round(time.Millisecond), ca, cb, cc, ca+cb+cc, f.total)
	// Each offset range was committed by exactly one process: nothing was
	// applied twice (and nothing skipped).
	if ca+cb+cc != f.total {
		t.Errorf("processes committed %d messages in all, want exactly %d", ca+cb+cc, f.total)
	}
}

// 3. a paused aggregator (SIGSTOP past the session timeout) cannot write
// after its partitions moved.
func (f *fixture) testPaused(t *testing.T) {
	rds := redistest.Start(t)
	outputTopics(t, f.kc, "-pause")
	env := aggEnv(f.kc.Addr(), rds.Addr, "pause", "-pause", "CHANGERATE_BATCH_SIZE=200")
	rng := rand.New(rand.NewPCG(f.seed, 3))
	a := startAgg(t, f.aggBin, "pause-a", env)
	b := startAgg(t, f.aggBin, "pause-b", env)
	const committed = "changerate_aggregator_messages_committed_total"
	var fencedA, rejectedA float64
	var cycles int
	for cycles = 1; cycles <= 3 && fencedA == 0; cycles++ {
		// Both members must be committing.
		deadline := time.Now().Add(2 * time.Minute)
		for metricSum(a.metrics(committed), committed) < 1 || metricSum(b.metrics(committed), committed) < 1 {
			if time.Now().After(deadline) || progressOf(rds.Client) >= f.total {
				t.Fatalf("both members did not commit before the replay ended")
			}
			time.Sleep(20 * time.Millisecond)
		}
		epBefore := epochs(t, rds.Client, obsTopic, obsPartitions)
		before := metricSum(a.metrics(committed), committed)
		a.signal(syscall.SIGSTOP)
		pausedAt := progressOf(rds.Client)
		// Past the 3 s session timeout the group gives b every partition
		// in a newer generation, and b claims them (the stored epochs
		// grow); a, frozen, does not know.
		b.waitOwned(obsPartitions, 2*time.Minute)
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
		epPaused := epochs(t, rds.Client, obsTopic, obsPartitions)
		movedAt := progressOf(rds.Client)
		a.signal(syscall.SIGCONT)
		// a resumes inside its in-flight batches: their commits carry the
		// old generation and must be refused.
		time.Sleep(3 * time.Second)
		m := a.metrics("changerate_")
		// The store counts the refused commits (the aggregator's
		// fenced_commits_total has only takeover and rewound).
		fencedA = metricSum(m, "changerate_state_commit_rejected_total")
		rejectedA = fencedA
		t.Logf("pause %d: a had committed %v; progress %d at SIGSTOP, %d at SIGCONT once b owned every partition; epochs %v → %v; a's refused commits: aggregator %v, state %v",
			cycles, before, pausedAt, movedAt, epBefore, epPaused, fencedMetrics(m), rejectedA)
		if movedAt <= pausedAt {
			t.Errorf("pause %d: no progress while a was paused: its partitions did not move", cycles)
		}
	}
	if fencedA == 0 {
		t.Errorf("the paused member had no commit refused in %d pauses", cycles-1)
	}
	f.finish(t, rds.Client, a, b)
}

// fencedMetrics returns the labelled samples of the fenced-commit counter.
func fencedMetrics(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "changerate_aggregator_fenced_commits_total") {
			out[strings.TrimPrefix(k, "changerate_aggregator_fenced_commits_total")] = v
		}
	}
	return out
}

// 4. kill -9 of Redis (AOF everysec) during the replay.
func (f *fixture) testKillRedis(t *testing.T) {
	rng := rand.New(rand.NewPCG(f.seed, 4))
	rds := redistest.Start(t, redistest.WithAOF())
	outputTopics(t, f.kc, "-rkill")
	env := aggEnv(f.kc.Addr(), rds.Addr, "rkill", "-rkill")
	a := startAgg(t, f.aggBin, "rkill", env)
	for i := 0; i < 2; i++ {
		// Both crashes land while every partition has input left (see
		// testRedisRewindIdle for a crash after the replay).
		target := int64((0.15 + 0.25*float64(i) + 0.2*rng.Float64()) * float64(f.total))
		waitProgress(t, rds.Client, target, 5*time.Minute, a)
		var before map[int32]int64
		if i == 0 {
			// Redis dies under the aggregator's writes; the aggregator
			// meets the dead server, then is frozen while Redis restarts,
			// to read the state exactly as the AOF restored it.
			before, _ = redisNext(context.Background(), rds.Client, obsTopic, obsPartitions)
			rds.Kill()
			time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
			a.signal(syscall.SIGSTOP)
		} else {
			// Frozen first, so that the offsets read are the last ones
			// written before the crash.
			a.signal(syscall.SIGSTOP)
			before, _ = redisNext(context.Background(), rds.Client, obsTopic, obsPartitions)
			rds.Kill()
		}
		cut := ""
		if i == 1 {
			// The second crash also loses the AOF's tail, as an OS crash
			// loses what was written but not fsynced: the cut may fall
			// inside a commit's MULTI/EXEC block.
			aof := incrAOFFile(t, rds.Dir)
			fi, err := os.Stat(aof)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(float64(fi.Size()) * (0.8 + 0.18*rng.Float64()))
			if err := os.Truncate(aof, n); err != nil {
				t.Fatal(err)
			}
			cut = fmt.Sprintf(" (AOF cut at %d of %d bytes)", n, fi.Size())
		}
		if err := rds.Restart(); err != nil {
			t.Fatal(err)
		}
		d := dumpRedis(t, rds.Client)
		a.signal(syscall.SIGCONT)
		after := f.checkConsistent(t, fmt.Sprintf("after Redis kill %d", i+1), d)
		t.Logf("Redis kill -9 #%d%s: stored offsets just before %v (%d), after the AOF reload %v (%d): state consistent with them",
			i+1, cut, before, progress(before), after, progress(after))
		if i == 1 && progress(after) >= progress(before) {
			t.Errorf("the cut AOF did not rewind the offsets")
		}
	}
	m := a.metrics("changerate_")
	f.finish(t, rds.Client, a)
	t.Logf("aggregator: retries %v, fenced commits %v, state rejections %v, redis errors %v",
		metricSum(m, "changerate_aggregator_retries_total"), metricSum(m, "changerate_aggregator_fenced_commits_total"),
		metricSum(m, "changerate_state_commit_rejected_total"), metricSum(m, "changerate_state_redis_errors_total"))
}

// 4b. Redis loses the tail of its AOF after the replay has ended: the
// partitions whose last commits were lost get no further input, so no
// commit of theirs is refused and nothing tells the aggregator that Redis
// went back in time until an idle partition checks the stored offset
// against its last commit (aggregate Config.IdleCheck) and reloads: the
// replay then restores the clean state.
func (f *fixture) testRedisRewindIdle(t *testing.T) {
	rds := redistest.Start(t, redistest.WithAOF())
	outputTopics(t, f.kc, "-ridle")
	a := startAgg(t, f.aggBin, "ridle", aggEnv(f.kc.Addr(), rds.Addr, "ridle", "-ridle"))
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 10*time.Minute, a)
	time.Sleep(1500 * time.Millisecond) // the AOF is flushed (everysec)
	a.signal(syscall.SIGSTOP)
	rds.Kill()
	aof := incrAOFFile(t, rds.Dir)
	fi, err := os.Stat(aof)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(aof, fi.Size()*95/100); err != nil {
		t.Fatal(err)
	}
	if err := rds.Restart(); err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGCONT)
	d := dumpRedis(t, rds.Client)
	next := f.checkConsistent(t, "after the AOF tail was lost", d)
	t.Logf("after the replay, Redis lost 5%% of its AOF: stored offsets %v (%d of %d); the aggregator must replay the rest",
		next, progress(next), f.total)
	if progress(next) >= f.total {
		t.Fatalf("cutting the AOF lost no commit")
	}
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 90*time.Second, a)
	f.finish(t, rds.Client, a)
}

// incrAOFFile returns the incremental file of Redis 7's multi-part AOF (or
// the single appendonly.aof of older versions).
func incrAOFFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if len(m) == 1 {
		return m[0]
	}
	if p := filepath.Join(dir, "appendonly.aof"); fileExistsE2E(p) {
		return p
	}
	t.Fatalf("no AOF in %s (%v)", dir, m)
	return ""
}

func fileExistsE2E(p string) bool { _, err := os.Stat(p); return err == nil }

// 5. a local Redis Cluster of 3 masters. Its batches of 3,000 messages (the
// clean run's: 5,000, each cut at the end of a fetch of 1 MiB) end at other
// offsets than the clean run's: the state must still be byte-identical,
// the latest estimates need not be (estimates_check_test.go).
func (f *fixture) testCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	outputTopics(t, f.kc, "-cluster")
	env := aggEnv(f.kc.Addr(), strings.Join(cl.Addrs, ","), "cluster", "-cluster", "CHANGERATE_REDIS_CLUSTER=true",
		"CHANGERATE_BATCH_SIZE=3000")
	t0 := time.Now()
	a := startAgg(t, f.aggBin, "cluster", env)
	waitCaughtUp(t, cl.Client, obsTopic, f.hw, 10*time.Minute, a)
	m := a.metrics("changerate_")
	d := f.finish(t, cl.Client, a)
	// The partitions' keys are spread over the masters.
	nodes := map[string]int{}
	for p := int32(0); p < obsPartitions; p++ {
		n, err := cl.Client.MasterForKey(context.Background(), metaKey(obsTopic, p))
		if err != nil {
			t.Fatal(err)
		}
		nodes[n.Options().Addr]++
	}
	objs, _, _ := dumpStats(d)
	t.Logf("cluster run in %v: %d objects; partitions per master %v; %s", time.Since(t0).Round(time.Millisecond), objs, nodes, cuts(m))
	if len(nodes) < 2 {
		t.Errorf("all partitions on one master: %v", nodes)
	}
	// The published estimates are what the input promises whatever the
	// cuts (checkLatestEstimates), and are right.
	est := readLatest(t, f.kc, "estimates-cluster")
	checkLatestEstimates(t, "cluster run", f.bounds, est)
	same := 0
	for k, v := range est {
		if f.refEst[k] == v {
			same++
		}
	}
	t.Logf("latest estimates: %d keys, clean run %d; %d byte-identical to the clean run's (batches cut elsewhere)", len(est), len(f.refEst), same)
	checkEstimates(t, f.w, est)
}

// cuts describes how a run cut its input (from its metrics): the batches,
// the consumer-group generations and the messages read (a new generation
// re-reads from the reorder buffer's earliest held offset and cuts its
// later batches elsewhere).
func cuts(m map[string]float64) string {
	return fmt.Sprintf("%v batches, %v generations, %v messages read", metricSum(m, "changerate_aggregator_batch_messages_count"),
		metricSum(m, "changerate_kafka_group_generations_total"), metricSum(m, "changerate_kafka_messages_read_total"))
}

// checkEstimates compares the latest change and access estimates with the
// rates the workload was generated with.
func checkEstimates(t *testing.T, w *workload, est map[string]string) {
	t.Helper()
	var changeErr, accessErr []float64
	covered, n := 0, 0
	for _, o := range w.Objects {
		v, ok := est[o.URL]
		if !ok {
			continue
		}
		var e records.Estimate
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			t.Fatal(err)
		}
		if e.RatePerS == nil || e.CI95 == nil {
			continue
		}
		n++
		if e.CI95[0] <= o.ChangeRate && o.ChangeRate <= e.CI95[1] {
			covered++
		}
		changeErr = append(changeErr, math.Abs(math.Log(*e.RatePerS/o.ChangeRate)))
		if av, ok := est[o.URL+aggregate.AccessKeySuffix]; ok {
			var a records.Estimate
			if err := json.Unmarshal([]byte(av), &a); err != nil {
				t.Fatal(err)
			}
			if a.RatePerS != nil {
				accessErr = append(accessErr, math.Abs(math.Log(*a.RatePerS/o.AccessRate)))
			}
		}
	}
	if n < len(w.Objects)*9/10 || len(changeErr) == 0 || len(accessErr) == 0 {
		t.Fatalf("only %d change estimates with intervals and %d access estimates for %d objects", n, len(accessErr), len(w.Objects))
	}
	sort.Float64s(changeErr)
	sort.Float64s(accessErr)
	t.Logf("%d change estimates: %d (%.1f%%) 95%% intervals cover the true rate; median |log(est/true)| change %.3f, access %.3f (%d)",
		n, covered, 100*float64(covered)/float64(n), changeErr[n/2], accessErr[len(accessErr)/2], len(accessErr))
	if float64(covered) < 0.85*float64(n) {
		t.Errorf("only %d of %d 95%% intervals cover the true change rate", covered, n)
	}
	if changeErr[n/2] > 0.3 || accessErr[len(accessErr)/2] > 0.2 {
		t.Errorf("median |log(estimate/true)|: change %.3f (want < 0.3), access %.3f (want < 0.2)", changeErr[n/2], accessErr[len(accessErr)/2])
	}
}
