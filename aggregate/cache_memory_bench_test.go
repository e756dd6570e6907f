package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// nullStore is a state.Store that keeps nothing: every object is new, every
// commit succeeds. It isolates the Processor's own memory.
type nullStore struct{}

func (nullStore) Claim(context.Context, state.Partition, int64) (int64, error)    { return -1, nil }
func (nullStore) Takeover(context.Context, state.Partition, int64) (int64, error) { return -1, nil }
func (nullStore) Get(_ context.Context, _ state.Partition, objects []string, dst [][]byte) ([][]byte, error) {
	for range objects {
		dst = append(dst, nil)
	}
	return dst, nil
}
func (nullStore) Commit(context.Context, state.Partition, int64, int64, int64, []state.Write) error {
	return nil
}
func (nullStore) ExpiryGrace() time.Duration { return 0 }
func (nullStore) Close() error               { return nil }

// heldClaim serves msgs, then reports on drained and waits for the end of
// its context (so that the handler, and its cache, stay alive).
type heldClaim struct {
	msgs    []stream.Message
	next    int
	drained chan struct{}
}

func (c *heldClaim) Topic() string       { return stream.TopicObservations }
func (c *heldClaim) Partition() int32    { return 0 }
func (c *heldClaim) Generation() int64   { return 1 }
func (c *heldClaim) SeekTo(int64) error  { return nil }
func (c *heldClaim) MarkCommitted(int64) {}
func (c *heldClaim) Fetch(ctx context.Context, max int) ([]stream.Message, error) {
	if c.next >= len(c.msgs) {
		select {
		case <-c.drained:
		default:
			close(c.drained)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	end := min(c.next+max, len(c.msgs))
	out := c.msgs[c.next:end]
	c.next = end
	return out, nil
}

// BenchmarkProcessorCacheMemory runs one partition of the Processor (default
// configuration, unbounded cache) over crawl observations of 1,000,000
// objects (one visit each, as a live crawl's first sight of its URLs) with a
// store that keeps nothing, and reports the Go heap in use after a GC
// divided by the objects the cache then holds (issue 13: at most 400 bytes
// per cached object), with the input messages released. Run it with
// -benchtime 1x.
func BenchmarkProcessorCacheMemory(b *testing.B) {
	const n = 1000000
	for b.Loop() {
		b.StopTimer()
		msgs := make([]stream.Message, n)
		for i := range msgs {
			name := fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
			o := records.Observation{Object: name, Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: records.KindVisit,
				Digest: fmt.Sprintf("sha1:%032d", i%7), Status: 200, Source: "/crawl.log@1", Offset: int64(i) * 200}
			v, err := json.Marshal(&o)
			if err != nil {
				b.Fatal(err)
			}
			msgs[i] = stream.Message{Topic: stream.TopicObservations, Offset: int64(i), Value: v}
		}
		cfg := DefaultConfig()
		cfg.CacheObjects, cfg.CacheBytes = 0, 0
		p, err := NewProcessor(noFutureCheck(cfg), nullStore{}, discardSink{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), func() time.Time { return t0 })
		if err != nil {
			b.Fatal(err)
		}
		claim := &heldClaim{msgs: msgs, drained: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		b.StartTimer()
		go func() { done <- p.Handle(ctx, claim) }()
		<-claim.drained
		b.StopTimer()
		claim.msgs, msgs = nil, nil // the input is the source's, not the cache's
		for p.Committed() < n {
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		cached := p.budget.used.Load()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ms1.HeapInuse)/n, "heapinuse-B/object")
		b.ReportMetric(float64(cached)/n, "accounted-B/object")
		b.StartTimer()
	}
}
