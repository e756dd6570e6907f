package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/semaphore"
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
	// fetchBuf is cfg.FetchBufferBytes, shared by the claims' fetchers
	// (kafka_fetcher.go).
	fetchBuf *semaphore.Weighted

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
		m.read.WithLabelValues(t)
		for _, kind := range fetchErrorKinds {
			m.fetchErrors.WithLabelValues(t, kind)
		}
	}
	return &KafkaSource{
		k:        k,
		topics:   slices.Clone(topics),
		log:      logger.With("component", "kafka-source", "group", k.cfg.GroupID),
		m:        m,
		wd:       watchdogState{m: wm},
		fetchBuf: semaphore.NewWeighted(k.cfg.FetchBufferBytes),
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

// startGeneration starts, in generation gen, one handler goroutine per
// assigned partition (runClaim), the commit loop, the partition-count watch
// and the orphan watch. runCtx is the group incarnation's context
// (kafka_group.go): done when Run stops or the watchdog restarts the group.
// stopRun stops Run (a fatal handler error); handler goroutines are counted
// in running.
func (s *KafkaSource) startGeneration(runCtx context.Context, stopRun context.CancelCauseFunc, gen *kafka.Generation,
	handle func(context.Context, Claim) error, running *sync.WaitGroup) {
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

// runClaim runs handle for claim c until it returns. The handler's context
// ends when the generation ends (gctx; cause ErrRevoked) or runCtx ends. A handler error wrapping ErrFatal stops Run; any other error
// ends the generation after JoinGroupBackoff (the member rejoins); a nil
// return before revocation leaves the partition idle until the generation
// ends.
func (s *KafkaSource) runClaim(runCtx context.Context, stopRun context.CancelCauseFunc, gctx context.Context, c *kafkaClaim, handle func(context.Context, Claim) error) {
	hctx, hcancel := context.WithCancelCause(runCtx)
	stop := context.AfterFunc(gctx, func() { hcancel(ErrRevoked) })
	defer stop()
	defer hcancel(nil)
	c.hctx = hctx
	s.m.claims.Inc()
	defer s.m.claims.Dec()
	defer s.m.lag.DeleteLabelValues(c.topic, strconv.Itoa(int(c.partition)))

	err := handle(hctx, c)
	c.mu.Lock()
	c.stopFetcher()
	c.dropBuf()
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
