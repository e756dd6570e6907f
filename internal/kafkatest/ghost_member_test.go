package kafkatest_test

// TestGhostMemberExpires is the minimal reproduction of the stuck consumer
// group of issue 18 (docs/upstream/kfake-ghost-member.md): a member that
// dies while its JoinGroup is pending (a process killed during the join)
// must expire after its session timeout like any silent member. kfake
// (up to at least v0.0.0-20260918054303-01f206a7e32c) completed the
// rebalance with the dead member in it, failed to deliver its JoinGroup
// response and, because it starts a member's session timer only when a
// reply reaches the client, never started one: the dead member stayed in
// the group for ever with the partitions the leader assigned it, which
// nobody consumed, and no rebalance ever came to take them back. Apache
// Kafka schedules every member's session expiry when it completes the join
// (GroupCoordinator.completeAndScheduleNextHeartbeatExpiration), whether or
// not the response could be sent.
//
// The test speaks the group protocol on raw TCP connections with the
// request versions kafka-go's ConsumerGroup uses (JoinGroup v1, SyncGroup
// v0, Heartbeat v0), so that a member can die exactly while its JoinGroup
// is pending. It passes with the patched copy in third_party/kfake (the
// module's replace directive) and fails with kfake upstream.
//
// The same test runs against any broker whose bootstrap address is in
// KAFKATEST_GHOST_BROKER (with a 6 s session, the minimum of real brokers).
// librdkafka's mock cluster, an independent implementation of the group
// coordinator, passes it (the dead member expires; 15 s):
//
//	kcat -X test.mock.num.brokers=3 -b x -C -t ghost   # logs the bootstrap addresses
//	KAFKATEST_GHOST_BROKER=127.0.0.1:PORT go test -run TestGhostMemberExpires -v ./internal/kafkatest/

import (
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/changerate/changerate/internal/kafkatest"
)

func TestGhostMemberExpires(t *testing.T) {
	const group = "ghost"
	session, rebalance := time.Second, 2*time.Second
	addr := os.Getenv("KAFKATEST_GHOST_BROKER")
	if addr == "" {
		addr = kafkatest.Start(t).Addr()
	} else {
		// Real brokers refuse sessions below group.min.session.timeout.ms
		// (6 s by default).
		session, rebalance = 6*time.Second, 3*time.Second
	}
	addr = kafkatest.Coordinator(t, addr, group)
	t.Logf("group coordinator %s", addr)

	// A joins alone and syncs: generation 1, stable.
	a := kafkatest.DialRaw(t, addr)
	var join kmsg.JoinGroupResponse
	a.RoundTrip(kafkatest.JoinRequest(group, "", session, rebalance), &join)
	if err := kerr.ErrorForCode(join.ErrorCode); err != nil {
		t.Fatalf("A join: %v", err)
	}
	memberA := join.MemberID
	sync := func(gen int32, assign ...string) {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = group, gen, memberA
		for _, m := range assign {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, []byte{0, 0}
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		var resp kmsg.SyncGroupResponse
		a.RoundTrip(req, &resp)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("A sync generation %d: %v", gen, err)
		}
	}
	sync(join.Generation, memberA)

	// B sends its JoinGroup (the group starts rebalancing and waits for A)
	// and dies before the response: kill -9 during the join.
	b := kafkatest.DialRaw(t, addr)
	b.Send(kafkatest.JoinRequest(group, "", session, rebalance))
	time.Sleep(200 * time.Millisecond)
	b.Close()
	time.Sleep(100 * time.Millisecond)

	// A rejoins; the rebalance completes with A and the dead B, A leads
	// and assigns B its share, as kafka-go's leader does.
	a.RoundTrip(kafkatest.JoinRequest(group, memberA, session, rebalance), &join)
	if err := kerr.ErrorForCode(join.ErrorCode); err != nil {
		t.Fatalf("A rejoin: %v", err)
	}
	if len(join.Members) != 2 || join.LeaderID != memberA {
		t.Fatalf("rejoin: leader %q members %d, want A leading 2 (A and the dead B)", join.LeaderID, len(join.Members))
	}
	var ghost string
	for _, m := range join.Members {
		if m.MemberID != memberA {
			ghost = m.MemberID
		}
	}
	sync(join.Generation, memberA, ghost)

	// B never heartbeats: after its session timeout the coordinator must
	// remove it and rebalance, which A learns from its heartbeat.
	deadline := time.Now().Add(3 * session)
	for {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = group, join.Generation, memberA
		var resp kmsg.HeartbeatResponse
		a.RoundTrip(hb, &resp)
		if resp.ErrorCode == kerr.RebalanceInProgress.Code {
			return // B expired
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("A heartbeat: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member %s that died during its JoinGroup is still in the group %v after its %v session timeout: "+
				"its partitions are never consumed (kfake does not start the session timer of a member whose JoinGroup response could not be delivered)",
				ghost, 3*session, session)
		}
		time.Sleep(session / 5)
	}
}
