package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/records"
)

// The live-crawl shape (issue 13): a crawler visits each of 100,000 URLs
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
// on stdout and serves until stdin is closed.
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
	Err                   string
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

// runLive runs the live shape once: broker child, fresh Redis database,
// the aggregator binary aggBin.
func runLive(ctx context.Context, e *env, aggBin string, objects, visits, parts int, httpAddr string) (liveResult, error) {
	res := liveResult{Objects: objects, Visits: visits}
	msgs := liveWorkload(objects, visits)
	res.Observations = len(msgs)

	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	broker := exec.CommandContext(ctx, self, "-broker-child", strconv.Itoa(parts))
	stdin, err := broker.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := broker.StdoutPipe()
	if err != nil {
		return res, err
	}
	broker.Stderr = os.Stderr
	if err := broker.Start(); err != nil {
		return res, err
	}
	defer func() { _ = stdin.Close(); _ = broker.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return res, fmt.Errorf("broker child: %w", err)
	}
	addr = strings.TrimSpace(addr)

	// Produce (not measured).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
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
	kc := exec.CommandContext(ctx, "kcat", "-C", "-b", addr, "-t", liveTopic, "-o", "beginning", "-e", "-q", "-f", "%o\n")
	var kout bytes.Buffer
	kc.Stdout = &kout
	t0 = time.Now()
	if err := kc.Run(); err != nil {
		res.Err = fmt.Sprintf("kcat: %v", err)
	} else if n := bytes.Count(kout.Bytes(), []byte{'\n'}); n > 0 {
		res.KcatRate = float64(n) / time.Since(t0).Seconds()
	}

	// A fresh Redis database for the aggregator.
	if err := e.rc.FlushAll(ctx).Err(); err != nil {
		return res, err
	}
	agg := exec.CommandContext(ctx, aggBin)
	agg.Env = append(os.Environ(),
		"CHANGERATE_KAFKA_BROKERS="+addr,
		"CHANGERATE_REDIS_ADDRS="+e.redis.ClientOptions().Addr,
		"CHANGERATE_OBSERVATIONS_TOPIC="+liveTopic,
		"CHANGERATE_KAFKA_GROUP=live",
		"CHANGERATE_HTTP_ADDR="+httpAddr,
		"CHANGERATE_PARTITIONS="+strconv.Itoa(parts),
		"CHANGERATE_KAFKA_SESSION_TIMEOUT=6s",
		"CHANGERATE_LOG_LEVEL=info",
	)
	// The measurement starts at the first "partition claimed" log line
	// (the consumer-group join before it is left out); warnings and errors
	// are passed on.
	logs, err := agg.StderrPipe()
	if err != nil {
		return res, err
	}
	claimed := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.Contains(l, "partition claimed") {
				select {
				case claimed <- time.Now():
				default:
				}
			}
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				fmt.Fprintln(os.Stderr, "aggregator:", l)
			}
		}
	}()
	if err := agg.Start(); err != nil {
		return res, err
	}
	defer func() { _ = agg.Process.Signal(syscall.SIGTERM); _ = agg.Wait() }()

	metric := func(name string) float64 {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		var sum float64
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, name) && (len(l) > len(name) && (l[len(name)] == ' ' || l[len(name)] == '{')) {
				f := strings.Fields(l)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				sum += v
			}
		}
		return sum
	}
	const committedM = "changerate_aggregator_messages_committed_total"
	var tFirst time.Time
	select {
	case tFirst = <-claimed:
	case <-time.After(time.Minute):
		return res, fmt.Errorf("live run: the aggregator claimed no partition within a minute")
	}
	agg0, brk0, red0 := procCPU(agg.Process.Pid), procCPU(broker.Process.Pid), e.cpu(ctx).redis
	deadline := time.Now().Add(10 * time.Minute)
	want := float64(res.Observations)
	for {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("live run: not done after 10 minutes")
		}
		c := metric(committedM)
		if c >= want {
			el := time.Since(tFirst)
			res.Measured = int64(c)
			res.Elapsed = el
			res.Rate = float64(res.Measured) / el.Seconds()
			n := float64(res.Measured)
			res.AggCPU = (procCPU(agg.Process.Pid) - agg0) / n * 1e6
			res.BrokerCPU = (procCPU(broker.Process.Pid) - brk0) / n * 1e6
			res.RedisCPU = (e.cpu(ctx).redis - red0) / n * 1e6
			res.PeakRSS = peakRSS(agg.Process.Pid)
			res.Estimates = metric("changerate_aggregator_estimates_out_total")
			res.HeapInuse = metric("go_memstats_heap_inuse_bytes")
			res.CacheBytes = metric("changerate_aggregator_cache_bytes")
			res.Cached = metric("changerate_aggregator_cached_objects")
			return res, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
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
