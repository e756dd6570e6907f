package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// TestKafkaFetchBufferBytes: with a fetch budget smaller than one fetch
// (so the fetchers of four partitions take turns), every message is
// delivered once, in order per partition, and the budget is whole again
// once the claims ended.
func TestKafkaFetchBufferBytes(t *testing.T) {
	const topic, parts, perPart = "fetchbuf", 4, 200
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: parts})
	value := bytes.Repeat([]byte("v"), 1000)
	for p := range int32(parts) {
		var recs []kafkatest.Record
		for i := range perPart {
			recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint("k", i)), Value: value})
		}
		c.ProduceTo(t, topic, p, recs...)
	}
	cfg := testConfig(c, "fetchbuf")
	cfg.FetchBufferBytes = 5000 // below FetchMaxBytes: one fetch at a time
	reg := prometheus.NewRegistry()
	src := newSource(t, cfg, topic, reg)
	var mu sync.Mutex
	got := map[int32][]int64{}
	done := make(chan struct{})
	var once sync.Once
	stop := runSource(t, src, func(ctx context.Context, cl stream.Claim) error {
		if err := cl.SeekTo(0); err != nil {
			return err
		}
		for {
			msgs, err := cl.Fetch(ctx, 50)
			if err != nil {
				return nil // revoked or stopped
			}
			mu.Lock()
			for _, m := range msgs {
				got[cl.Partition()] = append(got[cl.Partition()], m.Offset)
			}
			n := 0
			for _, offs := range got {
				n += len(offs)
			}
			mu.Unlock()
			if n == parts*perPart {
				once.Do(func() { close(done) })
			}
		}
	})
	select {
	case <-done:
	case <-time.After(waitLimit):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("not every message delivered within %v: %v", waitLimit, len(got))
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		offs := got[p]
		if len(offs) != perPart {
			t.Errorf("partition %d: %d messages, want %d", p, len(offs), perPart)
			continue
		}
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("partition %d: message %d has offset %d", p, i, o)
				break
			}
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "changerate_kafka_fetch_buffered_bytes" {
			found = true
			if v := mf.Metric[0].GetGauge().GetValue(); v != 0 {
				t.Errorf("fetch budget held after the claims ended: %v bytes", v)
			}
		}
	}
	if !found {
		t.Error("changerate_kafka_fetch_buffered_bytes is not registered")
	}
}
