package aggregate

import (
	"bufio"
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// TestInflightBudget: acquisitions are bounded by the budget, a request
// larger than the whole budget takes all of it (so it proceeds alone),
// resize releases a surplus and takes a shortfall only when free, and
// everything taken is returned.
func TestInflightBudget(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // a cancelled context: acquire must succeed without waiting or fail
	b := newInflightBudget(100)
	big, err := b.acquire(done, 1000)
	if err != nil || big != 100 {
		t.Fatalf("a request over the budget with nothing in flight: got %d, %v; want the whole budget 100", big, err)
	}
	if _, err := b.acquire(done, 1); err == nil {
		t.Fatal("acquire succeeded while the whole budget was held")
	}
	b.release(big)
	h1, err := b.acquire(done, 60)
	if err != nil || h1 != 60 {
		t.Fatalf("acquire 60 of a free budget: %d, %v", h1, err)
	}
	if _, err := b.acquire(done, 50); err == nil {
		t.Fatal("acquire 50 with 40 free succeeded")
	}
	h2, err := b.acquire(done, 40)
	if err != nil || h2 != 40 {
		t.Fatalf("acquire 40 with 40 free: %d, %v", h2, err)
	}
	if got := b.resize(h2, 70); got != 40 {
		t.Errorf("resize to 70 with nothing free: hold %d, want the 40 kept", got)
	}
	if h1 = b.resize(h1, 10); h1 != 10 {
		t.Errorf("resize 60 → 10: hold %d", h1)
	}
	if h2 = b.resize(h2, 70); h2 != 70 {
		t.Errorf("resize 40 → 70 with 50 free: hold %d", h2)
	}
	if b.held.Load() != 80 {
		t.Errorf("held %d, want 80", b.held.Load())
	}
	b.release(h1)
	b.release(h2)
	if b.held.Load() != 0 || !b.sem.TryAcquire(100) {
		t.Errorf("after releasing everything: held %d, or the budget is not whole", b.held.Load())
	}

	// A waiting acquisition proceeds when enough is released.
	w := newInflightBudget(10)
	h, _ := w.acquire(context.Background(), 10)
	got := make(chan int64)
	go func() {
		n, _ := w.acquire(context.Background(), 5)
		got <- n
	}()
	w.release(h)
	if n := <-got; n != 5 {
		t.Errorf("waiting acquire got %d, want 5", n)
	}

	u := newInflightBudget(0) // unbounded: counted only
	n, err := u.acquire(done, 1<<40)
	if err != nil || n != 1<<40 || u.resize(n, 7) != 7 {
		t.Errorf("unbounded budget: %d, %v", n, err)
	}
	u.release(7)
	if u.held.Load() != 0 {
		t.Errorf("unbounded budget: held %d after release", u.held.Load())
	}
}

// TestInflightBudgetLearns: the estimate charges a batch its messages,
// their decoded observations and the footprint per message learned from
// the batches before, a mean weighted by messages (so that a small batch
// with many outputs moves it little); the batch limit keeps a batch's
// footprint to a sixth of the budget, between minBatchLimit and the BatchSize
// asked for, and is the BatchSize itself without a budget.
func TestInflightBudgetLearns(t *testing.T) {
	const size = 16 << 20
	b := newInflightBudget(size)
	msgs := []stream.Message{{Key: []byte("k"), Value: make([]byte, 99)}, {Value: make([]byte, 100)}}
	perMsg := func() int64 { return b.perMessage.Load() }
	if want := int64(2*(inflightPrepPerMessage+messageSize+inflightOutputPerMessage) + 200); b.estimate(msgs) != want {
		t.Errorf("first estimate %d, want %d (the live shape's footprint per message)", b.estimate(msgs), want)
	}
	if got, want := b.batchLimit(1<<30), size/batchShares/inflightOutputPerMessage; got != want {
		t.Errorf("first batch limit %d, want %d", got, want)
	}
	b.learn(20000, 20000*400) // a replay batch: 400 bytes per message weighs as much as the past
	if want := int64((inflightOutputPerMessage + 400) / 2); perMsg() != want {
		t.Errorf("after a batch of learnWindow messages: %d bytes per message, want %d", perMsg(), want)
	}
	for range 10 {
		b.learn(20000, 20000*400)
	}
	if perMsg() < 400 || perMsg() > 401 {
		t.Errorf("after 11 batches of 400 bytes per message: %d", perMsg())
	}
	if want := int64(2*(inflightPrepPerMessage+messageSize+perMsg()) + 200); b.estimate(msgs) != want {
		t.Errorf("estimate %d, want %d (the learned footprint)", b.estimate(msgs), want)
	}
	if got, want := b.batchLimit(20000), size/batchShares/int(perMsg()); got != want || want >= 20000 {
		t.Errorf("batch limit at %d bytes per message: %d, want %d", perMsg(), got, want)
	}
	if got := b.batchLimit(5000); got != 5000 {
		t.Errorf("batch limit at %d bytes per message with BatchSize 5000: %d, want the BatchSize", perMsg(), got)
	}
	b.learn(10, 2<<20) // 10 messages releasing 2 MiB of held outputs
	if perMsg() > 510 {
		t.Errorf("one small batch with many outputs moved the footprint to %d bytes per message", perMsg())
	}
	for range 40 {
		b.learn(3000, 3000*1600) // the live shape: 120,000 messages
	}
	if perMsg() < 1590 || perMsg() > 1600 {
		t.Errorf("after 40 live batches of 1600 bytes per message: %d", perMsg())
	}
	if got, want := b.batchLimit(20000), size/batchShares/int(perMsg()); got != want {
		t.Errorf("batch limit at %d bytes per message: %d, want %d", perMsg(), got, want)
	}
	if got := b.batchLimit(3); got != 3 {
		t.Errorf("batch limit with BatchSize 3: %d", got)
	}
	for range 100 {
		b.learn(20000, 20000<<20) // 1 MiB per message
	}
	if got := b.batchLimit(20000); got != minBatchLimit {
		t.Errorf("batch limit at %d bytes per message: %d, want minBatchLimit %d", perMsg(), got, minBatchLimit)
	}
	was := perMsg()
	b.learn(0, 123) // no messages: nothing learned
	if perMsg() != was {
		t.Errorf("learn of an empty batch changed the footprint from %d to %d", was, perMsg())
	}
	if got := newInflightBudget(0).batchLimit(20000); got != 20000 {
		t.Errorf("unbounded budget: batch limit %d, want the BatchSize", got)
	}
	for in, want := range map[int64]int64{16 << 20: 16 << 20, 1: 1, 0: 0, -1: 0} {
		if got := FetchAheadBytes(in); got != want {
			t.Errorf("FetchAheadBytes(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestInflightBudgetSameResults: four partitions handled concurrently
// under a budget smaller than any batch (each batch in flight alone),
// under the default budget and with none store the same states and
// publish the same estimates, and return the whole budget at the end.
func TestInflightBudgetSameResults(t *testing.T) {
	in, _ := truthLog(23, 40, 6)
	const parts = 4
	var lines [parts][][]byte
	sc := bufio.NewScanner(bytes.NewReader(in))
	for sc.Scan() {
		l := append([]byte(nil), sc.Bytes()...)
		obj := l[bytes.Index(l, []byte(`"object":"`))+10:]
		obj = obj[:bytes.IndexByte(obj, '"')]
		p := hash32(string(obj)) % parts
		lines[p] = append(lines[p], l)
	}
	run := func(budget int64) (map[int32]map[string][]byte, map[string][]byte) {
		cfg := DefaultConfig()
		cfg.BatchSize, cfg.InflightBytes = 9, budget
		cfg.Model.EmitInterval = 0
		mem := newMemory(t)
		p, sink := newTestProcessor(t, cfg, mem)
		src := stream.NewMemorySource()
		total := 0
		for id := range int32(parts) {
			for _, l := range lines[id] {
				src.Append(stream.TopicObservations, id, stream.Message{Topic: stream.TopicObservations, Partition: id, Value: l})
				total++
			}
			src.Seal(stream.TopicObservations, id)
			src.Assign(stream.TopicObservations, id, 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, p.Handle) }()
		for p.Committed() < int64(total) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		for len(p.Owned()) > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if ctx.Err() != nil {
			t.Fatalf("budget %d: %d of %d committed before the safety timeout", budget, p.Committed(), total)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if h := p.inflight.held.Load(); h != 0 {
			t.Errorf("budget %d: %d bytes still held after the run", budget, h)
		}
		states := map[int32]map[string][]byte{}
		for id := range int32(parts) {
			snap, err := mem.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			states[id] = snap.Objects
		}
		return states, sink.Latest(stream.TopicEstimates)
	}
	wantState, wantEst := run(0)
	if len(wantEst) == 0 {
		t.Fatal("no estimates published")
	}
	for _, budget := range []int64{1, 0} {
		gotState, gotEst := run(budget)
		if !reflect.DeepEqual(gotState, wantState) {
			t.Errorf("budget %d: stored states differ from an unbounded budget's", budget)
		}
		if !reflect.DeepEqual(gotEst, wantEst) {
			t.Errorf("budget %d: latest estimates differ from an unbounded budget's", budget)
		}
	}
}
