package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

func memMsgs(vals ...string) []Message {
	out := make([]Message, len(vals))
	for i, v := range vals {
		out[i] = Message{Value: []byte(v)}
	}
	return out
}

func values(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("%d:%s", m.Offset, m.Value)
	}
	return out
}

// runMemory runs src with handle in the background and returns a function
// that stops it and returns Run's result.
func runMemory(t *testing.T, src *MemorySource, handle func(ctx context.Context, c Claim) error) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- src.Run(ctx, handle) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-res
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestMemorySourceFetchOrderAndCommit: a claim seeks, fetches what was
// appended in offset order (waiting for appends), and MarkCommitted values
// are recorded.
func TestMemorySourceFetchOrderAndCommit(t *testing.T) {
	src := NewMemorySource()
	if first := src.Append("in", 0, memMsgs("a", "b", "c")...); first != 0 {
		t.Fatalf("first offset %d", first)
	}
	got := make(chan []string, 10)
	runMemory(t, src, func(ctx context.Context, c Claim) error {
		if err := c.SeekTo(1); err != nil {
			return err
		}
		for {
			msgs, err := c.Fetch(ctx, 10)
			if err != nil {
				return err
			}
			got <- values(msgs)
			c.MarkCommitted(msgs[len(msgs)-1].Offset + 1)
		}
	})
	c := src.Assign("in", 0, 3)
	if g := <-got; fmt.Sprint(g) != "[1:b 2:c]" {
		t.Fatalf("first fetch %v", g)
	}
	ctx := waitCtx(t)
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	src.Append("in", 0, memMsgs("d")...)
	if g := <-got; fmt.Sprint(g) != "[3:d]" {
		t.Fatalf("second fetch %v", g)
	}
	if err := c.WaitCommitted(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if next, calls := c.Committed(); next != 4 || calls != 2 {
		t.Fatalf("committed %d after %d calls, want 4 after 2", next, calls)
	}
	if c.Generation() != 3 || c.Topic() != "in" || c.Partition() != 0 {
		t.Fatalf("claim %s/%d gen %d", c.Topic(), c.Partition(), c.Generation())
	}
}

// TestMemorySourceDoneContextAndLowerMark: as the Kafka source, a Fetch
// with a done context returns the context's error although messages are
// available, and a MarkCommitted lower than an earlier one is ignored.
func TestMemorySourceDoneContextAndLowerMark(t *testing.T) {
	src := NewMemorySource()
	src.Append("in", 0, memMsgs("a", "b")...)
	c := src.Assign("in", 0, 1)
	if err := c.SeekTo(0); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if msgs, err := c.Fetch(done, 10); !errors.Is(err, context.Canceled) || len(msgs) != 0 {
		t.Fatalf("Fetch with a done context = %d messages, %v; want none and context.Canceled", len(msgs), err)
	}
	if msgs, err := c.Fetch(waitCtx(t), 10); err != nil || len(msgs) != 2 {
		t.Fatalf("Fetch = %d messages, %v; want 2", len(msgs), err)
	}
	c.MarkCommitted(2)
	c.MarkCommitted(1)
	if next, calls := c.Committed(); next != 2 || calls != 2 {
		t.Fatalf("committed %d after %d calls, want 2 after 2", next, calls)
	}
}

// TestMemorySourceStepped: a stepped claim delivers only what Allow allows,
// at most max per Fetch.
func TestMemorySourceStepped(t *testing.T) {
	src := NewMemorySource()
	src.SetStepped(true)
	src.Append("in", 0, memMsgs("a", "b", "c", "d", "e")...)
	got := make(chan []string, 10)
	runMemory(t, src, func(ctx context.Context, c Claim) error {
		_ = c.SeekTo(-1)
		for {
			msgs, err := c.Fetch(ctx, 2)
			if err != nil {
				return err
			}
			got <- values(msgs)
		}
	})
	c := src.Assign("in", 0, 1)
	ctx := waitCtx(t)
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("a stepped claim delivered %v without Allow", g)
	default:
	}
	c.Allow(3)
	if g := fmt.Sprint(<-got, <-got); g != "[0:a 1:b] [2:c]" {
		t.Fatalf("allowed 3, fetched %s", g)
	}
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if p := c.Position(); p != 3 {
		t.Fatalf("position %d, want 3", p)
	}
	c.SetStepped(false)
	if g := fmt.Sprint(<-got); g != "[3:d 4:e]" {
		t.Fatalf("free-running fetch %s", g)
	}
}

// TestMemorySourceRevokeAndRebalance: Revoke cancels the claim's context
// and Fetch returns ErrRevoked; Rebalance assigns the next generation; a
// claim left live next to a newer one (a zombie) keeps fetching.
func TestMemorySourceRevokeAndRebalance(t *testing.T) {
	src := NewMemorySource()
	src.Append("in", 0, memMsgs("a")...)
	type result struct {
		gen int64
		err error
		ctx error
	}
	results := make(chan result, 10)
	runMemory(t, src, func(ctx context.Context, c Claim) error {
		_ = c.SeekTo(0)
		for {
			_, err := c.Fetch(ctx, 10)
			if err != nil {
				results <- result{c.Generation(), err, ctx.Err()}
				return err
			}
		}
	})
	c1 := src.Assign("in", 0, 4)
	ctx := waitCtx(t)
	if err := c1.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := src.Rebalance("in", 0)
	r := <-results
	if r.gen != 4 || !errors.Is(r.err, ErrRevoked) || r.ctx == nil {
		t.Fatalf("revoked claim: generation %d, fetch error %v, ctx error %v", r.gen, r.err, r.ctx)
	}
	<-c1.Done()
	if !errors.Is(c1.Err(), ErrRevoked) {
		t.Fatalf("handler result %v", c1.Err())
	}
	if c2.Generation() != 5 {
		t.Fatalf("rebalanced generation %d, want 5", c2.Generation())
	}
	if err := c2.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	zombie := c2
	c3 := src.Assign("in", 0, 6) // c2 is not revoked: a zombie
	if err := c3.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	src.Append("in", 0, memMsgs("b")...)
	for _, c := range []*MemoryClaim{zombie, c3} {
		if err := c.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if p := c.Position(); p != 2 {
			t.Fatalf("generation %d at position %d, want 2", c.Generation(), p)
		}
	}
	src.Revoke("in", 0)
	for range 2 {
		if r := <-results; !errors.Is(r.err, ErrRevoked) {
			t.Fatalf("generation %d: %v", r.gen, r.err)
		}
	}
}

// TestMemorySourceErrors: an injected fetch error, io.EOF at the end of a
// sealed partition, ErrFatal beyond the end, ctx's error when the fetch
// context ends, and a fatal handler error stopping Run.
func TestMemorySourceErrors(t *testing.T) {
	src := NewMemorySource()
	src.Append("in", 0, memMsgs("a")...)
	src.Append("in", 1, memMsgs("a")...)
	injected := errors.New("broker unreachable")
	errs := make(chan error, 10)
	stop := runMemory(t, src, func(ctx context.Context, c Claim) error {
		off := int64(0)
		if c.Partition() == 1 {
			off = 5
		}
		_ = c.SeekTo(off)
		for {
			fctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			_, err := c.Fetch(fctx, 10)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				errs <- err
				continue
			}
			if err != nil {
				errs <- err
				return err
			}
		}
	})
	c := src.Assign("in", 0, 1)
	ctx := waitCtx(t)
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch with an expired context: %v", err)
	}
	c.FailFetch(injected)
	for err := range errs {
		if errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != injected {
			t.Fatalf("injected error: got %v", err)
		}
		break
	}
	<-c.Done()

	c = src.Assign("in", 0, 2)
	src.Seal("in", 0)
	<-c.Done()
	if err := c.Err(); err != io.EOF {
		t.Fatalf("sealed partition: %v, want io.EOF", err)
	}

	c = src.Assign("in", 1, 2)
	<-c.Done()
	if err := c.Err(); !errors.Is(err, ErrFatal) {
		t.Fatalf("seek beyond the end: %v, want ErrFatal", err)
	}
	if err := stop(); !errors.Is(err, ErrFatal) {
		t.Fatalf("Run returned %v, want the fatal handler error", err)
	}
}

// TestMemorySourceAssignBeforeRun: assignments made before Run are started
// by it, and Run returns after every handler returned.
func TestMemorySourceAssignBeforeRun(t *testing.T) {
	src := NewMemorySource()
	c := src.Assign("in", 7, 1)
	started := make(chan struct{})
	stop := runMemory(t, src, func(ctx context.Context, cl Claim) error {
		close(started)
		<-ctx.Done()
		return nil
	})
	<-started
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Run returned before the handler")
	}
}

// ExampleMemorySource scripts a partition's life: appends, an assignment
// at generation 3, a stepped fetch and a rebalance to generation 4.
func ExampleMemorySource() {
	src := NewMemorySource()
	src.SetStepped(true)
	src.Append("observations", 0, Message{Value: []byte("a")}, Message{Value: []byte("b")})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- src.Run(ctx, func(ctx context.Context, c Claim) error {
			if err := c.SeekTo(0); err != nil {
				return err
			}
			for {
				msgs, err := c.Fetch(ctx, 10)
				if err != nil {
					fmt.Printf("generation %d: %v\n", c.Generation(), err)
					return nil
				}
				for _, m := range msgs {
					fmt.Printf("generation %d: offset %d %s\n", c.Generation(), m.Offset, m.Value)
				}
				c.MarkCommitted(msgs[len(msgs)-1].Offset + 1)
			}
		})
	}()
	c := src.Assign("observations", 0, 3)
	c.Allow(1)
	_ = c.WaitCommitted(ctx, 1)
	_ = c.WaitIdle(ctx)
	next := src.Rebalance("observations", 0)
	<-c.Done()
	next.Allow(2)
	_ = next.WaitCommitted(ctx, 2)
	stop()
	<-done
	// Output:
	// generation 3: offset 0 a
	// generation 3: stream: fetch observations/0 generation 3: stream: partition revoked
	// generation 4: offset 0 a
	// generation 4: offset 1 b
	// generation 4: context canceled
}

// TestMemorySourceFetchAfterRevoke: a Fetch that starts only after the
// rebalance (its handler's context already done) returns ErrRevoked, as
// the Kafka claim's does, not the context's error. The differential
// scenario testdata/source_diff/revocation met this order under load.
func TestMemorySourceFetchAfterRevoke(t *testing.T) {
	src := NewMemorySource()
	src.Append("in", 0, memMsgs("a")...)
	gate := make(chan struct{})
	results := make(chan error, 1)
	runMemory(t, src, func(ctx context.Context, c Claim) error {
		_ = c.SeekTo(0)
		<-gate // the rebalance happens here, before the Fetch starts
		_, err := c.Fetch(ctx, 10)
		results <- err
		return err
	})
	c1 := src.Assign("in", 0, 1)
	src.Revoke("in", 0)
	<-c1.ctx.Done()
	close(gate)
	if err := <-results; !errors.Is(err, ErrRevoked) {
		t.Fatalf("Fetch after the revocation: %v, want ErrRevoked", err)
	}
}
