package stream

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The claim: one partition of one topic for one generation of the consumer
// group, as handed to a handler by KafkaSource (kafka_source.go). It
// implements Claim: SeekTo positions it, Fetch returns what its fetcher
// (kafka_fetcher.go) fetched ahead, MarkCommitted records the offset the
// source's commit loop commits to the group, and the claim ends (Fetch
// returns ErrRevoked) when its generation ends or Run stops.

// newClaim returns the claim of topic/partition in generation gen, with no
// mark and nothing fetched.
func (s *KafkaSource) newClaim(topic string, partition int32, gen int64) *kafkaClaim {
	c := &kafkaClaim{
		src:       s,
		topic:     topic,
		partition: partition,
		gen:       gen,
		lag:       s.m.lag.WithLabelValues(topic, strconv.Itoa(int(partition))),
		read:      s.m.read.WithLabelValues(topic),
	}
	c.marked.Store(-1)
	c.fetched.Store(-1)
	return c
}

// kafkaClaim is one partition of one generation. SeekTo and Fetch are meant
// for the handler's goroutine; they are serialised by mu.
//
// Fetching is pipelined: after SeekTo, the first Fetch starts a fetcher
// goroutine that keeps one fetch request in flight and one response
// buffered ahead of the handler, so that fetching overlaps the handler's
// processing. The fetcher stops at the next SeekTo, when the claim ends,
// and after an error it cannot retry (out of range).
type kafkaClaim struct {
	src       *KafkaSource
	topic     string
	partition int32
	gen       int64
	hctx      context.Context // done when the generation ends or Run stops
	lag       prometheus.Gauge
	read      prometheus.Counter
	marked    atomic.Int64
	// stallSince is when the fetcher started waiting for a successful
	// fetch response (unix nanoseconds); 0 while no fetcher runs or the
	// fetcher waits for the handler. Read by the watchdog.
	stallSince atomic.Int64
	// fetched is the offset after the last fetched message (the next one
	// to fetch), or -1: the orphan watch's view of this member's progress.
	fetched atomic.Int64
	// groupOffset is the offset committed to the group when the
	// generation started; negative when none.
	groupOffset int64

	mu      sync.Mutex
	seeked  bool
	pos     int64     // where the next fetcher starts; negative: earliest
	buf     []Message // fetched, not yet returned
	bufHold int64     // bytes of the source's FetchBufferBytes buf holds
	fetcher *fetcher  // nil until the first Fetch after SeekTo
	err     error     // sticky fetcher error
}

var _ Claim = (*kafkaClaim)(nil)

func (c *kafkaClaim) Topic() string     { return c.topic }
func (c *kafkaClaim) Partition() int32  { return c.partition }
func (c *kafkaClaim) Generation() int64 { return c.gen }

// GroupCommitter is implemented by the claims of a KafkaSource. A consumer
// that keeps no offsets of its own (at-least-once, e.g. reading a feed) can
// resume from the group's committed offset:
//
//	off, ok := c.(stream.GroupCommitter).GroupOffset()
//	if !ok { off = -1 }
//	c.SeekTo(off)
type GroupCommitter interface {
	// GroupOffset returns the offset committed to the consumer group for
	// the partition when the claim's generation started, and whether
	// there was one.
	GroupOffset() (offset int64, ok bool)
}

var _ GroupCommitter = (*kafkaClaim)(nil)

// GroupOffset implements GroupCommitter.
func (c *kafkaClaim) GroupOffset() (int64, bool) { return c.groupOffset, c.groupOffset >= 0 }

// MarkCommitted records next for the periodic group commit. It never
// blocks; values lower than an earlier mark are ignored.
func (c *kafkaClaim) MarkCommitted(next int64) {
	for {
		old := c.marked.Load()
		if next <= old || c.marked.CompareAndSwap(old, next) {
			return
		}
	}
}

// SeekTo sets the next offset Fetch returns; negative means the earliest
// retained offset. It may be called again later (dropping buffered and
// in-flight messages). Range checks happen at the next Fetch.
func (c *kafkaClaim) SeekTo(offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if offset < 0 {
		offset = -1
	}
	c.stopFetcher()
	c.dropBuf()
	c.pos, c.seeked, c.err = offset, true, nil
	return nil
}

// dropBuf drops the buffered messages and returns their bytes to the
// source's fetch budget. Called with mu held.
func (c *kafkaClaim) dropBuf() {
	c.buf = nil
	c.src.releaseFetch(c.bufHold)
	c.bufHold = 0
}

// stopFetcher stops the claim's fetcher, if any, and waits for it; a batch
// it buffered is dropped, its bytes returned to the fetch budget. Called
// with mu held.
func (c *kafkaClaim) stopFetcher() {
	if c.fetcher != nil {
		c.fetcher.stop()
		select {
		case r := <-c.fetcher.out:
			c.src.releaseFetch(r.hold)
		default:
		}
		c.fetcher = nil
	}
}

// revokedErr is the error of a Fetch that ends because ctx or the claim
// ended: ErrRevoked (wrapped, naming the partition and generation) when the
// claim ended, ctx.Err() otherwise.
func (c *kafkaClaim) revokedErr(ctx context.Context) error {
	if c.hctx.Err() != nil {
		return fmt.Errorf("%w: %s/%d generation %d", ErrRevoked, c.topic, c.partition, c.gen)
	}
	return ctx.Err()
}

// Fetch implements Claim. Transient errors (connection loss, leader
// changes) are logged, counted and retried every cfg.RetryBackoff until the
// claim ends. An out-of-range offset returns an error wrapping ErrFatal,
// and so does every later Fetch until the next SeekTo.
func (c *kafkaClaim) Fetch(ctx context.Context, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("stream: kafka fetch: max must be positive, got %d", limit)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seeked {
		return nil, fmt.Errorf("stream: kafka fetch %s/%d: SeekTo was not called", c.topic, c.partition)
	}
	if c.hctx.Err() != nil || ctx.Err() != nil {
		return nil, c.revokedErr(ctx)
	}
	if len(c.buf) > 0 {
		return c.more(c.take(limit), limit), nil
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.fetcher == nil {
		c.fetcher = c.startFetcher(c.pos)
	}
	select {
	case r := <-c.fetcher.out:
		if r.err != nil {
			c.err = r.err
			return nil, r.err
		}
		c.buf, c.bufHold = r.msgs, r.hold
		return c.more(c.take(limit), limit), nil
	case <-ctx.Done():
		return nil, c.revokedErr(ctx)
	case <-c.hctx.Done():
		return nil, c.revokedErr(ctx)
	}
}

// more appends to out (returned by take) the messages the fetcher has
// ready, without waiting, up to limit in all: a partition with a backlog
// fills a handler's batch from several fetch responses (one fetch returns
// at most FetchMaxBytes), so that its fixed costs per batch (a state
// commit, a state write per object touched) are shared by up to limit
// messages. An error the fetcher sent is kept for the next Fetch, after
// the messages before it. Called with mu held.
func (c *kafkaClaim) more(out []Message, limit int) []Message {
	for len(out) < limit && len(c.buf) == 0 && c.err == nil && c.fetcher != nil {
		select {
		case r := <-c.fetcher.out:
			if r.err != nil {
				c.err = r.err
				return out
			}
			c.buf, c.bufHold = r.msgs, r.hold
			// out's capacity is its length (take): append copies.
			out = append(out, c.take(limit-len(out))...)
		default:
			return out
		}
	}
	return out
}

// take returns up to limit buffered messages, capped so that the handler's
// appends cannot reach the messages still buffered. When it returns the
// last of them, their bytes go back to the fetch budget: from then on
// they are the handler's. Called with mu held.
func (c *kafkaClaim) take(limit int) []Message {
	n := min(limit, len(c.buf))
	out := c.buf[:n:n]
	c.buf = c.buf[n:]
	if len(c.buf) == 0 {
		c.dropBuf()
	}
	return out
}
