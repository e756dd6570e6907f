// Package backoff gives the project's retry loops one schedule: exponential
// growth with random jitter, so that the members of a consumer group (or
// many ingest processes) that failed together — a broker or Redis restart —
// do not retry together in lock step and hit the recovering server with
// synchronised waves. It wraps github.com/cenkalti/backoff/v5, whose
// ExponentialBackOff draws each wait uniformly from
// interval × [1 − Jitter, 1 + Jitter].
package backoff

import (
	"context"
	"time"

	cb "github.com/cenkalti/backoff/v5"
)

// Jitter is the randomization factor: each wait is drawn from
// [1 − Jitter, 1 + Jitter] times the current interval.
const Jitter = 0.5

// Backoff is a retry schedule. Not safe for concurrent use: one per retry
// loop.
type Backoff struct {
	b        *cb.ExponentialBackOff
	deadline time.Time
	now      func() time.Time
}

// New returns a schedule starting at initial, doubling after each wait up
// to maxWait (maxWait ≤ initial gives a constant interval, still jittered).
func New(initial, maxWait time.Duration) *Backoff {
	b := cb.NewExponentialBackOff()
	b.InitialInterval = initial
	b.MaxInterval = max(maxWait, initial)
	b.Multiplier = 2
	b.RandomizationFactor = Jitter
	b.Reset()
	return &Backoff{b: b, now: time.Now}
}

// Until makes every wait end at the latest at t (a wait that would pass t
// is cut to the time left, 0 once t has passed), so that a loop bounded by
// t makes its last attempt at t rather than giving up before it because
// the next wait is long. It returns b.
func (b *Backoff) Until(t time.Time) *Backoff {
	b.deadline = t
	return b
}

// Next returns the next wait.
func (b *Backoff) Next() time.Duration {
	d := b.b.NextBackOff()
	if !b.deadline.IsZero() {
		d = max(min(d, b.deadline.Sub(b.now())), 0)
	}
	return d
}

// Reset starts the schedule again from the initial interval.
func (b *Backoff) Reset() { b.b.Reset() }

// Retry runs f until it returns nil or retry, called after each failure
// with the error, the number of the failed attempt (from 1) and the wait
// before the next one, returns false; it then returns f's last error. It
// returns ctx.Err() if ctx ends first (during a wait, or before an attempt
// that failed). The callback is where a loop logs and counts its retries
// and decides which errors are worth retrying; b is not reset.
func Retry(ctx context.Context, b *Backoff, f func() error, retry func(err error, attempt int, wait time.Duration) bool) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		d := b.Next()
		if !retry(err, attempt, d) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
