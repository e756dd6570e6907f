package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/changerate/changerate/internal/backoff"
)

// KafkaSource is a Source reading topics as a member of a Kafka consumer
// group, with kafka-go's ConsumerGroup API: every generation of the group
// assigns this member a set of partitions (a claim each); each claim is
// handled in its own goroutine and fetches with plain fetch requests from
// the offset its handler seeks to. The group's committed offsets are never
// used as a starting point (Claim.SeekTo decides), and the source never
// silently resets an offset that is out of range: Fetch fails with an
// error wrapping ErrFatal instead.
//
// Generations: when the group rebalances (a member joins, leaves or misses
// its session timeout, or a topic's partition count changes), kafka-go ends
// the generation, the contexts of all this member's handlers are cancelled
// and their Fetch calls return ErrRevoked; only after every handler has
// returned does the member rejoin and obtain the next generation, whose ID
// (Claim.Generation) is larger. A member that stopped heart-beating (for
// example a paused process) learns about it only at its next heartbeat, so
// fencing of writes must rely on Claim.Generation and on the offset stored
// with the state (compare-and-set), not on the context.
//
// Fetching is pipelined per claim (one fetch request in flight and one
// response buffered ahead of the handler, cfg.FetchMaxBytes each). The Key
// and Value of fetched messages share backing arrays with other messages
// of the same fetch; they are capped, so appending to them copies.
//
// Bounds (kafka_group.go, kafka_orphans.go): every fetch has a deadline
// (FetchMaxWait + FetchTimeoutSlack) and is retried on a new connection; a
// watchdog restarts the group with a fresh member ID when no generation
// starts within JoinTimeout or an owned partition gets no fetch response
// within FetchStallTimeout; a member rejoins when another member's
// partition makes no progress within OrphanTimeout.
//
// Metrics (on the Registerer given to NewKafkaSource): consumer lag per
// partition (high watermark − next offset to fetch), fetch latency, messages
// per fetch request, messages read, fetch errors by kind, generation,
// generations joined, owned partitions, commit errors, group restarts by
// reason and abandoned requests.
//
// A KafkaSource runs one Run at a time; its methods are safe for concurrent
// use.
type KafkaSource struct {
	k      *kafkaClients
	topics []string
	log    *slog.Logger
	m      *sourceMetrics

	current atomic.Int64 // generation in progress; 0: none
	owned   atomic.Int64 // claims in the current generation
	wd      watchdogState

	mu      sync.Mutex
	closed  bool
	running bool
	cancel  context.CancelCauseFunc
	done    chan struct{}
}

var _ Source = (*KafkaSource)(nil)

// errSourceClosed is the cancellation cause used by Close.
var errSourceClosed = fmt.Errorf("stream: kafka source closing: %w", ErrClosed)

// NewKafkaSource returns a source consuming topics in the consumer group
// cfg.GroupID. It does not connect until Run. Metrics are registered on reg
// (nil: none); a nil logger discards logs.
func NewKafkaSource(cfg KafkaConfig, topics []string, logger *slog.Logger, reg prometheus.Registerer) (*KafkaSource, error) {
	if len(topics) == 0 {
		return nil, errors.New("stream: kafka source: no topics")
	}
	for _, t := range topics {
		if t == "" {
			return nil, errors.New("stream: kafka source: empty topic name")
		}
	}
	k, err := newKafkaClients(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newSourceMetrics(reg)
	if err != nil {
		return nil, err
	}
	wm, err := newWatchdogMetrics(reg)
	if err != nil {
		return nil, err
	}
	for _, t := range topics { // exported at 0 from the start (rate() and alerts see a series)
		for _, kind := range fetchErrorKinds {
			m.fetchErrors.WithLabelValues(t, kind)
		}
	}
	return &KafkaSource{
		k:      k,
		topics: slices.Clone(topics),
		log:    logger.With("component", "kafka-source", "group", k.cfg.GroupID),
		m:      m,
		wd:     watchdogState{m: wm},
	}, nil
}

// Run joins the group and calls handle once per assigned partition and
// generation, each in its own goroutine, until ctx is done, Close is
// called, or a handler returns an error wrapping ErrFatal. The handler's
// context is cancelled when the generation ends (rebalance) or Run stops.
//
// A handler that returns nil before its context is cancelled leaves its
// partition idle until the next rebalance. A handler that returns any other
// error (not wrapping ErrFatal) is logged; after cfg.JoinGroupBackoff the
// member leaves the generation and rejoins, so the partition is handled
// again (by this member or another one).
//
// When stopping, Run waits for every handler to return, commits the marked
// offsets, leaves the group (waiting at most cfg.CloseTimeout for that) and
// returns: the fatal handler error, ErrClosed after Close, or ctx.Err()
// when ctx was cancelled. Only one Run may be active at a time.
func (s *KafkaSource) Run(ctx context.Context, handle func(ctx context.Context, c Claim) error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.running {
		s.mu.Unlock()
		return errors.New("stream: kafka source: Run is already active")
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	s.running, s.cancel, s.done = true, cancel, done
	s.mu.Unlock()
	defer func() {
		cancel(nil)
		s.mu.Lock()
		s.running, s.cancel, s.done = false, nil, nil
		s.mu.Unlock()
		close(done)
	}()

	// Each pass is one incarnation of the consumer group (a kafka-go
	// ConsumerGroup, a fresh member ID); the watchdog ends an incarnation
	// that does not get a generation or whose partitions stop fetching
	// (kafka_group.go).
	var running sync.WaitGroup // handlers started in generations
	for runCtx.Err() == nil {
		if err := s.runGroup(runCtx, cancel, handle, &running); err != nil {
			return err
		}
	}
	s.m.generation.Set(0)
	s.current.Store(0)
	s.owned.Store(0)

	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, ErrFatal):
		return cause
	case errors.Is(cause, errSourceClosed):
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return cause
}

// Status reports the consumer-group generation this member is in and how
// many partitions it was assigned in it; generation 0 means Run is not
// active or has not joined yet (for readiness probes). During a rebalance
// it reports the generation that is ending.
func (s *KafkaSource) Status() (generation int64, partitions int) {
	return s.current.Load(), int(s.owned.Load())
}

// Close stops an active Run (which then returns ErrClosed), waits for it and
// releases the connections. Run after Close returns ErrClosed.
func (s *KafkaSource) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel(errSourceClosed)
		<-done
	}
	s.k.close()
	return nil
}

func (s *KafkaSource) startGeneration(runCtx context.Context, stopRun context.CancelCauseFunc, gen *kafka.Generation,
	handle func(context.Context, Claim) error, running *sync.WaitGroup) {
	// runCtx is the group incarnation's context (kafka_group.go): done when
	// Run stops or the watchdog restarts the group.
	// start runs fn in the generation. kafka-go ends a generation when any
	// of its functions returns, and then rejoins unless the group is closed
	// by then; when Run is stopping, the wrapper therefore waits for
	// group.Close to end the generation, so the member leaves instead of
	// rejoining. Handlers are counted in running.
	start := func(fn func(gctx context.Context), handler bool) {
		if handler {
			running.Add(1)
		}
		gen.Start(func(gctx context.Context) {
			fn(gctx)
			if handler {
				running.Done()
			}
			if runCtx.Err() != nil {
				<-gctx.Done()
			}
		})
	}
	s.m.generation.Set(float64(gen.ID))
	s.m.rebalances.Inc()
	s.current.Store(int64(gen.ID))
	var claims []*kafkaClaim
	for _, topic := range s.topics {
		for _, pa := range gen.Assignments[topic] {
			c := s.newClaim(topic, int32(pa.ID), int64(gen.ID))
			c.groupOffset = pa.Offset // kafka-go: FirstOffset (-2) when none
			claims = append(claims, c)
		}
	}
	s.owned.Store(int64(len(claims)))
	s.wd.generationStarted(claims)
	start(func(gctx context.Context) { <-gctx.Done(); s.wd.generationEnded() }, false)
	owned := make([]string, len(claims))
	for i, c := range claims {
		owned[i] = c.topic + "/" + strconv.Itoa(int(c.partition))
	}
	s.log.Info("consumer group: generation started", "generation", gen.ID, "member", gen.MemberID, "partitions", owned)
	start(func(gctx context.Context) { s.watchPartitions(runCtx, gctx, gen.ID) }, false)
	start(func(gctx context.Context) { s.watchOrphans(runCtx, gctx, gen.ID, claims) }, false)
	if len(claims) == 0 {
		return
	}
	for _, c := range claims {
		start(func(gctx context.Context) { s.runClaim(runCtx, stopRun, gctx, c, handle) }, true)
	}
	start(func(gctx context.Context) { s.commitLoop(gctx, gen, claims) }, false)
}

func (s *KafkaSource) runClaim(runCtx context.Context, stopRun context.CancelCauseFunc, gctx context.Context, c *kafkaClaim, handle func(context.Context, Claim) error) {
	hctx, hcancel := context.WithCancelCause(runCtx)
	stop := context.AfterFunc(gctx, func() { hcancel(ErrRevoked) })
	defer stop()
	defer hcancel(nil)
	c.gctx, c.hctx = gctx, hctx
	s.m.claims.Inc()
	defer s.m.claims.Dec()
	defer s.m.lag.DeleteLabelValues(c.topic, strconv.Itoa(int(c.partition)))

	err := handle(hctx, c)
	c.mu.Lock()
	c.stopFetcher()
	c.mu.Unlock()
	log := s.log.With("topic", c.topic, "partition", c.partition, "generation", c.gen)
	switch {
	case hctx.Err() != nil && (err == nil || errors.Is(err, ErrRevoked) || errors.Is(err, context.Canceled)):
		log.Debug("claim ended", "cause", context.Cause(hctx))
	case err == nil:
		log.Warn("handler returned before its partition was revoked; partition idle until the next rebalance")
		<-hctx.Done()
	case errors.Is(err, ErrFatal):
		log.Error("handler failed fatally; stopping the source", "err", err)
		stopRun(err)
	default:
		log.Error("handler failed; rejoining the group", "err", err)
		t := time.NewTimer(s.k.cfg.JoinGroupBackoff)
		select {
		case <-t.C:
		case <-hctx.Done():
		}
		t.Stop()
		// Returning ends the generation: kafka-go rejoins the group.
	}
}

// watchPartitions returns (ending the generation, so that the member rejoins
// and the group is rebalanced) when the partition count of a topic differs
// from the one seen at the generation's start; a missing topic counts 0.
// Metadata errors are logged and retried at the next tick. It also returns
// when runCtx is done.
func (s *KafkaSource) watchPartitions(runCtx, gctx context.Context, gen int32) {
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	stop := context.AfterFunc(gctx, cancel)
	defer stop()
	var base map[string]int
	t := time.NewTicker(s.k.cfg.MetadataInterval)
	defer t.Stop()
	for {
		counts, err := s.partitionCounts(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("partition watch: metadata failed", "err", err)
		case base == nil:
			base = counts
		default:
			for topic, n := range counts {
				if n != base[topic] {
					s.log.Info("partition count changed; rejoining the group", "topic", topic,
						"before", base[topic], "after", n, "generation", gen)
					return
				}
			}
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

func (s *KafkaSource) partitionCounts(ctx context.Context) (map[string]int, error) {
	meta, err := s.k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: s.topics})
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(s.topics))
	for _, t := range s.topics {
		counts[t] = 0
	}
	for _, t := range meta.Topics {
		if t.Error == nil {
			counts[t.Name] = len(t.Partitions)
		} else if !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
	}
	return counts, nil
}

// commitLoop commits the offsets marked by the generation's claims every
// CommitInterval and once more when the generation ends. Commit errors are
// counted and logged; they never end the generation.
func (s *KafkaSource) commitLoop(gctx context.Context, gen *kafka.Generation, claims []*kafkaClaim) {
	last := make([]int64, len(claims))
	for i := range last {
		last[i] = -1
	}
	commit := func() {
		offsets := map[string]map[int]int64{}
		var idx []int
		for i, c := range claims {
			v := c.marked.Load()
			if v < 0 || v == last[i] {
				continue
			}
			if offsets[c.topic] == nil {
				offsets[c.topic] = map[int]int64{}
			}
			offsets[c.topic][int(c.partition)] = v
			idx = append(idx, i)
		}
		if len(idx) == 0 {
			return
		}
		if err := gen.CommitOffsets(offsets); err != nil {
			s.m.commitErrs.Inc()
			s.log.Debug("offset commit failed (lag monitoring only)", "generation", gen.ID, "err", err)
			return
		}
		for _, i := range idx {
			last[i] = offsets[claims[i].topic][int(claims[i].partition)]
		}
	}
	t := time.NewTicker(s.k.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			commit()
		case <-gctx.Done():
			commit()
			return
		}
	}
}

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
	gctx      context.Context // done when the generation ends
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
	fetcher *fetcher  // nil until the first Fetch after SeekTo
	err     error     // sticky fetcher error
}

type fetcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	out    chan fetchResult
}

type fetchResult struct {
	msgs []Message
	err  error
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
	c.pos, c.seeked, c.buf, c.err = offset, true, nil, nil
	return nil
}

// stopFetcher cancels the fetcher and waits for it. Called with mu held.
func (c *kafkaClaim) stopFetcher() {
	if f := c.fetcher; f != nil {
		f.cancel()
		<-f.done
		c.fetcher = nil
	}
}

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
		return c.take(limit), nil
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.fetcher == nil {
		fctx, cancel := context.WithCancel(c.hctx)
		f := &fetcher{cancel: cancel, done: make(chan struct{}), out: make(chan fetchResult, 1)}
		go func(pos int64) {
			defer close(f.done)
			c.fetchLoop(fctx, pos, f.out)
		}(c.pos)
		c.fetcher = f
	}
	select {
	case r := <-c.fetcher.out:
		if r.err != nil {
			c.err = r.err
			return nil, r.err
		}
		c.buf = r.msgs
		return c.take(limit), nil
	case <-ctx.Done():
		return nil, c.revokedErr(ctx)
	case <-c.hctx.Done():
		return nil, c.revokedErr(ctx)
	}
}

// fetchLoop fetches from pos on and sends non-empty batches to out until
// ctx ends or a non-retriable error (sent to out) occurs.
func (c *kafkaClaim) fetchLoop(ctx context.Context, pos int64, out chan<- fetchResult) {
	cfg := &c.src.k.cfg
	c.stallSince.Store(time.Now().UnixNano())
	defer c.stallSince.Store(0)
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
		start := time.Now()
		// Every fetch has a deadline (the broker's MaxWait plus a slack):
		// a broker or connection that never answers costs one bounded
		// wait, then kafka-go drops the connection and the retry dials a
		// new one.
		rctx, cancel := context.WithTimeout(ctx, cfg.FetchMaxWait+cfg.FetchTimeoutSlack)
		resp, err := c.src.k.client.Fetch(rctx, &kafka.FetchRequest{
			Topic:     c.topic,
			Partition: int(c.partition),
			Offset:    pos,
			MinBytes:  1,
			MaxBytes:  int64(cfg.FetchMaxBytes),
			MaxWait:   cfg.FetchMaxWait,
		})
		cancel()
		c.src.m.latency.Observe(time.Since(start).Seconds())
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err != nil {
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
		msgs, err := c.decode(resp.Records, pos)
		if err != nil {
			if c.retryWait(ctx, "decode", pos, err) != nil {
				return
			}
			continue
		}
		if len(msgs) > 0 {
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
		case out <- fetchResult{msgs: msgs}:
		case <-ctx.Done():
			return
		}
		c.stallSince.Store(time.Now().UnixNano())
	}
}

func (c *kafkaClaim) take(limit int) []Message {
	n := min(limit, len(c.buf))
	out := c.buf[:n:n]
	c.buf = c.buf[n:]
	if len(c.buf) == 0 {
		c.buf = nil
	}
	return out
}

// decode converts the records at or after pos. Keys and values are
// copied into shared slabs (one allocation per ~64 KiB instead of two per
// message); each is capped (s[i:j:j]) so appending to one cannot clobber
// another.
func (c *kafkaClaim) decode(rr kafka.RecordReader, pos int64) ([]Message, error) {
	var msgs []Message
	var slab []byte
	copyOut := func(b kafka.Bytes) ([]byte, error) {
		if b == nil {
			return nil, nil
		}
		n := b.Len()
		if n > cap(slab)-len(slab) {
			slab = make([]byte, 0, max(n, 64<<10))
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
			return msgs, nil
		}
		if err != nil {
			return nil, err
		}
		if r.Offset < pos {
			continue
		}
		key, err := copyOut(r.Key)
		if err != nil {
			return nil, err
		}
		value, err := copyOut(r.Value)
		if err != nil {
			return nil, err
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

// fetchErrorKinds are the kind labels of changerate_kafka_fetch_errors_total.
var fetchErrorKinds = []string{"fetch", "decode", "list_offsets", "offset_out_of_range"}

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

func (c *kafkaClaim) outOfRange(ctx context.Context, pos int64, cause error) error {
	first, last, err := c.bounds(ctx)
	if err != nil {
		return fmt.Errorf("stream: kafka fetch %s/%d: offset %d out of range: %w: %w", c.topic, c.partition, pos, cause, ErrFatal)
	}
	return fmt.Errorf("stream: kafka fetch %s/%d: offset %d out of range [%d, %d]: %w: %w", c.topic, c.partition, pos, first, last, cause, ErrFatal)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
