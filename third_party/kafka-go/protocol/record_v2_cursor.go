package protocol

// changerate patch (../PATCH.md): a reader of a v2 record batch's records
// section that decodes straight from the pages of the batch's pageBuffer.
//
// Upstream decodes each record's header fields through a decoder whose
// reader is the pageBuffer: every byte of every varint is one
// io.ReadFull → decoder.Read → pageBuffer.Read → contiguousPages.ReadAt →
// page.ReadAt chain (about 7 varints per record). recordCursor keeps the
// unread bytes of the current page as a slice; the values it returns, the
// positions it reports and the input on which it fails are those of
// upstream's decoder (record_v2_test.go compares the two).

import (
	"errors"
	"fmt"
	"io"
)

var errCursorVarInt = errors.New("cannot decode varint from input stream")

// recordCursor reads the records section of a batch from pages (the
// buffer's pages in order, each full but the last). After an error every
// read returns a zero value and err keeps the first error.
type recordCursor struct {
	pages contiguousPages
	page  int    // index in pages of the page chunk belongs to
	chunk []byte // the unread bytes of that page
	pos   int64  // offset in the buffer of the next unread byte
	end   int64  // length of the buffer
	err   error
}

func newRecordCursor(pages contiguousPages, length int) recordCursor {
	return recordCursor{pages: pages, page: -1, end: int64(length)}
}

func (c *recordCursor) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// nextPage moves chunk to the next non-empty page; false at the end.
func (c *recordCursor) nextPage() bool {
	for c.page+1 < len(c.pages) {
		c.page++
		p := c.pages[c.page]
		c.chunk = p.buffer[:p.length]
		if len(c.chunk) > 0 {
			return true
		}
	}
	c.chunk = nil
	return false
}

func (c *recordCursor) readByte() (byte, bool) {
	if len(c.chunk) == 0 && (c.pos >= c.end || !c.nextPage()) {
		return 0, false
	}
	b := c.chunk[0]
	c.chunk = c.chunk[1:]
	c.pos++
	return b, true
}

// readVarInt reads a zig-zag varint of at most 11 bytes (as upstream).
func (c *recordCursor) readVarInt() int64 {
	if c.err != nil {
		return 0
	}
	x, s := uint64(0), uint(0)
	for range 11 {
		b, ok := c.readByte()
		if !ok {
			break
		}
		if b&0x80 == 0 {
			x |= uint64(b) << s
			return int64(x>>1) ^ -(int64(x) & 1)
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	c.fail(errCursorVarInt)
	return 0
}

func (c *recordCursor) readInt8() int8 {
	if c.err != nil {
		return 0
	}
	b, ok := c.readByte()
	if !ok {
		c.fail(io.EOF)
		return 0
	}
	return int8(b)
}

// skip advances n ≤ end-pos bytes.
func (c *recordCursor) skip(n int64) {
	for n > 0 {
		if len(c.chunk) == 0 && !c.nextPage() {
			return
		}
		k := min(n, int64(len(c.chunk)))
		c.chunk = c.chunk[k:]
		c.pos += k
		n -= k
	}
}

// discard skips n bytes, or what is left if fewer (as upstream's
// decoder.discard, which does not fail).
func (c *recordCursor) discard(n int64) {
	if c.err != nil {
		return
	}
	c.skip(min(n, c.end-c.pos))
}

// read returns a copy of the next n ≥ 0 bytes.
func (c *recordCursor) read(n int64) []byte {
	if c.err != nil {
		return nil
	}
	if rem := c.end - c.pos; n > rem {
		c.skip(rem)
		if rem == 0 {
			c.fail(io.EOF)
		} else {
			c.fail(io.ErrUnexpectedEOF)
		}
		return nil
	}
	b := make([]byte, n)
	for i := 0; i < len(b); {
		if len(c.chunk) == 0 && !c.nextPage() {
			c.fail(io.ErrUnexpectedEOF)
			return nil
		}
		k := copy(b[i:], c.chunk)
		c.chunk = c.chunk[k:]
		c.pos += int64(k)
		i += k
	}
	return b
}

func (c *recordCursor) readVarString() string {
	if n := c.readVarInt(); n < 0 {
		return ""
	} else {
		return bytesToString(c.read(n))
	}
}

func (c *recordCursor) readVarBytes() []byte {
	if n := c.readVarInt(); n < 0 {
		return nil
	} else {
		return c.read(n)
	}
}

// headerCount checks a record's header count against the bytes left (a
// header takes at least two) before the header slice is allocated:
// upstream allocates whatever count the input says, so that a corrupt count
// can exhaust memory; the record is then truncated either way.
func (c *recordCursor) headerCount(n int64) int {
	if left := c.end - c.pos; n > left/2 {
		c.fail(fmt.Errorf("record has %d headers in %d bytes: %w", n, left, io.ErrUnexpectedEOF))
		return 0
	}
	return int(n)
}
