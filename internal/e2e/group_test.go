package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
)

// TestGroupRecreated checks that the aggregators keep working after their
// consumer group is deleted and created again: Kafka deletes an empty
// group once its committed offsets expire (offsets.retention.minutes, 7
// days by default: a fleet stopped for a week), and operators delete
// groups (kafka-consumer-groups --delete) to reset lag monitoring. The new
// group's generations start again at 1, below the epochs stored in Redis.
//
// Every Claim is then refused with ErrFenced; the handlers wait
// TAKEOVER_DELAY and, their generation still current, take the partitions
// over (state.Store.Takeover), so the replay goes on.
func TestGroupRecreated(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	t.Parallel() // its own broker, Redis and processes
	_, aggBin := buildBinaries(t)
	const topic, parts = "obs-group", 4
	w := genWorkload(seedFromEnv()+7, 20000)
	half := &workload{Objects: w.Objects, Obs: w.Obs[:10000], Values: w.Values[:10000]}
	rest := &workload{Objects: w.Objects, Obs: w.Obs[10000:], Values: w.Values[10000:]}
	kc := kafkatest.StartWith(t, kafkatest.Options{})
	kc.CreateTopic(t, topic, parts)
	outputTopics(t, kc, "-grp")
	rds := redistest.Start(t)
	env := aggEnv(kc.Addr(), rds.Addr, "grp", "-grp", "CHANGERATE_OBSERVATIONS_TOPIC="+topic)

	// Three successive runs over the first half: generations 1, 2, 3.
	produceTracked(t, kc, topic, half, nil)
	hw := highWatermarks(t, kc, topic)
	for i := 0; i < 3; i++ {
		a := startAgg(t, aggBin, "grp-first", env)
		a.waitOwned(parts, time.Minute)
		waitCaughtUp(t, rds.Client, topic, hw, 2*time.Minute, a)
		a.terminate(30 * time.Second)
	}
	t.Logf("stored epochs before the group is deleted: %v", epochs(t, rds.Client, topic, parts))

	// The group is empty; delete it, as retention or an operator would.
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{"grp"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, kc.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("delete group %s: %v", g.Group, err)
		}
	}

	// The second half must be processed by the recreated group.
	produceTracked(t, kc, topic, rest, nil)
	hw = highWatermarks(t, kc, topic)
	a := startAgg(t, aggBin, "grp-after", env)
	waitCaughtUp(t, rds.Client, topic, hw, time.Minute, a)
	a.terminate(30 * time.Second)
}
