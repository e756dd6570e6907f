package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unsafe"

	"github.com/segmentio/kafka-go"

	"github.com/changerate/changerate/internal/backoff"
)

// The fetcher: the goroutine that fetches one claim's partition ahead of
// its handler (kafka_claim.go). It keeps one fetch request in flight and
// one response buffered; every fetch request has a deadline (FetchMaxWait +
// FetchTimeoutSlack), after which kafka-go drops the connection and the
// retry dials a new one; transient errors (connection loss, leader
// changes, undecodable responses, failed offset lookups) are counted in
// changerate_kafka_fetch_errors_total{kind} and retried after a jittered
// RetryBackoff until the claim ends; an out-of-range offset is never reset
// but reported once, as an error wrapping ErrFatal, and ends the fetcher.
// While it waits for a fetch response, claim.stallSince tells the watchdog
// (kafka_group.go) since when.

// idleFetchBytes is the most an idle partition's long poll asks for (and
// takes of the fetch budget).
const idleFetchBytes = 64 << 10

// fetcher is a running fetchLoop: out carries its batches (or its final
// error), cancel stops it and done is closed when it has returned.
type fetcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	out    chan fetchResult
}

// fetchResult is one non-empty batch of messages in offset order, or the
// error that ended the fetcher. hold is the bytes of the source's fetch
// budget the messages hold (see KafkaConfig.FetchBufferBytes).
type fetchResult struct {
	msgs []Message
	hold int64
	err  error
}

// startFetcher starts a fetcher for c from pos (negative: the earliest
// retained offset). It stops when c's handler context ends or stop is
// called.
func (c *kafkaClaim) startFetcher(pos int64) *fetcher {
	fctx, cancel := context.WithCancel(c.hctx)
	f := &fetcher{cancel: cancel, done: make(chan struct{}), out: make(chan fetchResult, 1)}
	go func() {
		defer close(f.done)
		c.fetchLoop(fctx, pos, f.out)
	}()
	return f
}

// stop cancels the fetcher and waits for it to return; a batch it buffered
// is dropped.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// ctx ends or a non-retriable error (sent to out) occurs.
func (c *kafkaClaim) fetchLoop(ctx context.Context, pos int64, out chan<- fetchResult) {
	cfg := &c.src.k.cfg
	c.stallSince.Store(time.Now().UnixNano())
	defer c.stallSince.Store(0)
	busy := false // the last fetch returned messages
	lastN := 0    // messages the last fetch returned: decode's first guess
	for ctx.Err() == nil {
		if pos < 0 {
			first, _, err := c.bounds(ctx)
			if err != nil {
				if c.retryWait(ctx, "list_offsets", pos, err) != nil {
					return
				}
				continue
			}
			pos = first
		}
		// A busy partition lingers for FetchMinBytes, an idle one waits for
		// its first message (KafkaConfig.FetchLinger). The response's
		// bytes are taken from the source's fetch budget before the
		// request is sent: FetchMaxBytes for a busy partition; an idle
		// one's long poll asks for at most idleFetchBytes, so that idle
		// partitions do not hold the budget that busy ones need (a
		// broker returns at least one record batch whatever the limit).
		minBytes, maxWait, maxBytes := 1, cfg.FetchMaxWait, min(int64(cfg.FetchMaxBytes), idleFetchBytes)
		if busy {
			minBytes, maxWait, maxBytes = cfg.FetchMinBytes, cfg.FetchLinger, int64(cfg.FetchMaxBytes)
		}
		hold, err := c.src.acquireFetch(ctx, maxBytes)
		if err != nil {
			return
		}
		start := time.Now()
		// Every fetch has a deadline (the broker's MaxWait plus a slack):
		// a broker or connection that never answers costs one bounded
		// wait, then kafka-go drops the connection and the retry dials a
		// new one.
		rctx, cancel := context.WithTimeout(ctx, maxWait+cfg.FetchTimeoutSlack)
		resp, err := c.src.k.client.Fetch(rctx, &kafka.FetchRequest{
			Topic:     c.topic,
			Partition: int(c.partition),
			Offset:    pos,
			MinBytes:  int64(minBytes),
			MaxBytes:  maxBytes,
			MaxWait:   maxWait,
		})
		cancel()
		c.src.m.latency.Observe(time.Since(start).Seconds())
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err != nil {
			c.src.releaseFetch(hold)
			if ctx.Err() != nil {
				return
			}
			if isTimeout(err) {
				c.src.wd.m.timeouts.WithLabelValues("fetch").Inc()
				err = fmt.Errorf("no response within %v (fetch max wait + slack); retrying on a new connection: %w",
					cfg.FetchMaxWait+cfg.FetchTimeoutSlack, err)
			}
			if errors.Is(err, kafka.OffsetOutOfRange) {
				c.src.m.fetchErrors.WithLabelValues(c.topic, "offset_out_of_range").Inc()
				c.src.log.Error("offset out of range; not resetting", "topic", c.topic, "partition", c.partition, "offset", pos)
				select {
				case out <- fetchResult{err: c.outOfRange(ctx, pos, err)}:
				case <-ctx.Done():
				}
				return
			}
			if c.retryWait(ctx, "fetch", pos, err) != nil {
				return
			}
			continue
		}
		c.stallSince.Store(time.Now().UnixNano()) // the broker answered
		msgs, size, err := c.decode(resp.Records, pos, lastN)
		hold = c.src.resizeFetch(hold, size)
		if err != nil || len(msgs) == 0 {
			c.src.releaseFetch(hold)
		}
		if err != nil {
			if c.retryWait(ctx, "decode", pos, err) != nil {
				return
			}
			continue
		}
		busy, lastN = len(msgs) > 0, len(msgs)
		if busy {
			pos = msgs[len(msgs)-1].Offset + 1
		}
		c.lag.Set(float64(max(resp.HighWatermark-pos, 0)))
		c.fetched.Store(pos)
		if len(msgs) == 0 {
			if resp.HighWatermark > pos {
				// Only records we skip (control batches, or a batch
				// truncated by FetchMaxBytes): do not spin.
				c.src.log.Warn("fetch below the high watermark returned no records", "topic", c.topic,
					"partition", c.partition, "offset", pos, "high_watermark", resp.HighWatermark)
				if sleepCtx(ctx, cfg.RetryBackoff) != nil {
					return
				}
			}
			continue
		}
		c.src.m.batchLen.Observe(float64(len(msgs)))
		c.read.Add(float64(len(msgs)))
		c.stallSince.Store(0) // waiting for the handler is no stall
		select {
		case out <- fetchResult{msgs: msgs, hold: hold}:
		case <-ctx.Done():
			c.src.releaseFetch(hold)
			return
		}
		c.stallSince.Store(time.Now().UnixNano())
	}
}

// decode converts the records at or after pos and returns them with the
// bytes they hold (slabs and message headers). Keys and values are copied
// into shared slabs (one allocation per slab, not per message) whose sizes
// double from minSlab to maxSlab, so that a small fetch (a live partition
// read every few milliseconds) does not hold a large slab; each is capped
// (s[i:j:j]) so appending to one cannot clobber another. The message
// slice starts with room for guess messages (the previous fetch's count:
// a busy partition's fetches are alike), so that it is not regrown and
// copied several times per fetch.
func (c *kafkaClaim) decode(rr kafka.RecordReader, pos int64, guess int) ([]Message, int64, error) {
	msgs := make([]Message, 0, guess)
	var slab []byte
	var size int64
	copyOut := func(b kafka.Bytes) ([]byte, error) {
		if b == nil {
			return nil, nil
		}
		n := b.Len()
		if n > cap(slab)-len(slab) {
			next := min(max(2*cap(slab), minSlab), maxSlab)
			slab = make([]byte, 0, max(n, next))
			size += int64(cap(slab))
		}
		start := len(slab)
		slab = slab[:start+n]
		if _, err := io.ReadFull(b, slab[start:]); err != nil {
			return nil, err
		}
		return slab[start : start+n : start+n], nil
	}
	for {
		r, err := rr.ReadRecord()
		if err == io.EOF {
			return msgs, size + int64(cap(msgs))*int64(unsafe.Sizeof(Message{})), nil
		}
		if err != nil {
			return nil, 0, err
		}
		if r.Offset < pos {
			closeBytes(r.Key, r.Value)
			continue
		}
		key, err := copyOut(r.Key)
		if err != nil {
			closeBytes(r.Key, r.Value)
			return nil, 0, err
		}
		value, err := copyOut(r.Value)
		closeBytes(r.Key, r.Value)
		if err != nil {
			return nil, 0, err
		}
		msgs = append(msgs, Message{
			Topic:     c.topic,
			Partition: c.partition,
			Offset:    r.Offset,
			Key:       key,
			Value:     value,
			Time:      r.Time,
		})
	}
}

// Sizes of decode's slabs.
const (
	minSlab = 4 << 10
	maxSlab = 64 << 10
)

// closeBytes closes a record's key and value once they are copied out:
// they reference kafka-go's 64 KiB response pages, which go back to its
// pool only when every reference is closed (otherwise every response
// allocates new pages, and the garbage collector reclaims them).
func closeBytes(bs ...kafka.Bytes) {
	for _, b := range bs {
		if b != nil {
			_ = b.Close()
		}
	}
}

// fetchErrorKinds are the kind labels of changerate_kafka_fetch_errors_total.
var fetchErrorKinds = []string{"fetch", "decode", "list_offsets", "offset_out_of_range"}

// retryWait counts and logs a transient error of kind and waits a jittered
// RetryBackoff (members retry apart); it returns ctx's error if ctx ends
// first.
func (c *kafkaClaim) retryWait(ctx context.Context, kind string, pos int64, err error) error {
	c.src.m.fetchErrors.WithLabelValues(c.topic, kind).Inc()
	c.src.log.Warn("kafka "+kind+" failed; retrying", "topic", c.topic, "partition", c.partition,
		"offset", pos, "err", err)
	return sleepCtx(ctx, backoff.New(c.src.k.cfg.RetryBackoff, 0).Next()) // jittered: members retry apart
}

// bounds returns the log start offset and the high watermark.
func (c *kafkaClaim) bounds(ctx context.Context) (first, last int64, err error) {
	resp, err := c.src.k.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{c.topic: {
			kafka.FirstOffsetOf(int(c.partition)),
			kafka.LastOffsetOf(int(c.partition)),
		}},
	})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range resp.Topics[c.topic] {
		if p.Partition == int(c.partition) {
			if p.Error != nil {
				return 0, 0, p.Error
			}
			return p.FirstOffset, p.LastOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("no offsets for %s/%d in the response", c.topic, c.partition)
}

// outOfRange returns the fatal error of a fetch at pos that the broker
// refused as out of range, with the partition's current bounds when they
// can be read.
func (c *kafkaClaim) outOfRange(ctx context.Context, pos int64, cause error) error {
	first, last, err := c.bounds(ctx)
	if err != nil {
		return fmt.Errorf("stream: kafka fetch %s/%d: offset %d out of range: %w: %w", c.topic, c.partition, pos, cause, ErrFatal)
	}
	return fmt.Errorf("stream: kafka fetch %s/%d: offset %d out of range [%d, %d]: %w: %w", c.topic, c.partition, pos, first, last, cause, ErrFatal)
}

// acquireFetch waits until n bytes (at most the whole FetchBufferBytes) of
// the source's fetch budget are free and takes them; it returns the amount
// taken, or ctx's error.
func (s *KafkaSource) acquireFetch(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 1), s.k.cfg.FetchBufferBytes)
	if !s.fetchBuf.TryAcquire(n) {
		if err := s.fetchBuf.Acquire(ctx, n); err != nil {
			return 0, err
		}
	}
	s.m.fetchBuffered.Add(float64(n))
	return n, nil
}

// resizeFetch turns a hold of held bytes into one of want without waiting:
// a surplus is released, a shortfall taken only if free (the budget is
// then exceeded by what one response holds beyond FetchMaxBytes). It
// returns the new hold.
func (s *KafkaSource) resizeFetch(held, want int64) int64 {
	want = min(max(want, 1), s.k.cfg.FetchBufferBytes)
	switch {
	case want < held:
		s.releaseFetch(held - want)
		return want
	case want > held && s.fetchBuf.TryAcquire(want-held):
		s.m.fetchBuffered.Add(float64(want - held))
		return want
	}
	return held
}

// releaseFetch returns n bytes of the fetch budget.
func (s *KafkaSource) releaseFetch(n int64) {
	if n > 0 {
		s.m.fetchBuffered.Sub(float64(n))
		s.fetchBuf.Release(n)
	}
}
