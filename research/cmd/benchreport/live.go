package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/records"
)

// The live-crawl shape: a crawler visits each of 100,000 URLs
// about once a day, so every observation publishes a new estimate (the
// visits of one object are a day apart in event time, far beyond the
// default EMIT_INTERVAL of 10 minutes). It runs with three separate
// processes, each measured on its own: a kfake broker (this program
// re-executed with -broker-child), redis-server, and the aggregator binary
// in service mode with its default configuration. The observations are
// produced before the aggregator starts (the producer is not measured);
// kcat reads the same topic from the same broker for comparison.

const liveTopic = "observations-live"

// brokerChild runs a kfake broker for the live runs: it prints its address
// on stdout and serves until stdin is closed. With BENCH_BROKER_CPUPROFILE
// set to a file name it writes a CPU profile of its whole life there (how
// kfake's memFS copies were found, docs/upstream/kfake-memfs-copy.md).
func brokerChild(args []string) {
	parts := 12
	if len(args) > 0 {
		parts, _ = strconv.Atoi(args[0])
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("benchreport-live"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond), kfake.SeedTopics(int32(parts), liveTopic),
		kfake.DefaultNumPartitions(parts))
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker-child:", err)
		os.Exit(1)
	}
	fmt.Println(c.ListenAddrs()[0])
	if f := os.Getenv("BENCH_BROKER_CPUPROFILE"); f != "" {
		if pf, err := os.Create(f); err == nil {
			_ = pprof.StartCPUProfile(pf)
			defer pprof.StopCPUProfile()
		}
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until EOF
	c.Close()
}

// liveResult is one live-shape run.
type liveResult struct {
	Objects, Observations int
	Visits                int
	ProduceRate           float64
	KcatRate              float64 // observations/s read by kcat from the same broker
	Rate                  float64 // committed observations/s from the first partition claim
	Measured              int64   // observations in the measured interval
	Elapsed               time.Duration
	Estimates             float64
	AggCPU, BrokerCPU     float64 // µs per observation
	RedisCPU              float64
	PeakRSS               int64   // aggregator VmHWM, bytes
	HeapInuse, CacheBytes float64 // at the end: go_memstats_heap_inuse_bytes, changerate_aggregator_cache_bytes
	Cached                float64 // changerate_aggregator_cached_objects, summed over partitions
	// Redis commands of the measured interval (INFO commandstats calls):
	// HSET and EXEC (transaction commits), EVALSHA (claims, sweeps).
	HSETCalls, EXECCalls, EvalCalls int64
	Err                             string
	// The I/O floor measured after the run (floor.go); the kcat read's
	// CPU seconds and the broker's during it.
	Floor                  *floorResult
	kcatCPU, kcatBrokerCPU float64
}

// liveWorkload encodes visits daily crawls of objects URLs, in event-time
// order: each visit a day (± 2 h) after the previous one, with a content
// digest that changes as a Poisson process (mean interval log-uniform in
// 6 h – 30 days).
func liveWorkload(objects, visits int) []message {
	r := rand.New(rand.NewPCG(13, 13))
	type obj struct {
		name, site string
		mean, next float64
		version    int
		offset     float64
	}
	objs := make([]obj, objects)
	for i := range objs {
		o := &objs[i]
		o.site = fmt.Sprintf("news%d.example.org", i%97)
		o.name = fmt.Sprintf("https://%s/section-%d/2026/11/article-%07d.html", o.site, i%13, i)
		o.mean = 6 * 3600 * (1 + r.Float64()*119)
		o.next = r.ExpFloat64() * o.mean
		o.offset = r.Float64() * 86400
	}
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	out := make([]message, 0, objects*visits)
	var slab []byte
	var off int64
	type ev struct {
		t float64
		i int
	}
	day := make([]ev, objects)
	for v := 0; v < visits; v++ {
		// One day of visits in time order: each object at its time of day
		// ± 2 h.
		for i := range objs {
			day[i] = ev{float64(v)*86400 + objs[i].offset + (r.Float64()-0.5)*4*3600, i}
		}
		sort.Slice(day, func(a, b int) bool { return day[a].t < day[b].t })
		for _, d := range day {
			o := &objs[d.i]
			for o.next <= d.t {
				o.version++
				o.next += r.ExpFloat64() * o.mean
			}
			off += 180 + int64(len(o.name))
			obs := records.Observation{Object: o.name, Site: o.site, Time: start.Add(time.Duration(d.t * 1e9)), Kind: records.KindVisit,
				Digest: digest(o.name, o.version), Status: 200, Format: "heritrix", Source: "/data/crawl/crawl.log@2231", Offset: off}
			if cap(slab)-len(slab) < 1024 {
				slab = make([]byte, 0, 1<<20)
			}
			s := len(slab)
			slab = appendJSON(slab, &obs)
			out = append(out, message{key: []byte(obs.Object), value: slab[s:len(slab):len(slab)]})
		}
	}
	return out
}

// liveProcs are the processes of a live run: the broker child and, once
// started, the aggregator binary.
type liveProcs struct {
	broker  *exec.Cmd
	stdin   io.Closer
	addr    string
	agg     *exec.Cmd
	claimed chan time.Time
	http    string
}

// startBroker starts the kfake broker child process.
func startBroker(ctx context.Context, parts int) (*liveProcs, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	lp := &liveProcs{broker: exec.CommandContext(ctx, self, "-broker-child", strconv.Itoa(parts))}
	stdin, err := lp.broker.StdinPipe()
	if err != nil {
		return nil, err
	}
	lp.stdin = stdin
	stdout, err := lp.broker.StdoutPipe()
	if err != nil {
		return nil, err
	}
	lp.broker.Stderr = os.Stderr
	if err := lp.broker.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		lp.close()
		return nil, fmt.Errorf("broker child: %w", err)
	}
	lp.addr = strings.TrimSpace(addr)
	return lp, nil
}

// startAggregator starts the aggregator binary against the broker and
// e's Redis (flushed first), with env added to the defaults.
func (lp *liveProcs) startAggregator(ctx context.Context, e *env, aggBin string, parts int, httpAddr string, env ...string) error {
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return err
	}
	lp.http = httpAddr
	lp.agg = exec.CommandContext(ctx, aggBin)
	lp.agg.Env = append(os.Environ(),
		"CHANGERATE_KAFKA_BROKERS="+lp.addr,
		"CHANGERATE_REDIS_ADDRS="+e.redis.ClientOptions().Addr,
		"CHANGERATE_OBSERVATIONS_TOPIC="+liveTopic,
		"CHANGERATE_KAFKA_GROUP=live",
		"CHANGERATE_HTTP_ADDR="+httpAddr,
		"CHANGERATE_PARTITIONS="+strconv.Itoa(parts),
		"CHANGERATE_KAFKA_SESSION_TIMEOUT=6s",
		"CHANGERATE_LOG_LEVEL=info",
	)
	lp.agg.Env = append(lp.agg.Env, env...)
	// The measurement starts at the first "partition claimed" log line
	// (the consumer-group join before it is left out); warnings and errors
	// are passed on.
	logs, err := lp.agg.StderrPipe()
	if err != nil {
		return err
	}
	lp.claimed = make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.Contains(l, "partition claimed") {
				select {
				case lp.claimed <- time.Now():
				default:
				}
			}
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || !strings.Contains(l, "level=") {
				fmt.Fprintln(os.Stderr, "aggregator:", l)
			}
		}
	}()
	return lp.agg.Start()
}

// waitClaim waits for the aggregator's first partition claim.
func (lp *liveProcs) waitClaim() (time.Time, error) {
	select {
	case t := <-lp.claimed:
		return t, nil
	case <-time.After(time.Minute):
		return time.Time{}, fmt.Errorf("live run: the aggregator claimed no partition within a minute")
	}
}

// metric sums the samples of a metric on the aggregator's /metrics. It
// asks for the page uncompressed: Go's client otherwise accepts gzip, and
// compressing every polled page was about 2 % of the measured aggregator's
// CPU in a live run (perf: compress/flate under promhttp's handler).
func (lp *liveProcs) metric(name string) float64 {
	req, err := http.NewRequest(http.MethodGet, "http://"+lp.http+"/metrics", nil)
	if err != nil {
		return -1
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, name) && len(l) > len(name) && (l[len(name)] == ' ' || l[len(name)] == '{') {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

func (lp *liveProcs) close() {
	if lp.agg != nil && lp.agg.Process != nil {
		_ = lp.agg.Process.Signal(syscall.SIGTERM)
		_ = lp.agg.Wait()
	}
	_ = lp.stdin.Close()
	_ = lp.broker.Wait()
}

const committedMetric = "changerate_aggregator_messages_committed_total"

// runLive runs the live shape once: broker child, fresh Redis database,
// the aggregator binary aggBin.
func runLive(ctx context.Context, e *env, aggBin string, objects, visits, parts int, httpAddr string, env ...string) (liveResult, error) {
	res := liveResult{Objects: objects, Visits: visits}
	msgs := liveWorkload(objects, visits)
	res.Observations = len(msgs)
	lp, err := startBroker(ctx, parts)
	if err != nil {
		return res, err
	}
	defer lp.close()

	// Produce (not measured).
	cl, err := kgo.NewClient(kgo.SeedBrokers(lp.addr), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.MaxBufferedRecords(1<<20), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	for i := range msgs {
		cl.Produce(ctx, &kgo.Record{Topic: liveTopic, Key: msgs[i].key, Value: msgs[i].value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		cl.Close()
		return res, err
	}
	cl.Close()
	res.ProduceRate = float64(len(msgs)) / time.Since(t0).Seconds()
	msgs = nil

	// kcat reads the whole topic from the same broker.
	kc := exec.CommandContext(ctx, "kcat", "-C", "-b", lp.addr, "-t", liveTopic, "-o", "beginning", "-e", "-q", "-f", "%o\n")
	var kout bytes.Buffer
	kc.Stdout = &kout
	t0 = time.Now()
	brkK := procCPU(lp.broker.Process.Pid)
	if err := kc.Run(); err != nil {
		res.Err = fmt.Sprintf("kcat: %v", err)
	} else if n := bytes.Count(kout.Bytes(), []byte{'\n'}); n > 0 {
		res.KcatRate = float64(n) / time.Since(t0).Seconds()
	}
	res.kcatCPU, res.kcatBrokerCPU = childCPU(kc), procCPU(lp.broker.Process.Pid)-brkK

	if err := lp.startAggregator(ctx, e, aggBin, parts, httpAddr, env...); err != nil {
		return res, err
	}
	usedBefore, _ := usedMemory(ctx, e)
	tFirst, err := lp.waitClaim()
	if err != nil {
		return res, err
	}
	aggPid, brkPid := lp.agg.Process.Pid, lp.broker.Process.Pid
	agg0, brk0, red0 := procCPU(aggPid), procCPU(brkPid), e.cpu(ctx).redis
	calls0 := commandCalls(ctx, e)
	deadline := time.Now().Add(10 * time.Minute)
	want := float64(res.Observations)
	for {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("live run: not done after 10 minutes")
		}
		c := lp.metric(committedMetric)
		if c >= want {
			el := time.Since(tFirst)
			res.Measured = int64(c)
			res.Elapsed = el
			res.Rate = float64(res.Measured) / el.Seconds()
			n := float64(res.Measured)
			res.AggCPU = (procCPU(aggPid) - agg0) / n * 1e6
			res.BrokerCPU = (procCPU(brkPid) - brk0) / n * 1e6
			res.RedisCPU = (e.cpu(ctx).redis - red0) / n * 1e6
			calls := commandCalls(ctx, e)
			res.HSETCalls, res.EXECCalls, res.EvalCalls = calls["hset"]-calls0["hset"], calls["exec"]-calls0["exec"], calls["evalsha"]-calls0["evalsha"]
			res.PeakRSS = peakRSS(aggPid)
			res.Estimates = lp.metric("changerate_aggregator_estimates_out_total")
			res.HeapInuse = lp.metric("go_memstats_heap_inuse_bytes")
			res.CacheBytes = lp.metric("changerate_aggregator_cache_bytes")
			res.Cached = lp.metric("changerate_aggregator_cached_objects")
			floorAfterRun(ctx, e, lp, &res, usedBefore)
			return res, nil
		}
		time.Sleep(pollWait(c, want, time.Since(tFirst)))
	}
}

// pollWait is how long runLive waits before its next poll of the
// aggregator's /metrics, having seen done of want observations committed
// after elapsed: half the time the rest should take at the rate so far,
// between 20 ms and 250 ms. Each poll gathers every metric, which costs the
// measured aggregator CPU (about 4 % of it when polled every 20 ms): this
// polls about 15 times in a 2.5 s run instead of 125, and still every
// 20 ms near the end, so the end is seen as precisely.
func pollWait(done, want float64, elapsed time.Duration) time.Duration {
	const lo, hi = 20 * time.Millisecond, 250 * time.Millisecond
	if done <= 0 || elapsed <= 0 {
		return lo * 5
	}
	rest := time.Duration((want - done) / done * float64(elapsed))
	return min(max(rest/2, lo), hi)
}

// runLiveLatency produces daily-crawl visits of objects URLs at rate per
// second for dur from this process (the producer is a separate process
// from the aggregator), each with event time = its produce time, to the
// aggregator binary with EMIT_INTERVAL=0 (every batch publishes the
// estimates of the objects it changed), and measures when they reach a
// consumer of the estimates topic (receive time − as_of). REORDER_WINDOW
// is 0: the reorder buffer would hold every observation for its window of
// event time (a minute by default), which is a chosen delay, not the
// pipeline's. Estimates of the first warm of the run are not counted.
func runLiveLatency(ctx context.Context, e *env, aggBin string, objects, parts int, httpAddr string, rate float64, dur, warm time.Duration, env ...string) (latResult, error) {
	res := latResult{Rate: rate, Duration: dur}
	lp, err := startBroker(ctx, parts)
	if err != nil {
		return res, err
	}
	defer lp.close()
	if err := lp.startAggregator(ctx, e, aggBin, parts, httpAddr, append([]string{"CHANGERATE_EMIT_INTERVAL=0", "CHANGERATE_REORDER_WINDOW=0"}, env...)...); err != nil {
		return res, err
	}
	if _, err := lp.waitClaim(); err != nil {
		return res, err
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(lp.addr), kgo.ConsumeTopics("estimates"), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer cons.Close()
	col := collectLatencies(ctx, cons)
	defer col.stop()
	prod, err := kgo.NewClient(kgo.SeedBrokers(lp.addr), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return res, err
	}
	defer prod.Close()
	// The URLs and their three contents are made before the clock starts:
	// this process shares the machine with the measured ones, and hashing
	// here would take their CPU.
	names := make([]string, objects)
	digests := make([][3]string, objects)
	for i := range names {
		names[i] = fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
		for v := range digests[i] {
			digests[i][v] = digest(names[i], v)
		}
	}
	var perr atomic.Value
	var buf []byte
	var produced int64
	aggPid, brkPid := lp.agg.Process.Pid, lp.broker.Process.Pid
	agg0, brk0, red0, self0 := procCPU(aggPid), procCPU(brkPid), e.cpu(ctx).redis, procCPU(os.Getpid())
	start := time.Now()
	col.from.Store(start.Add(warm).UnixNano())
	tick := time.NewTicker(time.Millisecond)
	for now := start; now.Sub(start) < dur; now = <-tick.C {
		target := int64(rate * now.Sub(start).Seconds())
		for ; produced < target; produced++ {
			i := int(produced % int64(objects))
			at := time.Now().UTC()
			name := names[i]
			obs := records.Observation{Object: name, Time: at, Kind: records.KindVisit, Digest: digests[i][int(produced/int64(objects))%3],
				Status: 200, Format: "heritrix", Source: "/data/crawl/crawl.log@2231", Offset: produced * 200}
			buf = appendJSON(buf[:0], &obs)
			prod.Produce(ctx, &kgo.Record{Topic: liveTopic, Key: []byte(name), Value: bytes.Clone(buf)}, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.CompareAndSwap(nil, err)
				}
			})
		}
	}
	tick.Stop()
	end := time.Now()
	col.to.Store(end.UnixNano())
	if err := prod.Flush(ctx); err != nil {
		return res, err
	}
	if v := perr.Load(); v != nil {
		return res, fmt.Errorf("latency produce: %w", v.(error))
	}
	res.Produced = produced
	res.Achieved = float64(produced) / end.Sub(start).Seconds()
	res.BacklogAtEnd = produced - int64(lp.metric(committedMetric))
	for deadline := time.Now().Add(30 * time.Second); int64(lp.metric(committedMetric)) < produced && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	res.Committed = int64(lp.metric(committedMetric))
	if n := float64(res.Committed); n > 0 {
		res.AggCPU = (procCPU(aggPid) - agg0) / n * 1e6
		res.BrokerCPU = (procCPU(brkPid) - brk0) / n * 1e6
		res.RedisCPU = (e.cpu(ctx).redis - red0) / n * 1e6
		res.SelfCPU = (procCPU(os.Getpid()) - self0) / n * 1e6
	}
	res.PeakRSS = peakRSS(aggPid)
	time.Sleep(500 * time.Millisecond)
	recv, _, total := col.stop()
	res.EstimatesTotal = total
	res.Samples = len(recv)
	res.Recv = percentiles(recv)
	return res, nil
}

// procCPU is the user+system CPU time of pid in seconds (/proc/pid/stat).
func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	s = s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is sysconf(_SC_CLK_TCK), 100 on Linux.
const clockTicks = 100

// peakRSS is pid's VmHWM in bytes.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v)
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n * 1024
		}
	}
	return 0
}
