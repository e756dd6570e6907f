package main

import (
	"bufio"
	"bytes"
	"io"
)

// maxInputLine is the longest input line the filter mode decodes, as
// ingest's default MAX_LINE_BYTES (ingest.DefaultMaxLineBytes): a longer
// one is dead-lettered with reason too-long, the others are read.
const maxInputLine = 1 << 20

// boundedLines reads the lines of br, each cut at max bytes (a line
// longer than that is returned cut, with tooLong, and the rest of it is
// skipped), without the line ending; a last line without a newline is a
// line. It returns io.EOF at the end.
type boundedLines struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newBoundedLines(r io.Reader, max int) *boundedLines {
	return &boundedLines{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (b *boundedLines) next() (line []byte, tooLong bool, err error) {
	b.buf = b.buf[:0]
	read := false
	for {
		frag, err := b.br.ReadSlice('\n')
		read = read || len(frag) > 0
		content := frag
		if err == nil {
			content = frag[:len(frag)-1] // the line ending is not counted
		}
		if room := b.max - len(b.buf); len(content) > room && !tooLong {
			b.buf, tooLong = append(b.buf, content[:room]...), true
		} else if !tooLong {
			b.buf = append(b.buf, content...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && read, err == nil:
			return bytes.TrimSuffix(b.buf, []byte("\r")), tooLong, nil
		}
		return nil, false, err
	}
}
