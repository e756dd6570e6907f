package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MemorySource is an in-memory Source that behaves like one member of a
// Kafka consumer group, scripted by its caller (a test), the way
// hashicorp/raft's in-memory transport is connected and disconnected by
// its tests. It holds topics of partitions of messages, and the caller
// decides everything a broker and a group coordinator would:
//
//   - Append adds messages to a partition (offsets from 0, consecutive);
//     Seal ends a partition, so that Fetch returns io.EOF at its end.
//   - Assign grants a partition at a generation: Run calls its handler
//     with a new MemoryClaim, in its own goroutine. Several claims of one
//     partition may be live at once (a zombie of an older generation next
//     to the current owner).
//   - Revoke (or MemoryClaim.Revoke) takes a partition away: the claim's
//     context is cancelled and its Fetch returns ErrRevoked. Rebalance
//     revokes and assigns the partition again at the next generation.
//   - Fetch returns whatever is available, waiting for appends; a claim in
//     stepped mode (SetStepped) delivers only the messages its caller
//     allowed with MemoryClaim.Allow. MemoryClaim.FailFetch makes the next
//     Fetch fail with a given error.
//   - MemoryClaim.Committed and WaitCommitted report what the handler
//     passed to MarkCommitted; Waiting tells, and WaitIdle waits until,
//     the handler waits in Fetch with nothing to deliver.
//
// Assignments made before Run starts are started by Run. A handler error
// wrapping ErrFatal stops Run, which returns it; other handler errors are
// kept (MemoryClaim.Err). Message values are shared with the caller of
// Append and must not be modified. A MemorySource is safe for concurrent
// use; it is meant for one Run at a time.
type MemorySource struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	parts   map[memPartKey]*memPartition
	gen     int64 // highest generation assigned
	stepped bool  // claims start in stepped mode
	claims  []*MemoryClaim
	queued  []*MemoryClaim // assigned before Run started
	run     *memRun
}

type memPartKey struct {
	topic string
	id    int32
}

type memPartition struct {
	msgs   []Message
	sealed bool
}

// memRun is the state of one Run call.
type memRun struct {
	ctx    context.Context
	handle func(ctx context.Context, c Claim) error
	wg     sync.WaitGroup
	fatal  chan error // first fatal handler error
}

// NewMemorySource returns an empty MemorySource, whose claims deliver
// what is available (SetStepped changes that).
func NewMemorySource() *MemorySource {
	return &MemorySource{changed: make(chan struct{}), parts: map[memPartKey]*memPartition{}}
}

var _ Source = (*MemorySource)(nil)

// broadcast wakes every waiter; s.mu must be held.
func (s *MemorySource) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *MemorySource) part(topic string, id int32) *memPartition {
	k := memPartKey{topic, id}
	p := s.parts[k]
	if p == nil {
		p = &memPartition{}
		s.parts[k] = p
	}
	return p
}

// Append appends msgs to topic/partition, setting their Topic, Partition
// and Offset, and returns the offset of the first (the partition's end if
// msgs is empty). It panics if the partition is sealed.
func (s *MemorySource) Append(topic string, partition int32, msgs ...Message) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.part(topic, partition)
	if p.sealed {
		panic(fmt.Sprintf("stream: append to sealed memory partition %s/%d", topic, partition))
	}
	first := int64(len(p.msgs))
	for i, m := range msgs {
		m.Topic, m.Partition, m.Offset = topic, partition, first+int64(i)
		p.msgs = append(p.msgs, m)
	}
	s.broadcast()
	return first
}

// End returns the offset the next message appended to topic/partition
// will have.
func (s *MemorySource) End(topic string, partition int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.part(topic, partition).msgs))
}

// Seal ends topic/partition: no more appends, and a Fetch at its end
// returns io.EOF (a finite input).
func (s *MemorySource) Seal(topic string, partition int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.part(topic, partition).sealed = true
	s.broadcast()
}

// SetStepped sets the mode of the claims assigned from now on: stepped
// claims deliver only the messages allowed with MemoryClaim.Allow.
func (s *MemorySource) SetStepped(stepped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stepped = stepped
}

// Assign grants topic/partition to this member at generation gen and
// returns the claim; Run calls its handler with it (at once when Run is
// running, else when it starts). Claims of the partition already live stay
// live: revoke them first unless the test wants a zombie.
func (s *MemorySource) Assign(topic string, partition int32, gen int64) *MemoryClaim {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.part(topic, partition)
	c := &MemoryClaim{src: s, topic: topic, partition: partition, gen: gen, committed: -1, next: -1,
		stepped: s.stepped, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	s.gen = max(s.gen, gen)
	s.claims = append(s.claims, c)
	if s.run == nil {
		s.queued = append(s.queued, c)
	} else {
		s.start(c)
	}
	return c
}

// Revoke takes topic/partition away from every live claim of it.
func (s *MemorySource) Revoke(topic string, partition int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.claims {
		if c.topic == topic && c.partition == partition {
			s.revoke(c)
		}
	}
}

// Rebalance revokes topic/partition and assigns it again at the next
// generation (one above the highest assigned so far), without waiting for
// the revoked handlers to return, as a group coordinator does not.
func (s *MemorySource) Rebalance(topic string, partition int32) *MemoryClaim {
	s.Revoke(topic, partition)
	s.mu.Lock()
	gen := s.gen + 1
	s.mu.Unlock()
	return s.Assign(topic, partition, gen)
}

// revoke ends c's assignment; s.mu must be held.
func (s *MemorySource) revoke(c *MemoryClaim) {
	if !c.revoked {
		c.revoked = true
		c.cancel()
		s.broadcast()
	}
}

// start runs c's handler; s.mu must be held and s.run set.
func (s *MemorySource) start(c *MemoryClaim) {
	r := s.run
	stop := context.AfterFunc(r.ctx, c.cancel)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer stop()
		err := r.handle(c.ctx, c)
		if errors.Is(err, ErrFatal) {
			select {
			case r.fatal <- err:
			default:
			}
		}
		s.mu.Lock()
		c.err = err
		c.returned = true
		s.revoke(c)
		close(c.done)
		s.broadcast()
		s.mu.Unlock()
	}()
}

// Run implements Source: it calls handle for every assignment, each in its
// own goroutine, until ctx is done or a handler fails with an error
// wrapping ErrFatal; it then cancels every claim's context, waits for the
// handlers to return and returns the first fatal error, if any, else nil.
func (s *MemorySource) Run(ctx context.Context, handle func(ctx context.Context, c Claim) error) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &memRun{ctx: rctx, handle: handle, fatal: make(chan error, 1)}
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		return errors.New("stream: memory source is already running")
	}
	s.run = r
	for _, c := range s.queued {
		s.start(c)
	}
	s.queued = nil
	s.mu.Unlock()
	var err error
	select {
	case <-ctx.Done():
	case err = <-r.fatal:
	}
	cancel()
	r.wg.Wait()
	if err == nil {
		select {
		case err = <-r.fatal: // a handler failed while ctx was ending
		default:
		}
	}
	s.mu.Lock()
	s.run = nil
	s.mu.Unlock()
	return err
}

// MemoryClaim is a claim of a MemorySource: the Claim its handler gets,
// and the handle its test scripts it with. The Claim methods follow the
// Claim contract; the others are for the test.
type MemoryClaim struct {
	src       *MemorySource
	topic     string
	partition int32
	gen       int64
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	// Guarded by src.mu.
	next      int64 // next offset Fetch delivers; -1 before SeekTo
	committed int64 // last MarkCommitted value; -1: none
	marks     int   // MarkCommitted calls
	revoked   bool
	stepped   bool
	allowed   int // messages a stepped claim may still deliver
	failNext  error
	waiting   bool // the handler waits in Fetch with nothing to deliver
	returned  bool
	err       error
}

var _ Claim = (*MemoryClaim)(nil)

// Topic implements Claim.
func (c *MemoryClaim) Topic() string { return c.topic }

// Partition implements Claim.
func (c *MemoryClaim) Partition() int32 { return c.partition }

// Generation implements Claim.
func (c *MemoryClaim) Generation() int64 { return c.gen }

// SeekTo implements Claim. A negative offset means 0; an offset beyond the
// partition's end makes Fetch fail with an error wrapping ErrFatal.
func (c *MemoryClaim) SeekTo(offset int64) error {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.next = max(offset, 0)
	return nil
}

// Fetch implements Claim: it returns ErrRevoked once the claim is revoked,
// an error injected by FailFetch, the next messages (at most max, and for
// a stepped claim at most those allowed), io.EOF at the end of a sealed
// partition, or waits for one of these until ctx is done.
func (c *MemoryClaim) Fetch(ctx context.Context, max int) ([]Message, error) {
	s := c.src
	if max < 1 {
		return nil, fmt.Errorf("stream: fetch %s/%d: max %d < 1", c.topic, c.partition, max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		// As KafkaSource: a done context ends the fetch even when
		// messages are available, with ErrRevoked when the claim was
		// revoked (revoke marks the claim before it cancels the handler's
		// context, so a Fetch that starts after a rebalance says why).
		if c.revoked {
			return nil, fmt.Errorf("stream: fetch %s/%d generation %d: %w", c.topic, c.partition, c.gen, ErrRevoked)
		}
		return nil, err
	}
	defer func() { c.waiting = false }()
	for {
		p := s.parts[memPartKey{c.topic, c.partition}]
		switch {
		case c.revoked:
			return nil, fmt.Errorf("stream: fetch %s/%d generation %d: %w", c.topic, c.partition, c.gen, ErrRevoked)
		case c.next < 0:
			return nil, fmt.Errorf("stream: fetch %s/%d before SeekTo", c.topic, c.partition)
		case c.failNext != nil:
			err := c.failNext
			c.failNext = nil
			return nil, err
		case c.next > int64(len(p.msgs)):
			return nil, fmt.Errorf("stream: fetch %s/%d: offset %d is beyond the end %d: %w", c.topic, c.partition, c.next, len(p.msgs), ErrFatal)
		}
		n := min(int64(max), int64(len(p.msgs))-c.next)
		if c.stepped {
			n = min(n, int64(c.allowed))
		}
		if n > 0 {
			out := make([]Message, n)
			copy(out, p.msgs[c.next:c.next+n])
			c.next += n
			if c.stepped {
				c.allowed -= int(n)
			}
			s.broadcast()
			return out, nil
		}
		if p.sealed && c.next == int64(len(p.msgs)) {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !c.waiting {
			c.waiting = true
			s.broadcast()
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		s.mu.Lock()
	}
}

// MarkCommitted implements Claim: it records next (see Committed). It
// never blocks beyond a short critical section.
func (c *MemoryClaim) MarkCommitted(next int64) {
	s := c.src
	s.mu.Lock()
	defer s.mu.Unlock()
	c.committed = max(c.committed, next) // a lower mark is ignored, as the Claim contract says
	c.marks++
	s.broadcast()
}

// Committed returns the highest value passed to MarkCommitted (-1: none)
// and how many times it was called.
func (c *MemoryClaim) Committed() (next int64, calls int) {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	return c.committed, c.marks
}

// Position returns the offset the next Fetch delivers from (-1 before
// SeekTo).
func (c *MemoryClaim) Position() int64 {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	return c.next
}

// Waiting reports whether the handler is waiting in Fetch with nothing to
// deliver.
func (c *MemoryClaim) Waiting() bool {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	return c.waiting && !c.ready()
}

// Revoke takes the partition away from this claim only: its context is
// cancelled and Fetch returns ErrRevoked.
func (c *MemoryClaim) Revoke() {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.src.revoke(c)
}

// SetStepped switches the claim between delivering what is available
// (false) and delivering only what Allow allowed (true).
func (c *MemoryClaim) SetStepped(stepped bool) {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.stepped = stepped
	c.src.broadcast()
}

// Allow lets a stepped claim deliver n more messages (over one or more
// Fetch calls).
func (c *MemoryClaim) Allow(n int) {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.allowed += n
	c.src.broadcast()
}

// FailFetch makes the claim's next Fetch return err (once).
func (c *MemoryClaim) FailFetch(err error) {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	c.failNext = err
	c.src.broadcast()
}

// Done is closed when the claim's handler has returned.
func (c *MemoryClaim) Done() <-chan struct{} { return c.done }

// Err returns the handler's result; it is valid once Done is closed.
func (c *MemoryClaim) Err() error {
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	return c.err
}

// WaitCommitted waits until MarkCommitted was called with next or more,
// the handler returned, or ctx is done (then it returns ctx's error).
func (c *MemoryClaim) WaitCommitted(ctx context.Context, next int64) error {
	return c.wait(ctx, func() bool { return c.committed >= next })
}

// WaitIdle waits until the handler waits in Fetch with nothing to deliver
// (or has returned), or ctx is done (then it returns ctx's error).
func (c *MemoryClaim) WaitIdle(ctx context.Context) error {
	return c.wait(ctx, func() bool { return c.waiting && !c.ready() })
}

// ready reports whether a Fetch would return at once; src.mu must be held.
func (c *MemoryClaim) ready() bool {
	if c.revoked || c.failNext != nil {
		return true
	}
	p := c.src.parts[memPartKey{c.topic, c.partition}]
	avail := int64(len(p.msgs)) - c.next
	if avail == 0 {
		return p.sealed
	}
	return avail < 0 || !c.stepped || c.allowed > 0
}

// wait waits until cond (evaluated with src.mu held) holds or the handler
// returned.
func (c *MemoryClaim) wait(ctx context.Context, cond func() bool) error {
	s := c.src
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond() && !c.returned {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	return nil
}
