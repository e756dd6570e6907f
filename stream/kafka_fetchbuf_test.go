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

// TestKafkaFetchFillsFromReadyResponses: a handler behind its partition
// (a backlog) gets, from one Fetch, the messages of the response buffered
// and of the ones the fetcher has ready, up to the limit, in offset order
// and each once; a fetch response holds at most FetchMaxBytes (here about
// one produced batch of 10 messages: a broker returns a whole first
// batch however small the limit).
func TestKafkaFetchFillsFromReadyResponses(t *testing.T) {
	const topic, batches, perBatch, limit = "fetchfill", 60, 10, 25
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 1})
	value := bytes.Repeat([]byte("v"), 1000)
	for range batches {
		var recs []kafkatest.Record
		for i := range perBatch {
			recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint("k", i)), Value: value})
		}
		c.ProduceTo(t, topic, 0, recs...)
	}
	cfg := testConfig(c, "fetchfill")
	cfg.FetchMaxBytes = 1 << 10 // below a produced batch (about 10.3 KB): one batch per response
	cfg.FetchMinBytes = 1
	src := newSource(t, cfg, topic, prometheus.NewRegistry())
	var (
		mu      sync.Mutex
		offs    []int64
		sizes   []int
		done    = make(chan struct{})
		doneOne sync.Once
	)
	stop := runSource(t, src, func(ctx context.Context, cl stream.Claim) error {
		if err := cl.SeekTo(0); err != nil {
			return err
		}
		for {
			time.Sleep(5 * time.Millisecond) // the handler is slower than its fetcher
			msgs, err := cl.Fetch(ctx, limit)
			if err != nil {
				return nil
			}
			mu.Lock()
			sizes = append(sizes, len(msgs))
			for _, m := range msgs {
				offs = append(offs, m.Offset)
			}
			if len(offs) == batches*perBatch {
				doneOne.Do(func() { close(done) })
			}
			mu.Unlock()
		}
	})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("fetched %d of %d messages", len(offs), batches*perBatch)
	}
	_ = stop() // context.Canceled
	mu.Lock()
	defer mu.Unlock()
	for i, o := range offs {
		if o != int64(i) {
			t.Fatalf("message %d has offset %d: not each once in order", i, o)
		}
	}
	most := 0
	for _, n := range sizes {
		if n > limit {
			t.Fatalf("a Fetch returned %d messages, above its limit %d", n, limit)
		}
		most = max(most, n)
	}
	if most <= perBatch {
		t.Fatalf("no Fetch returned more than one response's messages (most %d, sizes %v)", most, sizes)
	}
}
