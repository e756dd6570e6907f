package e2e

// The crash loop of issue 18: a pod whose aggregator is killed -9 again
// and again, some kills while it is joining the consumer group, some in
// the middle of a batch, with the defaults an operator uses (session
// timeout 30 s, heartbeat 3 s, rebalance timeout 30 s); then one process
// is left alone. It must catch up within session timeout + rebalance
// timeout + 30 s of its start, and the final state must equal the clean
// run's byte for byte (and the oracle's).
//
// Volume: CHANGERATE_E2E_CRASHLOOP_OBSERVATIONS (default 60,000: the
// scenario takes about 2 minutes, most of it the group waiting for the dead
// members, which does not depend on the volume).
//
//	go test -race -run TestCrashLoop -v ./internal/e2e/

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
)

const envCrashLoopObservations = "CHANGERATE_E2E_CRASHLOOP_OBSERVATIONS"

func crashLoopSize() int {
	if n, err := strconv.Atoi(os.Getenv(envCrashLoopObservations)); err == nil && n >= 10000 {
		return n
	}
	return 60_000
}

// operatorEnv are the group settings of the documented defaults (aggEnv
// shortens them for the other fault tests).
var operatorEnv = []string{"CHANGERATE_KAFKA_SESSION_TIMEOUT=30s", "CHANGERATE_KAFKA_HEARTBEAT=3s", "CHANGERATE_LOG_LEVEL=info"}

// newSmallFixture produces a workload of n observations into a kfake
// broker of its own, without a clean run.
func newSmallFixture(t *testing.T, n int, seedOffset uint64) *fixture {
	t.Helper()
	_, aggBin := buildBinaries(t)
	f := &fixture{aggBin: aggBin, seed: seedFromEnv() + seedOffset}
	f.w = genWorkload(f.seed, n)
	f.kc = kafkatest.Start(t, kafkatest.Topic{Name: obsTopic, Partitions: obsPartitions})
	f.place = produceTracked(t, f.kc, obsTopic, f.w, nil)
	f.hw = highWatermarks(t, f.kc, obsTopic)
	for _, e := range f.hw {
		f.total += e
	}
	t.Logf("workload: %d observations of %d objects (seed %d); high watermarks %v", len(f.w.Obs), len(f.w.Objects), f.seed, f.hw)
	return f
}

// smallCleanRun runs one aggregator from start to end on a fresh Redis and
// keeps its state as the reference; it must equal the oracle.
func (f *fixture) smallCleanRun(t *testing.T, extraEnv ...string) {
	t.Helper()
	rds := redistest.Start(t)
	outputTopics(t, f.kc, "-ref")
	a := startAgg(t, f.aggBin, "clean", aggEnv(f.kc.Addr(), rds.Addr, "clean", "-ref", extraEnv...))
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 3*time.Minute, a)
	a.terminate(30 * time.Second)
	f.ref = dumpRedis(t, rds.Client)
	compareDumps(t, "clean run vs oracle", oracle(f.w, obsTopic, f.place, f.hw), f.ref)
}

// waitCaughtUpDump is waitCaughtUp, but a process still running at the
// timeout is first asked for a goroutine dump (SIGQUIT), which ends up in
// the failure's log.
func waitCaughtUpDump(t *testing.T, f *fixture, rds *redistest.Server, timeout time.Duration, a *aggProc) time.Duration {
	t.Helper()
	t0 := time.Now()
	for {
		next, err := redisNext(t.Context(), rds.Client, obsTopic, obsPartitions)
		if err == nil && progress(next) == f.total {
			return time.Since(t0)
		}
		if a.exited() {
			t.Fatalf("%s exited (%v) at progress %d of %d\n%s", a.name, a.waitErr, progress(next), f.total, a.log.String())
		}
		if time.Since(t0) > timeout {
			m := a.metrics("changerate_kafka_")
			_ = a.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-a.done:
			case <-time.After(5 * time.Second):
			}
			t.Fatalf("%s did not catch up within %v: progress %d of %d; kafka metrics %v\n%s", a.name, timeout,
				progress(next), f.total, m, a.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end fault test")
	}
	t.Parallel() // its own broker, Redis and processes
	f := newSmallFixture(t, crashLoopSize(), 18)
	f.smallCleanRun(t)
	if t.Failed() {
		return
	}
	rng := rand.New(rand.NewPCG(f.seed, 18))
	rds := redistest.Start(t, redistest.WithAOF())
	outputTopics(t, f.kc, "-loop")
	// Small batches (250 observations) make the replay long enough for
	// the batch kills to land mid-replay at any volume; the state does not
	// depend on the batch size.
	env := aggEnv(f.kc.Addr(), rds.Addr, "loop", "-loop", append(operatorEnv, "CHANGERATE_BATCH_SIZE=250")...)

	// The kills: "batch" waits until the process has committed past a
	// target and kills it 0–40 ms later (mid-batch or mid-commit); "join"
	// kills it 1.5–4 s after its start, while it is still joining (the
	// group waits up to the rebalance timeout for the members killed
	// before).
	// The last kill lands during a join, as in the issue: the survivor
	// then joins while the dead member's JoinGroup is still pending.
	plan := []string{"batch", "join", "batch", "join", "batch", "join"}
	batchKills := 0
	for i, kind := range plan {
		t0 := time.Now()
		a := startAgg(t, f.aggBin, fmt.Sprintf("loop-%d-%s", i+1, kind), env)
		switch kind {
		case "join":
			time.Sleep(1500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond))))
			if g := metricSum(a.metrics("changerate_kafka_group_generation"), "changerate_kafka_group_generation"); g != 0 {
				t.Logf("kill %d: the process had joined (generation %v) before its join kill", i+1, g)
			}
		case "batch":
			batchKills++
			waitProgress(t, rds.Client, int64(batchKills)*f.total/5, 3*time.Minute, a)
			time.Sleep(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		}
		a.kill9()
		d := dumpRedis(t, rds.Client)
		next := f.checkConsistent(t, fmt.Sprintf("after kill %d (%s)", i+1, kind), d)
		t.Logf("kill -9 #%d (%s) %v after its start: state consistent at %d of %d", i+1, kind,
			time.Since(t0).Round(time.Millisecond), progress(next), f.total)
		if kind == "batch" && progress(next) >= f.total {
			t.Errorf("kill %d landed after the end of the replay", i+1)
		}
	}

	// The survivor: session timeout + rebalance timeout + 30 s.
	const bound = 30*time.Second + 30*time.Second + 30*time.Second
	last := startAgg(t, f.aggBin, "loop-survivor", env)
	took := waitCaughtUpDump(t, f, rds, bound, last)
	m := last.metrics("changerate_")
	last.terminate(30 * time.Second)
	d := dumpRedis(t, rds.Client)
	compareDumps(t, "final state vs the clean run", f.ref, d)
	var counters []string
	for k, v := range m {
		if strings.HasPrefix(k, "changerate_kafka_group_") || strings.HasPrefix(k, "changerate_kafka_watchdog") ||
			strings.HasPrefix(k, "changerate_kafka_request_timeouts") || strings.HasPrefix(k, "changerate_kafka_fetch_errors") {
			counters = append(counters, fmt.Sprintf("%s=%v", k, v))
		}
	}
	t.Logf("survivor caught up %v after its start (bound %v); its group metrics: %s", took.Round(100*time.Millisecond), bound,
		strings.Join(counters, " "))
	// Outputs are at-least-once: batches replayed after the kills publish
	// byte-identical records again.
	for _, topic := range []string{"estimates", "access-reports"} {
		start := time.Now()
		n, dup := exactDuplicates(t, f.kc, topic+"-loop")
		nc, dupc := exactDuplicates(t, f.kc, topic+"-ref")
		t.Logf("%s: %d records after the crash loop, %d of them exact duplicates of earlier ones; clean run %d records, %d exact duplicates (both read in %v)",
			topic, n, dup, nc, dupc, time.Since(start).Round(10*time.Millisecond))
	}
}
