package stream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/changerate/changerate/internal/kafkatest"
)

// TestKafkaSourceRejoinsForOrphanedPartitions: another member G leads the
// group, takes every partition and never consumes them (as a dead member
// that the coordinator keeps would). The source sees input waiting with
// no committed progress, rejoins (orphaned_partition), and the rebalance
// that follows drops G, which no longer rejoins: the source then owns and
// reads every partition.
func TestKafkaSourceRejoinsForOrphanedPartitions(t *testing.T) {
	const group, topic = "orphans", "t"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 2})
	for p := int32(0); p < 2; p++ {
		c.ProduceTo(t, topic, p, kafkatest.Record{Value: []byte(fmt.Sprint("p", p))})
	}
	coord := kafkatest.Coordinator(t, c.Addr(), group)

	// G joins first (generation 1, leader) and syncs.
	g := kafkatest.DialRaw(t, coord)
	var join kmsg.JoinGroupResponse
	g.RoundTrip(kafkatest.JoinRequest(group, "", 3*time.Second, time.Second, topic), &join)
	if err := kerr.ErrorForCode(join.ErrorCode); err != nil {
		t.Fatal(err)
	}
	memberG := join.MemberID
	// sync assigns both partitions to G and nothing to the others.
	sync := func(j *kmsg.JoinGroupResponse) {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = group, j.Generation, memberG
		for _, m := range j.Members {
			a := kmsg.NewConsumerMemberAssignment()
			if m.MemberID == memberG {
				at := kmsg.NewConsumerMemberAssignmentTopic()
				at.Topic, at.Partitions = topic, []int32{0, 1}
				a.Topics = append(a.Topics, at)
			}
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m.MemberID, a.AppendTo(nil)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		var resp kmsg.SyncGroupResponse
		g.RoundTrip(req, &resp)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("G sync generation %d: %v", j.Generation, err)
		}
	}
	sync(&join)

	reg := prometheus.NewRegistry()
	cfg := testConfig(c, group)
	cfg.OrphanTimeout = time.Second
	cfg.MetadataInterval = 100 * time.Millisecond
	src := newSource(t, cfg, topic, reg)
	col := &collector{}
	runSource(t, src, col.handle)

	// G heartbeats; at the rebalance the source's join causes, G rejoins
	// (it leads: both partitions stay with it, the source gets none).
	// At the next rebalance G is gone for good.
	rejoined := false
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("G saw no second rebalance within 30 s: the source did not rejoin for the orphaned partitions")
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = group, join.Generation, memberG
		var resp kmsg.HeartbeatResponse
		g.RoundTrip(hb, &resp)
		if resp.ErrorCode != kerr.RebalanceInProgress.Code {
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				t.Fatalf("G heartbeat: %v", err)
			}
			continue
		}
		if rejoined {
			g.Close() // dies without leaving
			break
		}
		g.RoundTrip(kafkatest.JoinRequest(group, memberG, 3*time.Second, time.Second, topic), &join)
		if err := kerr.ErrorForCode(join.ErrorCode); err != nil || join.LeaderID != memberG {
			t.Fatalf("G rejoin: %v, leader %s", err, join.LeaderID)
		}
		sync(&join)
		rejoined = true
	}
	waitFor(t, "both partitions' records at the source", func() bool { return col.count() >= 2 })
	if n := metricSum(t, reg, "changerate_kafka_group_restarts_total"); n < 1 {
		t.Errorf("group restarts %v, want an orphaned_partition rejoin", n)
	}
}
