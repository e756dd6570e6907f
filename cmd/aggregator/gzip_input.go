package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"

	"github.com/changerate/changerate/ingest"
)

// gunzipInput returns in decompressed when it starts with the gzip magic
// bytes (observations kept as obs.jsonl.gz, or a compressed log given by
// mistake, which checkObservations can then recognise), else in as it is.
// Concatenated gzip members are read as one stream, as zcat does. A
// compressed input is read through a cutReader, so that a truncated or
// corrupt stream ends cleanly after its last whole line (see
// cutReader.broken) instead of failing the run.
func gunzipInput(in io.Reader, name string) (io.Reader, *cutReader, error) {
	br := bufio.NewReaderSize(in, 64<<10)
	magic, err := br.Peek(2)
	if err != nil || !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return br, nil, nil // shorter than 2 bytes or plain: read as it is
	}
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	c := &cutReader{r: gz}
	return c, c, nil
}

// cutReader passes on whole lines of r. When r fails with a corrupt or
// truncated stream (ingest.CorruptInput), the bytes after the last newline
// (a line cut short) are dropped and the reader ends as at io.EOF: the
// lines before the damage are used, and the caller reports the rest as
// abandoned (broken), as ingest does. A clean end passes on everything,
// a last line without a newline included; any other error is returned.
type cutReader struct {
	r     io.Reader
	buf   []byte // read from r, not yet passed on: buf[off:]
	off   int
	lines int64 // newlines passed on
	done  bool  // r ended (cleanly or not)
	err   error // the corruption that ended r
	lost  int   // bytes of the line cut short
}

// cutHold is the most bytes held back while waiting for a newline: a
// longer line is passed on as it is (the reader rejects it as too long).
const cutHold = 4 << 20

func (c *cutReader) Read(p []byte) (int, error) {
	for {
		if avail := c.buf[c.off:]; len(avail) > 0 {
			end := len(avail)
			if !c.done || c.err != nil {
				end = bytes.LastIndexByte(avail, '\n') + 1
				if end == 0 && len(avail) >= cutHold {
					end = len(avail)
				}
			}
			if end > 0 {
				n := copy(p, avail[:end])
				c.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
				c.off += n
				return n, nil
			}
		}
		if c.done {
			c.lost, c.off = len(c.buf)-c.off, len(c.buf)
			return 0, io.EOF
		}
		n := copy(c.buf, c.buf[c.off:])
		c.buf, c.off = c.buf[:n], 0
		if cap(c.buf)-n < 32<<10 {
			c.buf = append(make([]byte, 0, 2*cap(c.buf)+64<<10), c.buf...)
		}
		m, err := c.r.Read(c.buf[n:cap(c.buf)])
		c.buf = c.buf[:n+m]
		switch {
		case err == io.EOF:
			c.done = true
		case err != nil && ingest.CorruptInput(err):
			c.done, c.err = true, err
		case err != nil:
			return 0, err
		}
	}
}

// broken returns the corruption that cut the input short (nil if none),
// with the number of the line it cut (1-based) and that line's bytes read
// before the damage, dropped.
func (c *cutReader) broken() (line int64, lost int, err error) {
	if c == nil || c.err == nil {
		return 0, 0, nil
	}
	return c.lines + 1, c.lost, c.err
}
