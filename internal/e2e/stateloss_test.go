package e2e

// Redis restarted without persistence (issue 18): the operator forgot AOF,
// Redis restarts empty under a running aggregator whose consumer group
// has a history. The aggregator must notice that the stored offsets
// vanished, refuse to start over from the earliest offset silently, and
// say what to do (CHANGERATE_ON_STATE_LOSS=stop, the default); an
// aggregator started again with the default refuses again; with
// ON_STATE_LOSS=replay it rebuilds the whole state, equal to the oracle's.
//
//	go test -race -run TestRedisRestartWithoutPersistence -v ./internal/e2e/

import (
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
)

func TestRedisRestartWithoutPersistence(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end fault test")
	}
	t.Parallel() // its own broker, Redis and processes
	f := newSmallFixture(t, 20000, 20)
	rds := redistest.Start(t) // no AOF, no RDB snapshots
	outputTopics(t, f.kc, "-lost")
	env := aggEnv(f.kc.Addr(), rds.Addr, "lost", "-lost", "CHANGERATE_IDLE_CHECK=1s")
	a := startAgg(t, f.aggBin, "lost-1", env)
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 2*time.Minute, a)
	// The group commits the offsets every second (lag monitoring).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if committed := f.kc.GroupOffsets(t, "lost", obsTopic); progress(committed) == f.total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group did not commit the offsets: %v", f.kc.GroupOffsets(t, "lost", obsTopic))
		}
	}

	rds.Kill()
	if err := rds.Restart(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	select {
	case <-a.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the aggregator did not stop within 90 s of Redis losing its data\n%s", a.log.String())
	}
	t.Logf("after Redis restarted empty, the aggregator stopped in %v with %v", time.Since(t0).Round(100*time.Millisecond), a.waitErr)
	if a.waitErr == nil {
		t.Errorf("the aggregator exited with status 0 after a state loss")
	}
	for _, want := range []string{"ON_STATE_LOSS=replay", "holds no offset for observations/"} {
		if !strings.Contains(a.log.String(), want) {
			t.Errorf("the aggregator's log does not say %q:\n%s", want, a.log.String())
		}
	}
	// Nothing was replayed: no object state and no stored offset.
	if d := dumpRedis(t, rds.Client); progress(metaNext(t, d, obsTopic, obsPartitions)) != 0 || len(d) > obsPartitions {
		objs, _, _ := dumpStats(d)
		t.Errorf("after the refusal Redis holds %d objects and offsets %v: a silent partial replay", objs, metaNext(t, d, obsTopic, obsPartitions))
	}

	// Started again with the default, it refuses at once.
	b := startAgg(t, f.aggBin, "lost-2", env)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("a restarted aggregator did not refuse within 60 s\n%s", b.log.String())
	}
	if b.waitErr == nil || !strings.Contains(b.log.String(), "ON_STATE_LOSS=replay") {
		t.Errorf("restarted aggregator: exit %v, log:\n%s", b.waitErr, b.log.String())
	}

	// The operator chooses to rebuild.
	c := startAgg(t, f.aggBin, "lost-replay", append(env, "CHANGERATE_ON_STATE_LOSS=replay"))
	t0 = time.Now()
	waitCaughtUp(t, rds.Client, obsTopic, f.hw, 2*time.Minute, c)
	m := c.metrics("changerate_aggregator_state_lost_total")
	c.terminate(30 * time.Second)
	t.Logf("ON_STATE_LOSS=replay rebuilt the state in %v; state_lost_total %v", time.Since(t0).Round(100*time.Millisecond), m)
	compareDumps(t, "state rebuilt by replay vs oracle", oracle(f.w, obsTopic, f.place, f.hw), dumpRedis(t, rds.Client))
	if metricSum(m, "changerate_aggregator_state_lost_total") == 0 {
		t.Errorf("state_lost_total not counted: %v", m)
	}
}
