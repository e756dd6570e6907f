package stream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/changerate/changerate/stream"
)

// TestSourceDifferential runs every script under testdata/source_diff
// against MemorySource and against KafkaSource on kfake, and requires both
// to print the output recorded in the script: the two sources agree on
// what the Source and Claim contracts promise (per-partition offset order,
// SeekTo with negative = earliest and beyond-the-end = ErrFatal, Fetch's
// max, a wait at the end of the log that ends with the context rather than
// io.EOF, ErrRevoked and a cancelled handler context on revocation,
// generations increasing across a rebalance, marked offsets becoming the
// partition's committed offset).
//
// Script commands (every one names the partition with p=, except
// rebalance; offsets and generations are printed so that a disagreement
// shows as a diff):
//
//	append p=0 n=3          append 3 messages ("p0-<offset>") in one write
//	claims                  wait for a claim of every partition; print generations
//	seek p=0 offset=-1      Claim.SeekTo
//	fetch p=0 max=2 [wait=300ms]
//	                        one Fetch (bounded by wait, else by waitLimit)
//	fetch-until p=0 next=5 max=2
//	                        Fetch until offset next-1 was delivered; each call
//	                        must return 1..max messages in offset order
//	fetch-async p=0 max=5   start a Fetch in the handler, return at once
//	await p=0               the result of the fetch-async, and whether the
//	                        handler's context was done when it returned
//	rebalance               end the generation of every partition; wait for
//	                        the claims of the next one and print them
//	mark p=0 next=3         Claim.MarkCommitted
//	committed p=0           the partition's committed offset, once it
//	                        reflects the last mark (bounded wait)
//
// Generations are printed as g1, g2, ... in the order they are first seen
// (Kafka and the memory source number them differently); a generation not
// above every earlier one prints as a violation.
//
// Not compared, because the Claim contract leaves them open: whether a
// Fetch whose context is already done returns messages that are available
// (KafkaSource returns the context's error, MemorySource the messages),
// and what a MarkCommitted lower than an earlier one does (KafkaSource
// ignores it, MemorySource records it).
func TestSourceDifferential(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T, scenario string) diffBackend
	}{
		{"memory", openMemoryBackend},
		{"kafka", openKafkaBackend},
	}
	datadriven.Walk(t, "testdata/source_diff", func(t *testing.T, path string) {
		for _, b := range backends {
			t.Run(b.name, func(t *testing.T) {
				h := newDiffHarness(t, b.open(t, filepath.Base(path)))
				datadriven.RunTest(t, path, h.command)
			})
		}
	})
}

const (
	diffTopic      = "diff"
	diffPartitions = 2
)

// diffClaim is a claim whose handler runs the script's commands in its
// own goroutine (SeekTo and Fetch are for the handler's goroutine).
type diffClaim struct {
	cl    stream.Claim
	ctx   context.Context
	cmds  chan func()
	fail  chan error
	busy  atomic.Bool // a command runs in the handler
	async chan string // the result of fetch-async
	done  chan struct{}
}

type diffHarness struct {
	t *testing.T
	b diffBackend

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a claim registers
	current map[int32]*diffClaim
	all     []*diffClaim
	async   map[int32]*diffClaim // the claim running a fetch-async
	marks   map[int32]int64      // highest mark per partition
	next    map[int32]int        // values appended per partition
	gens    []int64              // generations seen, increasing
}

func newDiffHarness(t *testing.T, b diffBackend) *diffHarness {
	h := &diffHarness{t: t, b: b, changed: make(chan struct{}), current: map[int32]*diffClaim{},
		async: map[int32]*diffClaim{}, marks: map[int32]int64{}, next: map[int32]int{}}
	runSource(t, b.source(), h.handle)
	return h
}

// handle registers the claim and runs commands until its context ends or
// the backend makes it fail.
func (h *diffHarness) handle(ctx context.Context, cl stream.Claim) error {
	c := &diffClaim{cl: cl, ctx: ctx, cmds: make(chan func()), fail: make(chan error, 1),
		async: make(chan string, 1), done: make(chan struct{})}
	defer close(c.done)
	h.mu.Lock()
	h.current[cl.Partition()] = c
	h.all = append(h.all, c)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	for {
		select {
		case f := <-c.cmds:
			f()
		case err := <-c.fail:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

func (h *diffHarness) claimsOf(p int32) []*diffClaim {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*diffClaim
	for _, c := range h.all {
		if c.cl.Partition() == p {
			out = append(out, c)
		}
	}
	return out
}

func (h *diffHarness) claimOf(t *testing.T, p int32) *diffClaim {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.current[p]
	if c == nil {
		t.Fatalf("no claim of partition %d yet (missing claims?)", p)
	}
	return c
}

// currentGeneration is the highest generation of the current claims.
func (h *diffHarness) currentGeneration(t *testing.T) int64 {
	g := int64(-1)
	for p := int32(0); p < diffPartitions; p++ {
		g = max(g, h.claimOf(t, p).cl.Generation())
	}
	return g
}

// waitClaims waits until every partition has a claim of a generation
// above after, and prints them.
func (h *diffHarness) waitClaims(t *testing.T, after int64) string {
	deadline := time.After(waitLimit)
	for {
		h.mu.Lock()
		ready := true
		for p := int32(0); p < diffPartitions; p++ {
			if c := h.current[p]; c == nil || c.cl.Generation() <= after {
				ready = false
			}
		}
		ch := h.changed
		h.mu.Unlock()
		if ready {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for claims of every partition above generation %d", after)
		}
	}
	var b strings.Builder
	for p := int32(0); p < diffPartitions; p++ {
		c := h.claimOf(t, p)
		fmt.Fprintf(&b, "p%d %s\n", p, h.label(c.cl.Generation()))
		if c.cl.Topic() != diffTopic || c.cl.Partition() != p {
			fmt.Fprintf(&b, "VIOLATION: claim of %s/%d\n", c.cl.Topic(), c.cl.Partition())
		}
	}
	return b.String()
}

// label names generation g by the order in which generations appear.
func (h *diffHarness) label(g int64) string {
	for i, seen := range h.gens {
		if seen == g {
			return fmt.Sprintf("g%d", i+1)
		}
	}
	if n := len(h.gens); n > 0 && g <= h.gens[n-1] {
		return fmt.Sprintf("VIOLATION: generation %d not above %d", g, h.gens[n-1])
	}
	h.gens = append(h.gens, g)
	return fmt.Sprintf("g%d", len(h.gens))
}

// on runs f in the handler goroutine of p's current claim and returns its
// result.
func (h *diffHarness) on(t *testing.T, p int32, f func(c *diffClaim) string) string {
	c := h.claimOf(t, p)
	res := make(chan string, 1)
	c.busy.Store(true)
	select {
	case c.cmds <- func() { defer c.busy.Store(false); res <- f(c) }:
	case <-c.done:
		c.busy.Store(false)
		t.Fatalf("the handler of partition %d returned", p)
	case <-time.After(waitLimit):
		t.Fatalf("the handler of partition %d does not take commands", p)
	}
	select {
	case r := <-res:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("command on partition %d did not finish", p)
		return ""
	}
}

// diffErrClass names what the contract says about err.
func diffErrClass(err error) string {
	switch {
	case errors.Is(err, stream.ErrRevoked):
		return "revoked"
	case errors.Is(err, stream.ErrFatal):
		return "fatal"
	case errors.Is(err, io.EOF):
		return "eof"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "error"
	}
}

// formatFetch prints the messages of one Fetch of partition p with limit
// max, or its error, and any breach of the contract.
func formatFetch(b *strings.Builder, p int32, max int, msgs []stream.Message, err error) {
	if err != nil {
		fmt.Fprintf(b, "error: %s\n", diffErrClass(err))
		if len(msgs) > 0 {
			fmt.Fprintf(b, "VIOLATION: %d messages with an error\n", len(msgs))
		}
		return
	}
	if len(msgs) == 0 || len(msgs) > max {
		fmt.Fprintf(b, "VIOLATION: %d messages for max %d\n", len(msgs), max)
	}
	for i, m := range msgs {
		fmt.Fprintf(b, "p%d@%d %s\n", m.Partition, m.Offset, m.Value)
		if m.Topic != diffTopic || m.Partition != p {
			fmt.Fprintf(b, "VIOLATION: message of %s/%d\n", m.Topic, m.Partition)
		}
		if i > 0 && m.Offset != msgs[i-1].Offset+1 {
			fmt.Fprintf(b, "VIOLATION: offset %d after %d\n", m.Offset, msgs[i-1].Offset)
		}
	}
}

func (h *diffHarness) command(t *testing.T, d *datadriven.TestData) string {
	var p int32
	if d.Cmd != "claims" && d.Cmd != "rebalance" {
		d.ScanArgs(t, "p", &p)
	}
	switch d.Cmd {
	case "append":
		var n int
		d.ScanArgs(t, "n", &n)
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprintf("p%d-%d", p, h.next[p]+i)
		}
		h.next[p] += n
		first := h.b.appendTo(t, p, values)
		return fmt.Sprintf("p%d offsets %d-%d\n", p, first, first+int64(n)-1)

	case "claims":
		return h.waitClaims(t, 0)

	case "rebalance":
		before := h.currentGeneration(t)
		h.b.rebalance(t, h)
		return h.waitClaims(t, before)

	case "seek":
		var off int64
		d.ScanArgs(t, "offset", &off)
		return h.on(t, p, func(c *diffClaim) string {
			if err := c.cl.SeekTo(off); err != nil {
				return fmt.Sprintf("error: %s\n", diffErrClass(err))
			}
			return "ok\n"
		})

	case "fetch":
		var max int
		d.ScanArgs(t, "max", &max)
		wait := waitLimit
		if d.HasArg("wait") {
			var s string
			d.ScanArgs(t, "wait", &s)
			var err error
			if wait, err = time.ParseDuration(s); err != nil {
				d.Fatalf(t, "wait: %v", err)
			}
		}
		return h.on(t, p, func(c *diffClaim) string {
			ctx, cancel := context.WithTimeout(c.ctx, wait)
			defer cancel()
			msgs, err := c.cl.Fetch(ctx, max)
			var b strings.Builder
			formatFetch(&b, p, max, msgs, err)
			return b.String()
		})

	case "fetch-until":
		var next int64
		var max int
		d.ScanArgs(t, "next", &next)
		d.ScanArgs(t, "max", &max)
		return h.on(t, p, func(c *diffClaim) string {
			ctx, cancel := context.WithTimeout(c.ctx, waitLimit)
			defer cancel()
			var b strings.Builder
			last := int64(-1)
			for last+1 < next {
				msgs, err := c.cl.Fetch(ctx, max)
				if err == nil && len(msgs) > 0 && last >= 0 && msgs[0].Offset != last+1 {
					fmt.Fprintf(&b, "VIOLATION: offset %d after %d\n", msgs[0].Offset, last)
				}
				formatFetch(&b, p, max, msgs, err)
				if err != nil || len(msgs) == 0 {
					break
				}
				last = msgs[len(msgs)-1].Offset
			}
			// One line per message regardless of how Fetch calls split
			// them (Kafka's split follows its fetch responses).
			return b.String()
		})

	case "fetch-async":
		var max int
		d.ScanArgs(t, "max", &max)
		c := h.claimOf(t, p)
		c.busy.Store(true)
		h.async[p] = c
		select {
		case c.cmds <- func() {
			defer c.busy.Store(false)
			msgs, err := c.cl.Fetch(c.ctx, max)
			var b strings.Builder
			formatFetch(&b, p, max, msgs, err)
			state := "live"
			if c.ctx.Err() != nil {
				state = "done"
			}
			fmt.Fprintf(&b, "handler context %s\n", state)
			c.async <- b.String()
		}:
		case <-time.After(waitLimit):
			t.Fatalf("the handler of partition %d does not take commands", p)
		}
		return "started\n"

	case "await":
		c := h.async[p]
		if c == nil {
			d.Fatalf(t, "await without fetch-async on p%d", p)
		}
		delete(h.async, p)
		select {
		case r := <-c.async:
			return r
		case <-time.After(waitLimit):
			t.Fatalf("the fetch of partition %d did not return", p)
			return ""
		}

	case "mark":
		var next int64
		d.ScanArgs(t, "next", &next)
		h.marks[p] = max(h.marks[p], next)
		// MarkCommitted may be called from any goroutine.
		h.claimOf(t, p).cl.MarkCommitted(next)
		return "ok\n"

	case "committed":
		want, ok := h.marks[p]
		if !ok {
			want = -1
		}
		return fmt.Sprintf("p%d committed %d\n", p, h.b.committed(t, h, p, want))

	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}
