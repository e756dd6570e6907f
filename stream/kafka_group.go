package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// Group incarnations and the watchdog.
//
// kafka-go's ConsumerGroup bounds each group request (JoinGroup by
// RequestTimeout + RebalanceTimeout, SyncGroup by RequestTimeout +
// SessionTimeout), but nothing bounds the whole: a coordinator that keeps
// a member that died during the join (see third_party/kfake/PATCH.md for
// such a coordinator), a generation that is never completed, or a connection that stays half
// open can leave a member without partitions, or owning partitions it
// cannot fetch, for ever. KafkaSource therefore runs the group in
// incarnations: each is one kafka-go ConsumerGroup, joined with a fresh
// member ID, and a watchdog ends the incarnation (handlers drain, the group
// is closed, at most CloseTimeout is waited for leaving it) and starts the
// next one when
//
//   - no generation has started for JoinTimeout since the incarnation began
//     or the previous generation ended (reason "join_timeout"), or
//   - an owned partition's fetcher has had no successful fetch response for
//     FetchStallTimeout while it was fetching (reason "fetch_stall"; every
//     fetch request is also bounded by FetchMaxWait + FetchTimeoutSlack and
//     retried on a new connection).
//
// Each restart is counted in changerate_kafka_group_restarts_total{reason}
// and logged at warning level; abandoned requests are counted in
// changerate_kafka_request_timeouts_total{request}.

// Watchdog restart reasons (label values of
// changerate_kafka_group_restarts_total).
const (
	RestartJoinTimeout = "join_timeout"
	RestartFetchStall  = "fetch_stall"
)

type watchdogMetrics struct {
	restarts       *prometheus.CounterVec
	timeouts       *prometheus.CounterVec
	produceRetries *prometheus.CounterVec
}

func newWatchdogMetrics(reg prometheus.Registerer) (*watchdogMetrics, error) {
	var m watchdogMetrics
	var err error
	if m.restarts, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_group_restarts_total",
		Help: "Consumer-group incarnations or generations ended by the watchdogs, by reason: join_timeout (no generation within JoinTimeout), fetch_stall (an owned partition without a fetch response within FetchStallTimeout), orphaned_partition (another member's partition without progress within OrphanTimeout: rejoin).",
	}, []string{"reason"})); err != nil {
		return nil, err
	}
	if m.timeouts, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_request_timeouts_total",
		Help: "Kafka requests abandoned at their deadline and retried on a new connection, by request.",
	}, []string{"request"})); err != nil {
		return nil, err
	}
	if m.produceRetries, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_produce_retries_total",
		Help: "Produce requests of the sink retried after a transient failure (connection lost, timeout, leader change), by topic.",
	}, []string{"topic"})); err != nil {
		return nil, err
	}
	for _, r := range []string{RestartJoinTimeout, RestartFetchStall, RestartOrphaned} {
		m.restarts.WithLabelValues(r)
	}
	m.timeouts.WithLabelValues("fetch")
	return &m, nil
}

// watchdogState is what the watchdog watches: whether a generation is in
// progress, since when the member has been without one, and the claims of
// the current generation.
type watchdogState struct {
	m *watchdogMetrics

	mu        sync.Mutex
	inGen     bool
	waitSince time.Time // start of the wait for a generation
	claims    []*kafkaClaim
	restart   context.CancelCauseFunc // ends the current incarnation
}

// restartGroup ends the current incarnation of the group for reason
// (counted; the caller logs why).
func (w *watchdogState) restartGroup(reason, detail string) {
	w.mu.Lock()
	restart := w.restart
	w.mu.Unlock()
	w.m.restarts.WithLabelValues(reason).Inc()
	if restart != nil {
		restart(fmt.Errorf("%w: %s: %s", errRestart, reason, detail))
	}
}

func (w *watchdogState) reset(now time.Time) {
	w.mu.Lock()
	w.inGen, w.waitSince, w.claims = false, now, nil
	w.mu.Unlock()
}

func (w *watchdogState) generationStarted(claims []*kafkaClaim) {
	w.mu.Lock()
	w.inGen, w.claims = true, claims
	w.mu.Unlock()
}

func (w *watchdogState) generationEnded() {
	w.mu.Lock()
	w.inGen, w.waitSince, w.claims = false, time.Now(), nil
	w.mu.Unlock()
}

// check returns the reason to restart the group at now, or "" and a
// description of nothing.
func (w *watchdogState) check(now time.Time, cfg *KafkaConfig) (reason, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.inGen {
		if d := now.Sub(w.waitSince); d > cfg.JoinTimeout {
			return RestartJoinTimeout, fmt.Sprintf("no generation for %v (bound %v)", d.Round(time.Millisecond), cfg.JoinTimeout)
		}
		return "", ""
	}
	for _, c := range w.claims {
		since := c.stallSince.Load()
		if since == 0 {
			continue
		}
		if d := now.Sub(time.Unix(0, since)); d > cfg.FetchStallTimeout {
			return RestartFetchStall, fmt.Sprintf("%s/%d: no fetch response for %v (bound %v)", c.topic, c.partition,
				d.Round(time.Millisecond), cfg.FetchStallTimeout)
		}
	}
	return "", ""
}

// isTimeout reports whether err is a request abandoned at its deadline:
// the context's, or the connection's (kafka-go sets the connection's
// deadline from the context).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// errRestart is the cancellation cause of an incarnation ended by the
// watchdog.
var errRestart = errors.New("stream: consumer group restarted by the watchdog")

// runGroup runs one incarnation of the consumer group until runCtx ends or
// the watchdog ends it. It returns an error only when the group cannot be
// created (invalid configuration).
func (s *KafkaSource) runGroup(runCtx context.Context, stopRun context.CancelCauseFunc,
	handle func(context.Context, Claim) error, running *sync.WaitGroup) error {
	cfg := s.k.cfg
	group, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                cfg.GroupID,
		Brokers:           cfg.Brokers,
		Dialer:            s.k.dialer,
		Topics:            s.topics,
		HeartbeatInterval: cfg.HeartbeatInterval,
		SessionTimeout:    cfg.SessionTimeout,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		JoinGroupBackoff:  cfg.JoinGroupBackoff,
		// WatchPartitionChanges stays off: kafka-go's watcher ends every
		// generation at once while a topic does not exist (a hot rejoin
		// loop). watchPartitions (kafka_source.go) watches the counts.
		StartOffset: kafka.FirstOffset,
		Timeout:     cfg.RequestTimeout,
		Logger:      kafka.LoggerFunc(func(f string, a ...any) { s.log.Debug(fmt.Sprintf(f, a...)) }),
		ErrorLogger: kafka.LoggerFunc(func(f string, a ...any) { s.log.Warn(fmt.Sprintf(f, a...)) }),
	})
	if err != nil {
		return fmt.Errorf("stream: kafka consumer group: %w", err)
	}
	ictx, restart := context.WithCancelCause(runCtx)
	defer restart(nil)
	s.wd.reset(time.Now())
	s.wd.mu.Lock()
	s.wd.restart = restart
	s.wd.mu.Unlock()
	go func() {
		t := time.NewTicker(cfg.WatchdogInterval)
		defer t.Stop()
		for {
			select {
			case <-ictx.Done():
				return
			case now := <-t.C:
				if reason, detail := s.wd.check(now, &cfg); reason != "" {
					s.log.Warn("consumer group watchdog: restarting the group with a fresh member ID",
						"reason", reason, "detail", detail)
					s.wd.restartGroup(reason, detail)
					return
				}
			}
		}
	}()
	for {
		gen, err := group.Next(ictx)
		if err != nil {
			if ictx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				break
			}
			// kafka-go retries by itself (with JoinGroupBackoff after
			// errors other than a rebalance in progress).
			s.log.Info("consumer group: next generation failed; retrying", "err", err)
			continue
		}
		s.startGeneration(ictx, stopRun, gen, handle, running)
	}
	restart(nil)
	// Handlers watch ictx; they return promptly by contract.
	running.Wait()
	// Close ends the generation (the commit loop makes its final commit
	// while the generation is still valid) and leaves the group. kafka-go
	// may be blocked in a JoinGroup lasting up to RequestTimeout +
	// RebalanceTimeout: do not wait that long; the abandoned group ends by
	// itself at its request deadline.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = group.Close()
	}()
	t := time.NewTimer(cfg.CloseTimeout)
	select {
	case <-closed:
	case <-t.C:
		s.log.Warn("leaving the consumer group timed out; the broker will expire the session", "timeout", cfg.CloseTimeout)
	}
	t.Stop()
	s.wd.generationEnded()
	s.m.generation.Set(0)
	s.current.Store(0)
	s.owned.Store(0)
	return nil
}
