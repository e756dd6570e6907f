package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/stream"
)

// env is the shared infrastructure of one benchreport process: one
// redis-server child process and one in-process kfake broker.
type env struct {
	linger  time.Duration // KafkaConfig.Linger of the sinks
	fetch   int           // KafkaConfig.FetchMaxBytes of the sources (0: the default)
	buffer  int64         // KafkaConfig.FetchBufferBytes of the sources (0: the default)
	redis   *redistest.Server
	rc      *redis.Client
	kafka   *kfake.Cluster
	brokers []string
	parts   int
}

// outputTopics are the output topic names of one run.
type outputTopics struct{ estimates, reports, alerts, dead string }

func topicsFor(run string) outputTopics {
	return outputTopics{estimates: "estimates-" + run, reports: "access-reports-" + run, alerts: "alerts-" + run, dead: "dead-letter-" + run}
}

func startEnv(parts int, runs []string) (*env, error) {
	// Durable as the aggregator wants it (REDIS_REQUIRE_DURABLE): the
	// AOF, written every event loop and fsynced every second.
	srv, err := redistest.Launch(redistest.WithAOF(), redistest.WithArgs("--maxmemory-policy", "noeviction"))
	if err != nil {
		return nil, err
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ClusterID("benchreport"),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
		kfake.SeedTopics(int32(parts), stream.TopicObservations),
	}
	for _, r := range runs {
		t := topicsFor(r)
		opts = append(opts, kfake.SeedTopics(int32(parts), t.estimates, t.reports, t.alerts), kfake.SeedTopics(1, t.dead),
			kfake.SeedTopics(int32(parts), latencyTopic+"-"+r))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("kfake: %w", err)
	}
	rc := redis.NewClient(srv.ClientOptions())
	return &env{redis: srv, rc: rc, kafka: c, brokers: c.ListenAddrs(), parts: parts}, nil
}

func (e *env) close() {
	_ = e.rc.Close()
	e.closeKafka()
	_ = e.redis.Stop()
}

// closeKafka stops the in-process broker and gives its memory back: it
// keeps every record of every run (the latency runs alone produce
// millions), which the live-crawl runs, with a broker of their own, do not
// need next to their own processes.
func (e *env) closeKafka() {
	if e.kafka == nil {
		return
	}
	e.kafka.Close()
	e.kafka = nil
	debug.FreeOSMemory()
}

func (e *env) kafkaConfig(group string) stream.KafkaConfig {
	return stream.KafkaConfig{Brokers: e.brokers, GroupID: group, ClientID: "benchreport",
		SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, JoinGroupBackoff: 200 * time.Millisecond,
		Linger: e.linger, FetchMaxBytes: e.fetch, FetchBufferBytes: e.buffer}
}

func (e *env) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(e.brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.FetchMaxBytes(64 << 20),
		// Like ingest (stream.KafkaConfig's default): no compression.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	return kgo.NewClient(append(base, opts...)...)
}

// produceAll writes msgs to the observations topic, keyed by object, and
// returns the produce rate.
func (e *env) produceAll(ctx context.Context, msgs []message) (float64, error) {
	cl, err := e.client(kgo.ProducerLinger(5 * time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	var firstErr atomic.Value
	for i := range msgs {
		r := &kgo.Record{Topic: stream.TopicObservations, Key: msgs[i].key, Value: msgs[i].value}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if v := firstErr.Load(); v != nil {
		return 0, fmt.Errorf("produce: %w", v.(error))
	}
	return float64(len(msgs)) / time.Since(start).Seconds(), nil
}

func partitionOf(key string, parts int) int32 {
	ids := make([]int, parts)
	for i := range ids {
		ids[i] = i
	}
	return int32(stream.PartitionOf([]byte(key), ids))
}

// machine describes the host for the report.
type machine struct {
	CPUs       int
	GOMAXPROCS int
	CPUModel   string
	GoVersion  string
	Redis      string
	LoadBefore string
	LoadAfter  string
	Kernel     string
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), LoadBefore: loadavg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					m.CPUModel = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.CPUModel = fmt.Sprintf("%s (nproc %s)", m.CPUModel, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		m.Redis = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// samples returns the samples of the metric name in reg whose labels
// include every (name, value) pair of labels.
func samples(reg *prometheus.Registry, name string, labels ...string) []*dto.Metric {
	mfs, err := reg.Gather()
	if err != nil {
		return nil
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// value sums the samples of the counter or gauge name (all label values matching
// labels) in reg.
func value(reg *prometheus.Registry, name string, labels ...string) float64 {
	var sum float64
	for _, m := range samples(reg, name, labels...) {
		if c := m.GetCounter(); c != nil {
			sum += c.GetValue()
		}
		if g := m.GetGauge(); g != nil {
			sum += g.GetValue()
		}
	}
	return sum
}

// histMean returns the mean and count of the histogram name (all label
// values matching labels) in reg.
func histMean(reg *prometheus.Registry, name string, labels ...string) (mean float64, count uint64) {
	var sum float64
	for _, m := range samples(reg, name, labels...) {
		if h := m.GetHistogram(); h != nil {
			sum += h.GetSampleSum()
			count += h.GetSampleCount()
		}
	}
	if count == 0 {
		return 0, 0
	}
	return sum / float64(count), count
}

// cpuSnapshot is the CPU time used so far by this process and by the
// redis-server.
type cpuSnapshot struct {
	proc, redis float64
	// Time the threads were runnable but waiting for a CPU (run-queue
	// wait from /proc/<pid>/task/*/schedstat): the machine's contention.
	procWait, redisWait float64
}

func (e *env) cpu(ctx context.Context) cpuSnapshot {
	var ru syscall.Rusage
	var c cpuSnapshot
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		c.proc = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	}
	c.procWait = runqueueWait("self")
	if pid, err := e.rc.Info(ctx, "server").Result(); err == nil {
		for _, l := range strings.Split(pid, "\n") {
			if v, ok := strings.CutPrefix(l, "process_id:"); ok {
				c.redisWait = runqueueWait(strings.TrimSpace(v))
			}
		}
	}
	if s, err := e.rc.Info(ctx, "cpu").Result(); err == nil {
		for _, l := range strings.Split(s, "\n") {
			for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
				if v, ok := strings.CutPrefix(l, k); ok {
					f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
					c.redis += f
				}
			}
		}
	}
	return c
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// runqueueWait sums the run-queue wait of every thread of pid, in seconds.
func runqueueWait(pid string) float64 {
	dirs, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return 0
	}
	var sum float64
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + d.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) >= 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			sum += v / 1e9
		}
	}
	return sum
}
