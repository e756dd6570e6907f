package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// sized returns a message of topic with key whose value starts with tag
// and is padded to size bytes.
func sized(topic, key, tag string, size int) stream.Message {
	v := []byte(tag)
	if size > len(v) {
		v = append(v, bytes.Repeat([]byte{'.'}, size-len(v))...)
	}
	return stream.Message{Topic: topic, Key: []byte(key), Value: v}
}

// tagOf returns the tag of a value made by sized.
func tagOf(v []byte) string {
	if i := bytes.IndexByte(v, '.'); i >= 0 {
		return string(v[:i])
	}
	return string(v)
}

// checkWrittenInOrder checks that topic holds exactly the messages of msgs
// (of that topic) not listed in rejected, each partition in the order of
// msgs.
func checkWrittenInOrder(t *testing.T, c *kafkatest.Cluster, topic string, msgs []stream.Message, rejected map[int]bool) {
	t.Helper()
	stored := c.ReadAll(t, topic)
	keysOf := map[int32]map[string]bool{}
	got := map[int32][]string{}
	for _, r := range stored {
		if keysOf[r.Partition] == nil {
			keysOf[r.Partition] = map[string]bool{}
		}
		keysOf[r.Partition][string(r.Key)] = true
		got[r.Partition] = append(got[r.Partition], tagOf(r.Value))
	}
	want := map[int32][]string{}
	n := 0
	for i, m := range msgs {
		if m.Topic != topic || rejected[i] {
			continue
		}
		n++
		found := false
		for p, keys := range keysOf {
			if keys[string(m.Key)] {
				want[p] = append(want[p], tagOf(m.Value))
				found = true
			}
		}
		if !found {
			t.Errorf("topic %s: message %d (%s) was not written", topic, i, tagOf(m.Value))
		}
	}
	if len(stored) != n {
		t.Errorf("topic %s holds %d records, want %d", topic, len(stored), n)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("topic %s per partition:\n got %v\nwant %v", topic, got, want)
	}
}

// TestKafkaSinkRejects: messages that Kafka (or the sink's BatchBytes)
// refuses permanently are reported in a *stream.RejectedError with their
// index and reason, every other message is written, each partition in
// order; temporary errors are retried and errors that are not about the
// records are not reported as rejections.
func TestKafkaSinkRejects(t *testing.T) {
	const big = 2000 // over the 1200-byte limits below
	mixed := []stream.Message{
		sized("t", "a", "a0", 100), sized("t", "b", "b0", 100), sized("t", "a", "a1", big),
		sized("t", "c", "c0", 100), sized("t", "a", "a2", 100), sized("t", "b", "b1", 100),
		sized("t", "d", "d0", 100), sized("t", "b", "b2", big), sized("t", "b", "b3", 100),
		sized("t", "c", "c1", 100), sized("t", "a", "a3", 100), sized("t", "d", "d1", 100),
	}
	// Many small records of one key around a single large one: the
	// request holding them all is refused as a whole.
	var oneKey []stream.Message
	for i := 0; i < 24; i++ {
		size := 100
		if i == 13 {
			size = big
		}
		oneKey = append(oneKey, sized("t", "k", fmt.Sprint("k", i), size))
	}
	twoTopics := []stream.Message{
		sized("t", "a", "a0", 100), sized("denied", "x", "x0", 100), sized("t", "a", "a1", 100),
		sized("denied", "y", "y0", 100), sized("t", "b", "b0", 100),
	}
	produce := []kmsg.Key{kmsg.Produce}
	cases := []struct {
		name        string
		batched     bool // also run in batched mode
		batchBytes  int64
		topicConfig []string // of topic t
		faults      []kfake.Fault
		msgs        []stream.Message
		want        map[int]string // rejected: index → reason; nil: Write succeeds
		failed      bool           // Write fails with an error that is not a rejection
	}{
		{name: "larger than BatchBytes", batched: true, batchBytes: 1200, msgs: mixed,
			want: map[int]string{2: stream.ReasonExceedsBatchBytes, 7: stream.ReasonExceedsBatchBytes}},
		{name: "larger than the topic's max.message.bytes", batched: true, topicConfig: []string{"max.message.bytes", "1200"}, msgs: mixed,
			want: map[int]string{2: "MESSAGE_TOO_LARGE", 7: "MESSAGE_TOO_LARGE"}},
		{name: "one large record in a request refused as a whole", batched: true, topicConfig: []string{"max.message.bytes", "1200"}, msgs: oneKey,
			want: map[int]string{13: "MESSAGE_TOO_LARGE"}},
		{name: "topic not authorized is not a rejection (configuration: retried until fixed)", batched: true, msgs: twoTopics,
			faults: []kfake.Fault{{Keys: produce, Topic: "denied", Err: kerr.TopicAuthorizationFailed, Count: -1}},
			failed: true},
		{name: "invalid record", msgs: oneKey,
			faults: []kfake.Fault{{Keys: produce, Topic: "t", Err: kerr.InvalidRecord, Count: 1}},
			// The first request (all 24 records) is refused; its halves
			// are accepted, so nothing is reported.
			want: nil},
		{name: "temporary error is retried", batched: true, msgs: mixed[:2],
			faults: []kfake.Fault{{Keys: produce, Topic: "t", Err: kerr.NotEnoughReplicas, Count: 2}},
			want:   nil},
		{name: "server error is not a rejection", batched: true, msgs: twoTopics,
			faults: []kfake.Fault{{Keys: produce, Topic: "denied", Err: kerr.UnknownServerError, Count: -1}},
			failed: true},
	}
	for _, tc := range cases {
		for _, mode := range sinkModes {
			if mode.linger > 0 && !tc.batched {
				continue
			}
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				c := kafkatest.Start(t, kafkatest.Topic{Name: "denied", Partitions: 2})
				c.CreateTopic(t, "t", 2, tc.topicConfig...)
				var faults *kfake.FaultHandle
				if len(tc.faults) > 0 {
					faults = c.Kfake().Fault(tc.faults...)
					defer func() {
						if faults.Hits() == 0 {
							t.Error("the injected fault was never hit")
						}
					}()
				}
				cfg := testConfig(c, "g")
				cfg.Linger = mode.linger
				cfg.BatchBytes = tc.batchBytes
				cfg.WriteAttempts = 5
				reg := prometheus.NewRegistry()
				sink := newSink(t, cfg, reg)
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				err := sink.Write(ctx, tc.msgs...)
				rejected := map[int]bool{}
				switch {
				case tc.failed:
					if err == nil || errors.Is(err, stream.ErrRejected) {
						t.Fatalf("Write: %v, want an error that is not a rejection", err)
					}
					return
				case tc.want == nil:
					if err != nil {
						t.Fatalf("Write: %v", err)
					}
				default:
					var rej *stream.RejectedError
					if !errors.As(err, &rej) || !errors.Is(err, stream.ErrRejected) {
						t.Fatalf("Write: %v, want a *RejectedError", err)
					}
					got := map[int]string{}
					for k, r := range rej.Rejected {
						got[r.Index] = r.Reason
						rejected[r.Index] = true
						if k > 0 && rej.Rejected[k-1].Index >= r.Index {
							t.Errorf("rejections not in increasing index order: %+v", rej.Rejected)
						}
						if r.Err == nil || !strings.Contains(r.Err.Error(), "stream: kafka write") {
							t.Errorf("rejection %d: cause %v", r.Index, r.Err)
						}
					}
					if !reflect.DeepEqual(got, tc.want) {
						t.Fatalf("rejected %v, want %v (%v)", got, tc.want, err)
					}
				}
				for _, topic := range []string{"t", "denied"} {
					checkWrittenInOrder(t, c, topic, tc.msgs, rejected)
				}
				if got := metricSum(t, reg, "changerate_kafka_write_errors_total"); got != float64(len(tc.want)) {
					t.Errorf("write errors metric %v, want %d", got, len(tc.want))
				}
				if got := metricSum(t, reg, "changerate_kafka_messages_written_total"); got != float64(len(tc.msgs)-len(tc.want)) {
					t.Errorf("written metric %v, want %d", got, len(tc.msgs)-len(tc.want))
				}
			})
		}
	}
}

// TestMemorySinkRejectIf: MemorySink.RejectIf simulates rejections with
// the Sink contract: the others are kept, in order.
func TestMemorySinkRejectIf(t *testing.T) {
	s := stream.NewMemorySink()
	s.RejectIf(func(m stream.Message) string {
		if len(m.Value) > 10 {
			return "TOO_LARGE"
		}
		return ""
	})
	msgs := []stream.Message{sized("t", "a", "a0", 5), sized("t", "a", "a1", 50), sized("t", "a", "a2", 5)}
	err := s.Write(context.Background(), msgs...)
	var rej *stream.RejectedError
	if !errors.As(err, &rej) || !errors.Is(err, stream.ErrRejected) {
		t.Fatalf("Write: %v, want a *RejectedError", err)
	}
	if len(rej.Rejected) != 1 || rej.Rejected[0].Index != 1 || rej.Rejected[0].Reason != "TOO_LARGE" {
		t.Fatalf("rejected %+v, want message 1 for TOO_LARGE", rej.Rejected)
	}
	var tags []string
	for _, m := range s.Messages("t") {
		tags = append(tags, tagOf(m.Value))
	}
	if !reflect.DeepEqual(tags, []string{"a0", "a2"}) {
		t.Fatalf("stored %v, want [a0 a2]", tags)
	}
	s.RejectIf(nil)
	if err := s.Write(context.Background(), msgs[1]); err != nil || len(s.Messages("t")) != 3 {
		t.Fatalf("after RejectIf(nil): %v, %d messages", err, len(s.Messages("t")))
	}
}

// The error text names the count and the first rejections.
func TestRejectedErrorText(t *testing.T) {
	cause := errors.New("boom")
	e := &stream.RejectedError{Rejected: []stream.Rejection{{0, "A", cause}, {2, "B", cause}, {3, "C", cause}, {7, "D", cause}, {9, "E", cause}}}
	want := "stream: 5 message(s) rejected permanently: message 0 (A): boom, message 2 (B): boom, message 3 (C): boom; and 2 more"
	if e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
	if !errors.Is(e, cause) || !errors.Is(fmt.Errorf("wrapped: %w", e), stream.ErrRejected) {
		t.Fatal("RejectedError does not unwrap to ErrRejected and its causes")
	}
}
