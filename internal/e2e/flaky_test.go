package e2e

// A flaky network between the aggregator and its dependencies (issue 18):
// the aggregator binary talks to kfake and to redis-server through TCP
// fault proxies (Shopify's toxiproxy, as a library in the test process),
// and one replay goes through, phase by phase:
//
//   - redis-latency: Redis replies delayed past the client's 3 s read
//     timeout while commit scripts run (the ambiguous case: the script was
//     applied, the client does not know);
//   - redis-reset: every Redis connection reset by the peer;
//   - kafka-reset: every Kafka connection reset (fetches, produce of the
//     outputs, group requests);
//   - kafka-reset-half: half the Kafka connections reset, so that batches
//     go through and their outputs' produce requests meet resets;
//   - kafka-silent: the broker accepts connections and bytes but never
//     answers, for longer than the session timeout.
//
// Each phase feeds a new slice of the workload, injects its fault for a
// while, clears it and measures how long the aggregator takes, by itself,
// to commit everything. The final state must equal the clean run's (and
// the oracle's) byte for byte: no observation lost or applied twice.
// Output topics are at-least-once: the test reports how many records the
// faults duplicated.
//
// Volume: CHANGERATE_E2E_FLAKY_OBSERVATIONS (default 40,000).
//
//	go test -race -run TestFlakyNetwork -v ./internal/e2e/

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
)

const envFlakyObservations = "CHANGERATE_E2E_FLAKY_OBSERVATIONS"

func flakySize() int {
	if n, err := strconv.Atoi(os.Getenv(envFlakyObservations)); err == nil && n >= 10000 {
		return n
	}
	return 40_000
}

// faultProxy is one toxiproxy proxy.
type faultProxy struct {
	t *testing.T
	p *toxiproxy.Proxy
}

var (
	toxiOnce   sync.Once
	toxiServer *toxiproxy.ApiServer
)

// startProxy proxies listen (host:port; a free one when it ends in :0) to
// upstream.
func startProxy(t *testing.T, name, listen, upstream string) *faultProxy {
	t.Helper()
	toxiOnce.Do(func() {
		toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	})
	p := toxiproxy.NewProxy(toxiServer, name, listen, upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("proxy %s: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return &faultProxy{t: t, p: p}
}

func (f *faultProxy) addr() string { return f.p.Listen }

// add adds a toxic to every new and existing connection, e.g.
// add("latency", "downstream", `"latency":4000`, 1); toxicity is the
// probability that a connection gets it.
func (f *faultProxy) add(typ, stream, attrs string, toxicity float64) {
	f.t.Helper()
	js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":%g,"attributes":{%s}}`, typ+"-"+stream, typ, stream, toxicity, attrs)
	if _, err := f.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		f.t.Fatalf("toxic %s: %v", js, err)
	}
}

// clear removes every toxic.
func (f *faultProxy) clear() { f.p.Toxics.ResetToxics(context.Background()) }

// startProxiedKafka starts kfake behind a fault proxy: the broker
// advertises the proxy's address.
func startProxiedKafka(t *testing.T, topics ...kafkatest.Topic) (*kafkatest.Cluster, *faultProxy) {
	t.Helper()
	front := freeAddr(t)
	kc := kafkatest.StartWith(t, kafkatest.Options{Topics: topics, Advertise: front})
	return kc, startProxy(t, "kafka", front, kc.ListenerAddr())
}

func TestFlakyNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end fault test")
	}
	t.Parallel() // its own broker, Redis and processes
	_, aggBin := buildBinaries(t)
	f := &fixture{aggBin: aggBin, seed: seedFromEnv() + 19}
	f.w = genWorkload(f.seed, flakySize())
	var kp *faultProxy
	f.kc, kp = startProxiedKafka(t, kafkatest.Topic{Name: obsTopic, Partitions: obsPartitions})

	// The workload in slices, one per phase, produced as the phases come.
	const slices = 7
	f.place = map[int32][]placed{}
	produced := 0
	produceSlice := func() {
		lo, hi := produced*len(f.w.Obs)/slices, (produced+1)*len(f.w.Obs)/slices
		part := &workload{Obs: f.w.Obs[lo:hi], Values: f.w.Values[lo:hi]}
		for p, l := range produceTracked(t, f.kc, obsTopic, part, nil) {
			for _, x := range l {
				f.place[p] = append(f.place[p], placed{x.off, x.idx + lo})
			}
		}
		produced++
		f.hw = highWatermarks(t, f.kc, obsTopic)
		f.total = 0
		for _, e := range f.hw {
			f.total += e
		}
	}

	rds := redistest.Start(t)
	rp := startProxy(t, "redis", "127.0.0.1:0", rds.Addr)
	outputTopics(t, f.kc, "-flaky")
	// Fetches are abandoned 2 s after the broker's max wait (instead of
	// 10 s) so that the silent broker's requests time out within the phase.
	env := aggEnv(kp.addr(), rp.addr(), "flaky", "-flaky", "CHANGERATE_KAFKA_FETCH_TIMEOUT_SLACK=2s")
	a := startAgg(t, aggBin, "flaky", env)
	produceSlice()
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 2*time.Minute, a)

	type phase struct {
		name     string
		proxy    *faultProxy
		toxics   [][3]string // type, stream, attributes
		hold     time.Duration
		toxicity float64 // 0: 1
	}
	phases := []phase{
		// Replies 4 s late: past the 3 s read timeout, so commits time out
		// after Redis applied them, and their retries find them applied.
		{"redis-latency", rp, [][3]string{{"latency", "downstream", `"latency":4000`}}, 6 * time.Second, 0},
		{"redis-reset", rp, [][3]string{{"reset_peer", "upstream", `"timeout":0`}}, 3 * time.Second, 0},
		{"kafka-reset", kp, [][3]string{{"reset_peer", "upstream", `"timeout":0`}}, 3 * time.Second, 0},
		// Half the connections reset: fetches get through now and then,
		// so batches are processed and their outputs produced on
		// connections that are reset too.
		{"kafka-reset-half", kp, [][3]string{{"reset_peer", "upstream", `"timeout":0`}}, 5 * time.Second, 0.5},
		// Longer than the 3 s session timeout of the tests' aggregators.
		{"kafka-silent", kp, [][3]string{{"timeout", "upstream", `"timeout":0`}, {"timeout", "downstream", `"timeout":0`}}, 8 * time.Second, 0},
	}
	watched := []string{"changerate_aggregator_retries_total", "changerate_aggregator_fenced_commits_total", "changerate_state_commit_rejected_total",
		"changerate_state_redis_errors_total", "changerate_kafka_fetch_errors_total", "changerate_kafka_write_errors_total",
		"changerate_kafka_request_timeouts_total", "changerate_kafka_group_restarts_total", "changerate_kafka_group_generations_total",
		"changerate_kafka_produce_retries_total"}
	snapshot := func() map[string]float64 {
		m := a.metrics("changerate_")
		out := map[string]float64{}
		for _, n := range watched {
			out[n] = metricSum(m, n)
		}
		return out
	}
	for _, ph := range phases {
		before := snapshot()
		// The aggregator is frozen while the slice is produced (through
		// the proxy) and the fault is set up, so that it meets the fault
		// with the whole slice to process.
		a.signal(syscall.SIGSTOP)
		produceSlice()
		tox := ph.toxicity
		if tox == 0 {
			tox = 1
		}
		for _, x := range ph.toxics {
			ph.proxy.add(x[0], x[1], x[2], tox)
		}
		a.signal(syscall.SIGCONT)
		time.Sleep(ph.hold)
		ph.proxy.clear()
		t0 := time.Now()
		waitCaughtUp(t, rds.Client, obsTopic, f.hw, 2*time.Minute, a)
		took := time.Since(t0)
		after := snapshot()
		var changed []string
		for _, n := range watched {
			if d := after[n] - before[n]; d != 0 {
				changed = append(changed, fmt.Sprintf("%s+%v", strings.TrimPrefix(n, "changerate_"), d))
			}
		}
		t.Logf("%s: fault held %v; caught up %v after it was cleared; metrics: %s", ph.name, ph.hold,
			took.Round(100*time.Millisecond), strings.Join(changed, " "))
		if len(changed) == 0 {
			t.Errorf("%s: no metric tells that anything happened", ph.name)
		}
		// Checked state at every phase: exactly the oracle's at the stored
		// offsets (which are the high watermarks now).
		f.checkConsistent(t, "after "+ph.name, dumpRedis(t, rds.Client))
	}
	produceSlice()
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 2*time.Minute, a)
	if !strings.Contains(a.log.String(), "level=WARN") {
		t.Errorf("the aggregator logged no warning about the faults")
	}
	a.terminate(30 * time.Second)
	got := dumpRedis(t, rds.Client)
	compareDumps(t, "final state vs oracle", oracle(f.w, obsTopic, f.place, f.hw), got)

	// The clean run over the same input, for the byte comparison and the
	// output counts.
	f.smallCleanRun(t)
	compareDumps(t, "final state vs the clean run", f.ref, got)
	// Outputs are at-least-once: a batch replayed or re-sent after an
	// ambiguous failure publishes byte-identical records again.
	for _, topic := range []string{"estimates", "access-reports"} {
		n, dup := exactDuplicates(t, f.kc, topic+"-flaky")
		nc, dupc := exactDuplicates(t, f.kc, topic+"-ref")
		t.Logf("%s: %d records with the faults, %d of them exact duplicates; clean run %d records, %d exact duplicates",
			topic, n, dup, nc, dupc)
	}
}

// exactDuplicates returns how many records topic holds and how many of
// them repeat an earlier record's key and value exactly.
func exactDuplicates(t *testing.T, kc *kafkatest.Cluster, topic string) (n, dup int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range kc.ReadAll(t, topic) {
		k := string(r.Key) + "\x00" + string(r.Value)
		if seen[k] {
			dup++
		}
		seen[k] = true
		n++
	}
	return n, dup
}
