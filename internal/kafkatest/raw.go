package kafkatest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawConn is one client connection that speaks the Kafka protocol request
// by request (non-flexible versions: set each request's Version), for
// tests that must control exactly what a client sends and when it dies,
// e.g. a group member killed while its JoinGroup is pending. Not safe for
// concurrent use.
type RawConn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
	corr int32
	f    *kmsg.RequestFormatter
}

// DialRaw connects to addr; the connection is closed by t.Cleanup.
func DialRaw(t testing.TB, addr string) *RawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("kafkatest: dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &RawConn{t: t, conn: c, r: bufio.NewReader(c), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("kafkatest-raw"))}
}

// Close closes the connection (as a killed process's would be).
func (rc *RawConn) Close() { rc.conn.Close() }

// Send writes req without waiting for its response.
func (rc *RawConn) Send(req kmsg.Request) {
	rc.t.Helper()
	rc.corr++
	if _, err := rc.conn.Write(rc.f.AppendRequest(nil, req, rc.corr)); err != nil {
		rc.t.Fatalf("kafkatest: write %T: %v", req, err)
	}
}

// RoundTrip sends req and reads its response into resp, failing the test
// after 10 s without one.
func (rc *RawConn) RoundTrip(req kmsg.Request, resp kmsg.Response) {
	rc.t.Helper()
	rc.Send(req)
	_ = rc.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [8]byte
	if _, err := io.ReadFull(rc.r, hdr[:]); err != nil {
		rc.t.Fatalf("kafkatest: read %T: %v", resp, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-4)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		rc.t.Fatalf("kafkatest: read %T: %v", resp, err)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != rc.corr {
		rc.t.Fatalf("kafkatest: correlation id %d, want %d", got, rc.corr)
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("kafkatest: decode %T: %v", resp, err)
	}
}

// Coordinator returns the address of group's coordinator, asking the
// broker at bootstrap (FindCoordinator v0, retried for 10 s).
func Coordinator(t testing.TB, bootstrap, group string) string {
	t.Helper()
	c := DialRaw(t, bootstrap)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		var resp kmsg.FindCoordinatorResponse
		c.RoundTrip(req, &resp)
		if resp.ErrorCode == 0 {
			return net.JoinHostPort(resp.Host, strconv.Itoa(int(resp.Port)))
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: FindCoordinator: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// JoinRequest returns a JoinGroup v1 request (the version kafka-go's
// ConsumerGroup uses) of the "consumer" protocol type, offering the
// "range" protocol for topics.
func JoinRequest(group, member string, session, rebalance time.Duration, topics ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 1
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = topics
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", md.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}
