package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// State loss: a Redis restarted without persistence (or
// flushed, or evicting) comes back without the partitions' offsets. A
// handler whose Claim finds no stored offset would then start from the
// earliest retained input, silently: objects get the estimates of a
// partial history, or of none if retention dropped it. The processor
// refuses that when there is evidence that the partition had been
// processed before:
//
//   - the consumer group has a committed offset for it (the source commits
//     the offset of every durable batch to the group, for lag monitoring:
//     stream.GroupCommitter), or
//   - this process saw a stored offset for it earlier, or was processing it
//     when a commit found the partition unclaimed (its meta vanished).
//
// Config.OnStateLoss then decides: OnStateLossStop (the default) ends the
// aggregator with an error (stream.ErrFatal) naming the partition, the
// evidence and the remedies; OnStateLossReplay replays the partition from
// the earliest retained offset and logs it. Either way it is counted in
// changerate_aggregator_state_lost_total{action}. A partition is never
// half reset: replay restarts it from the beginning with no state, as a
// fresh deployment would.

// Values of Config.OnStateLoss.
const (
	// OnStateLossStop stops the aggregator (the default).
	OnStateLossStop = "stop"
	// OnStateLossReplay rebuilds the partition's state from the earliest
	// retained input offset.
	OnStateLossReplay = "replay"
)

type stateLossMetrics struct {
	lost *prometheus.CounterVec
}

func newStateLossMetrics(reg prometheus.Registerer) (*stateLossMetrics, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "changerate", Subsystem: "aggregator", Name: "state_lost_total",
		Help: "Partitions whose stored offset vanished from the state store although they had been processed before, by action taken (stop or replay).",
	}, []string{"action"})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("aggregate: registering metrics: %w", err)
			}
			c = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	c.WithLabelValues(OnStateLossStop)
	c.WithLabelValues(OnStateLossReplay)
	return &stateLossMetrics{lost: c}, nil
}

// onStateLoss returns the effective policy.
func (c *Config) onStateLoss() string {
	if c.OnStateLoss == "" {
		return OnStateLossStop
	}
	return c.OnStateLoss
}

func validOnStateLoss(s string) error {
	switch s {
	case "", OnStateLossStop, OnStateLossReplay:
		return nil
	}
	return fmt.Errorf("aggregate: OnStateLoss must be %q or %q, got %q", OnStateLossStop, OnStateLossReplay, s)
}

// checkClaimed is called with the offset Claim returned for c's
// partition. It returns the offset to seek to, or an error wrapping
// stream.ErrFatal when the store lost the partition's state and the policy
// is to stop.
func (p *Processor) checkClaimed(c stream.Claim, part state.Partition, next int64, log *slog.Logger) (int64, error) {
	p.mu.Lock()
	seen, wasSeen := p.seen[part]
	if next >= 0 {
		p.seen[part] = next
	}
	p.mu.Unlock()
	if next >= 0 {
		return next, nil
	}
	var evidence string
	if gc, ok := c.(stream.GroupCommitter); ok {
		if off, ok := gc.GroupOffset(); ok && off > 0 {
			evidence = fmt.Sprintf("the consumer group committed offset %d for it", off)
		}
	}
	if evidence == "" && wasSeen && seen > 0 {
		evidence = fmt.Sprintf("this process saw offset %d stored for it", seen)
	}
	if evidence == "" {
		return next, nil // a partition never processed: start from the earliest offset
	}
	return -1, p.stateLost(part, evidence, log)
}

// stateLost applies the policy: nil to replay, or the fatal error.
func (p *Processor) stateLost(part state.Partition, evidence string, log *slog.Logger) error {
	action := p.cfg.onStateLoss()
	p.lossMetrics.lost.WithLabelValues(action).Inc()
	msg := fmt.Sprintf("the state store holds no offset for %s/%d although %s: its data was lost "+
		"(a Redis restart without persistence — enable AOF —, a FLUSHALL, eviction, or another REDIS_KEY_PREFIX or database)",
		part.Topic, part.ID, evidence)
	if action == OnStateLossReplay {
		log.Warn(msg + "; ON_STATE_LOSS=replay: rebuilding the partition's state from the earliest retained offset " +
			"(estimates of objects whose early input is no longer retained will cover less history)")
		p.mu.Lock()
		delete(p.seen, part)
		p.mu.Unlock()
		return nil
	}
	log.Error(msg + "; stopping (ON_STATE_LOSS=stop). Restore Redis from a backup and restart, or set ON_STATE_LOSS=replay " +
		"to rebuild the state from the earliest retained input offset")
	return fmt.Errorf("aggregate: %s; restore Redis or set ON_STATE_LOSS=replay: %w", msg, stream.ErrFatal)
}

// checkLost is called when a commit or claim of w's partition was refused
// with state.ErrFenced: either a newer generation owns the partition (the
// usual case: nil), or the partition's meta vanished from the store (a
// commit on an unclaimed partition is refused the same way). Claiming
// with w's generation tells them apart: it fails for a newer owner, and
// returns no offset when the state vanished.
//
// A transient error of that Claim (Redis unreachable, or still loading
// after the very restart that may have emptied it) is retried in place
// (retryStore, op "claim") until the store answers or the claim ends:
// taking it for a newer owner would end the handler quietly, leaving the
// partition idle until the next rebalance with a loss of its state
// unnoticed. Each attempt gets 10s; after the handler's context ended there
// is one attempt only, as before.
func (w *worker) checkLost() error {
	if w.next <= 0 {
		return nil
	}
	var stored int64
	err := w.p.retryStore(w.hctx, "claim", w.log, func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.storeMu.Lock()
		stored, err = w.p.store.Claim(ctx, w.part, w.gen)
		w.storeMu.Unlock()
		return err
	})
	if err != nil || stored >= 0 {
		// a newer owner (ErrFenced), the claim ended, or another error
		// retrying cannot cure: the partition is not this handler's
		return nil
	}
	if err := w.p.stateLost(w.part, fmt.Sprintf("this handler committed up to offset %d", w.next), w.log); err != nil {
		return err
	}
	// Replay: end the claim with an error so that the source hands the
	// partition out again and its next handler starts from the earliest
	// offset (checkClaimed lets it).
	return fmt.Errorf("aggregate: %s/%d: state lost; replaying: %w", w.part.Topic, w.part.ID, state.ErrOffsetMismatch)
}
