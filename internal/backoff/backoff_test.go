package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestSchedule: waits are jittered within ±50% of an interval that doubles
// up to the cap; the mean of many first waits is the initial interval.
func TestSchedule(t *testing.T) {
	const n = 4000
	var sum float64
	distinct := map[time.Duration]bool{}
	for i := 0; i < n; i++ {
		b := New(100*time.Millisecond, 800*time.Millisecond)
		interval := 100 * time.Millisecond
		for step := 0; step < 6; step++ {
			d := b.Next()
			lo, hi := time.Duration(float64(interval)*(1-Jitter)), time.Duration(float64(interval)*(1+Jitter))
			if d < lo || d > hi {
				t.Fatalf("step %d: wait %v outside [%v, %v]", step, d, lo, hi)
			}
			if step == 0 {
				sum += float64(d)
				distinct[d] = true
			}
			interval = min(2*interval, 800*time.Millisecond)
		}
	}
	// The mean of n uniform draws on [50ms, 150ms] has standard deviation
	// 100ms/sqrt(12 n) ≈ 0.46ms; 5 of them is the tolerance.
	mean := time.Duration(sum / n)
	if tol := time.Duration(5 * float64(100*time.Millisecond) / math.Sqrt(12*n)); mean < 100*time.Millisecond-tol || mean > 100*time.Millisecond+tol {
		t.Errorf("mean first wait %v, want 100ms ± %v", mean, tol)
	}
	if len(distinct) < n/2 {
		t.Errorf("only %d distinct first waits of %d: not jittered", len(distinct), n)
	}
}

func TestConstantAndReset(t *testing.T) {
	b := New(time.Second, 0)
	for i := 0; i < 10; i++ {
		if d := b.Next(); d < 500*time.Millisecond || d > 1500*time.Millisecond {
			t.Fatalf("constant schedule: wait %v outside [0.5s, 1.5s]", d)
		}
	}
	b = New(10*time.Millisecond, time.Second)
	for i := 0; i < 20; i++ {
		b.Next()
	}
	b.Reset()
	if d := b.Next(); d > 15*time.Millisecond {
		t.Errorf("after Reset: %v, want at most 15ms", d)
	}
}

// TestRetry: failures are retried until f succeeds or the callback says
// stop (the last error is returned), and a cancelled context ends the loop.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	n := 0
	err := Retry(ctx, New(time.Microsecond, time.Microsecond), func() error {
		n++
		if n < 4 {
			return errors.New("transient")
		}
		return nil
	}, func(_ error, attempt int, _ time.Duration) bool { return attempt < 10 })
	if err != nil || n != 4 {
		t.Fatalf("Retry = %v after %d calls, want nil after 4", err, n)
	}
	stop := errors.New("permanent")
	n = 0
	err = Retry(ctx, New(time.Microsecond, time.Microsecond), func() error { n++; return stop },
		func(err error, _ int, _ time.Duration) bool { return err != stop })
	if err != stop || n != 1 {
		t.Fatalf("Retry = %v after %d calls, want %v after 1", err, n, stop)
	}
	cctx, cancel := context.WithCancel(ctx)
	n = 0
	err = Retry(cctx, New(time.Microsecond, time.Microsecond), func() error {
		n++
		if n == 3 {
			cancel()
		}
		return errors.New("transient")
	}, func(error, int, time.Duration) bool { return true })
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Fatalf("Retry = %v after %d calls, want context.Canceled after 3", err, n)
	}
}
