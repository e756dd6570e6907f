package stream_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// TestKafkaSinkRecordFields: what the direct sink produces reads back
// (with franz-go, another client) with each message's key, value and time:
// a nil key as a null key, an empty key as an empty one, a nil value as a
// null value, a value longer than kafka-go's 64 KiB pages whole, a message
// without a time with the time of the write (within a minute: the sink
// gives it the write's time, and kafka-go would too), in the order
// written, over several produce requests to one partition.
func TestKafkaSinkRecordFields(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic{Name: "fields", Partitions: 1})
	sink := newSink(t, testConfig(c, "fields"), nil)
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	want := []stream.Message{
		{Topic: "fields", Key: nil, Value: []byte("null key"), Time: at},
		{Topic: "fields", Key: []byte{}, Value: []byte("empty key"), Time: at.Add(time.Second)},
		{Topic: "fields", Key: []byte("k"), Value: nil, Time: at.Add(2 * time.Second)},
		{Topic: "fields", Key: []byte("no time"), Value: bytes.Repeat([]byte("v"), 70000)}, // longer than a 64 KiB page
	}
	before := time.Now()
	if err := sink.Write(context.Background(), want...); err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(context.Background(), want[:1]...); err != nil { // a second request
		t.Fatal(err)
	}
	want = append(want, want[0])
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fields": {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var got []*kgo.Record
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Key, w.Key) {
			t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, r.Key, r.Key == nil, w.Key, w.Key == nil)
		}
		if (r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Errorf("record %d: value of %d bytes (nil %v), want %d (nil %v)", i, len(r.Value), r.Value == nil, len(w.Value), w.Value == nil)
		}
		switch {
		case !w.Time.IsZero() && !r.Timestamp.Equal(w.Time):
			t.Errorf("record %d: time %v, want %v", i, r.Timestamp, w.Time)
		case w.Time.IsZero() && (r.Timestamp.Before(before.Add(-time.Minute)) || r.Timestamp.After(time.Now().Add(time.Minute))):
			t.Errorf("record %d: time %v, want the time of the write (%v)", i, r.Timestamp, before)
		}
		if r.Offset != int64(i) {
			t.Errorf("record %d at offset %d", i, r.Offset)
		}
	}
}
