// Package backoff gives the project's retry loops one schedule: exponential
// growth with random jitter, so that the members of a consumer group (or
// many ingest processes) that failed together — a broker or Redis restart —
// do not retry together in lock step and hit the recovering server with
// synchronised waves. It wraps github.com/cenkalti/backoff/v5, whose
// ExponentialBackOff draws each wait uniformly from
// interval × [1 − Jitter, 1 + Jitter].
package backoff

import (
	"time"

	cb "github.com/cenkalti/backoff/v5"
)

// Jitter is the randomization factor: each wait is drawn from
// [1 − Jitter, 1 + Jitter] times the current interval.
const Jitter = 0.5

// Backoff is a retry schedule. Not safe for concurrent use: one per retry
// loop.
type Backoff struct{ b *cb.ExponentialBackOff }

// New returns a schedule starting at initial, doubling after each wait up
// to maxWait (maxWait ≤ initial gives a constant interval, still jittered).
func New(initial, maxWait time.Duration) *Backoff {
	b := cb.NewExponentialBackOff()
	b.InitialInterval = initial
	b.MaxInterval = max(maxWait, initial)
	b.Multiplier = 2
	b.RandomizationFactor = Jitter
	b.Reset()
	return &Backoff{b: b}
}

// Next returns the next wait.
func (b *Backoff) Next() time.Duration { return b.b.NextBackOff() }

// Reset starts the schedule again from the initial interval.
func (b *Backoff) Reset() { b.b.Reset() }
