package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// errTooLarge is returned by limitReader past its cap.
var errTooLarge = errors.New("ingest: decompressed input exceeds MaxDecompressedBytes")

// limitReader fails with errTooLarge once more than max bytes were read.
type limitReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n >= l.max {
		// Probe for one more byte: exactly max bytes is allowed.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w (%d bytes)", errTooLarge, l.max)
		}
	}
	if rem := l.max - l.n; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// lineReader splits a stream into lines of at most max bytes. It tracks the
// offset just after the last complete line it returned, so a follower can
// wait at the end of a file for the rest of a partial line.
type lineReader struct {
	br      *bufio.Reader
	max     int
	buf     []byte // the current line when it spans buffer refills
	partial int64  // bytes of the current, incomplete line consumed so far
	over    bool   // the current line exceeded max
	off     int64  // offset after the last returned line
}

func newLineReader(br *bufio.Reader, max int, off int64) *lineReader {
	return &lineReader{br: br, max: max, off: off}
}

// reset starts over on a new stream at offset off.
func (lr *lineReader) reset(br *bufio.Reader, off int64) {
	lr.br = br
	lr.buf = lr.buf[:0]
	lr.partial = 0
	lr.over = false
	lr.off = off
}

// next returns the next line without its "\n" or "\r\n". tooLong reports
// that the line was longer than max (line holds its first max bytes). At
// the end of the stream, a final line without a newline is returned only
// when final is true; otherwise it is kept and io.EOF returned, so that a
// later call (after the file grew) completes it. The returned slice is
// valid until the next call.
func (lr *lineReader) next(final bool) (line []byte, tooLong bool, err error) {
	for {
		frag, err := lr.br.ReadSlice('\n')
		if err == nil && lr.partial == 0 {
			// Fast path: the whole line is in the buffer.
			lr.off += int64(len(frag))
			line = frag[:len(frag)-1]
			if len(line) > lr.max {
				return trimCR(line[:lr.max]), true, nil
			}
			return trimCR(line), false, nil
		}
		lr.partial += int64(len(frag))
		if room := lr.max + 2 - len(lr.buf); room > 0 { // +2: room for "\r\n"
			lr.buf = append(lr.buf, frag[:min(len(frag), room)]...)
		}
		if len(lr.buf) > lr.max+1 {
			lr.over = true
		}
		switch {
		case err == nil:
			return lr.take(true)
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if lr.partial == 0 {
				return nil, false, io.EOF
			}
			if !final {
				return nil, false, io.EOF
			}
			return lr.take(false)
		default:
			return nil, false, err
		}
	}
}

func (lr *lineReader) take(newline bool) ([]byte, bool, error) {
	line := lr.buf
	if newline && len(line) > 0 && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	line = trimCR(line)
	over := lr.over || len(line) > lr.max
	if len(line) > lr.max {
		line = line[:lr.max]
	}
	lr.off += lr.partial
	lr.partial = 0
	lr.over = false
	lr.buf = lr.buf[:0]
	return line, over, nil
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
