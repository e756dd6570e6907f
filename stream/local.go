package stream

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
)

// WriterSink writes message values as lines (value + "\n") to an io.Writer
// chosen by topic: it is the sink of the Unix-filter mode (--out=-).
// Messages of a topic with no route go to the default writer, or are
// discarded when it is nil. Write flushes before it returns, so a returned
// nil means the bytes reached the underlying writer. Safe for concurrent use.
type WriterSink struct {
	mu     sync.Mutex
	routes map[string]*bufio.Writer
	def    *bufio.Writer
	closed bool
}

// NewWriterSink returns a sink writing topic routes[topic] and everything else
// to def (nil: discard).
func NewWriterSink(routes map[string]io.Writer, def io.Writer) *WriterSink {
	s := &WriterSink{routes: make(map[string]*bufio.Writer, len(routes))}
	shared := map[io.Writer]*bufio.Writer{}
	buf := func(w io.Writer) *bufio.Writer {
		if b, ok := shared[w]; ok {
			return b
		}
		b := bufio.NewWriterSize(w, 64<<10)
		shared[w] = b
		return b
	}
	for t, w := range routes {
		if w != nil {
			s.routes[t] = buf(w)
		}
	}
	if def != nil {
		s.def = buf(def)
	}
	return s
}

// Write implements Sink.
func (s *WriterSink) Write(_ context.Context, msgs ...Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	touched := make([]*bufio.Writer, 0, 2)
	for i := range msgs {
		w, ok := s.routes[msgs[i].Topic]
		if !ok {
			w = s.def
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(msgs[i].Value); err != nil {
			return fmt.Errorf("stream: write %s: %w", msgs[i].Topic, err)
		}
		if err := w.WriteByte('\n'); err != nil {
			return fmt.Errorf("stream: write %s: %w", msgs[i].Topic, err)
		}
		if !containsWriter(touched, w) {
			touched = append(touched, w)
		}
	}
	for _, w := range touched {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("stream: flush: %w", err)
		}
	}
	return nil
}

func containsWriter(ws []*bufio.Writer, w *bufio.Writer) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// Close implements Sink. It does not close the underlying writers.
func (s *WriterSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// MemorySink keeps every written message in memory, by topic. It is the sink
// of tests and of the embedded demo's report. Safe for concurrent use.
type MemorySink struct {
	mu     sync.Mutex
	topics map[string][]Message
	reject func(Message) string
	closed bool
}

// NewMemorySink returns an empty MemorySink.
func NewMemorySink() *MemorySink { return &MemorySink{topics: map[string][]Message{}} }

// RejectIf makes later Writes refuse permanently every message for which
// reject returns a non-empty reason, simulating a destination that rejects
// some messages (for tests); nil accepts everything again. reject is called
// with the sink's lock held and must not use the sink.
func (s *MemorySink) RejectIf(reject func(m Message) (reason string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = reject
}

// Write implements Sink; it copies keys and values. Messages refused by the
// RejectIf function are not kept; the others are, and Write then returns a
// *RejectedError listing the refused ones.
func (s *MemorySink) Write(_ context.Context, msgs ...Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var rejected []Rejection
	for i, m := range msgs {
		if s.reject != nil {
			if reason := s.reject(m); reason != "" {
				rejected = append(rejected, Rejection{Index: i, Reason: reason,
					Err: fmt.Errorf("stream: memory sink: message %d of topic %s (%d bytes) refused: %s", i, m.Topic, len(m.Key)+len(m.Value), reason)})
				continue
			}
		}
		m.Key = bytes.Clone(m.Key)
		m.Value = bytes.Clone(m.Value)
		m.Offset = int64(len(s.topics[m.Topic]))
		s.topics[m.Topic] = append(s.topics[m.Topic], m)
	}
	if len(rejected) > 0 {
		return &RejectedError{Rejected: rejected}
	}
	return nil
}

// Close implements Sink.
func (s *MemorySink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Messages returns a copy of the messages written to topic, in order.
func (s *MemorySink) Messages(topic string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.topics[topic]...)
}

// Latest returns, for topic, the last value written for each key: the view
// a compacted topic converges to.
func (s *MemorySink) Latest(topic string) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for _, m := range s.topics[topic] {
		out[string(m.Key)] = m.Value
	}
	return out
}

// Topics returns the names of the topics written so far, sorted.
func (s *MemorySink) Topics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.topics))
	for t := range s.topics {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

// ReaderSource is a Source of one partition (0) of one topic, read as lines
// from an io.Reader: the input of the Unix-filter mode (--in=-). Offsets are
// line numbers from 0. It has one generation (1) and is exhausted at EOF,
// when Fetch returns io.EOF. Lines longer than maxLine bytes are delivered
// truncated to maxLine bytes (the decoder downstream rejects them); nothing
// is skipped silently. Lines are read ahead by a goroutine, so Fetch returns
// when its context ends even while the reader waits for input (a pipe).
type ReaderSource struct {
	topic   string
	r       *bufio.Reader
	maxLine int
}

// DefaultReaderMaxLine is the line bound of a ReaderSource created with
// maxLine <= 0.
const DefaultReaderMaxLine = 1 << 20 // 1 MiB

// NewReaderSource returns a source reading lines of topic from r. maxLine <= 0
// means DefaultReaderMaxLine.
func NewReaderSource(topic string, r io.Reader, maxLine int) *ReaderSource {
	if maxLine <= 0 {
		maxLine = DefaultReaderMaxLine
	}
	return &ReaderSource{topic: topic, r: bufio.NewReaderSize(r, 256<<10), maxLine: maxLine}
}

// Run implements Source: it calls handle once, for partition 0.
func (s *ReaderSource) Run(ctx context.Context, handle func(ctx context.Context, c Claim) error) error {
	c := &readerClaim{src: s, done: make(chan struct{})}
	defer close(c.done)
	if err := handle(ctx, c); err != nil && err != io.EOF {
		return fmt.Errorf("stream: %s/0: %w", s.topic, err)
	}
	return nil
}

type readerClaim struct {
	src    *ReaderSource
	next   int64 // offset of the next line to deliver
	seeked bool
	eof    bool  // reader side: the input ended
	err    error // consumer side: the input ended (io.EOF) or failed

	// lines carries the lines that a reading goroutine reads ahead, so
	// that Fetch can return when its context ends (an idle partition's
	// deadline) while the reader blocks on a pipe with no new input.
	lines chan lineResult
	done  chan struct{} // closed when Run returns: the reader stops sending
}

type lineResult struct {
	off  int64
	line []byte
	err  error
}

// start starts the reading goroutine once. It ends at the end of the input,
// on a read error, or when Run returns (it may stay blocked in a Read of
// the underlying reader until that returns: reads cannot be interrupted).
func (c *readerClaim) start() {
	if c.lines != nil {
		return
	}
	c.lines = make(chan lineResult, 1024)
	go func() {
		defer close(c.lines)
		for off := int64(0); ; off++ {
			line, err := c.readLine()
			select {
			case c.lines <- lineResult{off: off, line: line, err: err}:
			case <-c.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// receive returns the next line from the reading goroutine; ok is false when
// ctx ended first.
func (c *readerClaim) receive(ctx context.Context) (r lineResult, ok bool) {
	if c.err != nil {
		return lineResult{off: c.next, err: c.err}, true
	}
	c.start()
	select {
	case r, open := <-c.lines:
		if !open {
			r = lineResult{off: c.next, err: io.EOF}
		}
		if r.err != nil {
			c.err = r.err
			return r, true
		}
		c.next = r.off + 1
		return r, true
	case <-ctx.Done():
		return lineResult{}, false
	}
}

func (c *readerClaim) Topic() string         { return c.src.topic }
func (c *readerClaim) Partition() int32      { return 0 }
func (c *readerClaim) Generation() int64     { return 1 }
func (c *readerClaim) MarkCommitted(_ int64) {}

// SeekTo skips lines up to offset; a reader cannot go back.
func (c *readerClaim) SeekTo(offset int64) error {
	if c.seeked {
		return fmt.Errorf("stream: seek on a reader source after the first fetch")
	}
	c.seeked = true
	for c.next < offset {
		r, _ := c.receive(context.Background())
		if r.err != nil {
			if r.err == io.EOF {
				return fmt.Errorf("%w: offset %d beyond the input's %d lines", ErrFatal, offset, c.next)
			}
			return r.err
		}
	}
	return nil
}

func (c *readerClaim) readLine() ([]byte, error) {
	if c.eof {
		return nil, io.EOF
	}
	var line []byte
	truncated := false
	for {
		frag, err := c.src.r.ReadSlice('\n')
		if !truncated {
			room := c.src.maxLine - len(line)
			if len(frag) > room {
				line = append(line, frag[:room]...)
				truncated = true
			} else {
				line = append(line, frag...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			c.eof = true
			if len(line) == 0 {
				return nil, io.EOF
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("stream: read %s: %w", c.src.topic, err)
		}
		break
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}

// Fetch returns up to max lines, skipping blank lines (they still take an
// offset). It returns io.EOF once the input is exhausted.
func (c *readerClaim) Fetch(ctx context.Context, max int) ([]Message, error) {
	c.seeked = true
	if max <= 0 {
		max = 1
	}
	var out []Message
	for len(out) < max {
		if err := ctx.Err(); err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, err
		}
		r, ok := c.receive(ctx)
		if !ok {
			if len(out) > 0 {
				return out, nil
			}
			return nil, ctx.Err()
		}
		if r.err == io.EOF {
			if len(out) > 0 {
				return out, nil
			}
			return nil, io.EOF
		}
		if r.err != nil {
			return out, r.err
		}
		if len(bytes.TrimSpace(r.line)) == 0 {
			continue
		}
		out = append(out, Message{Topic: c.src.topic, Partition: 0, Offset: r.off, Value: r.line})
	}
	return out, nil
}
