package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// gunzipInput returns in decompressed when it starts with the gzip magic
// bytes (observations kept as obs.jsonl.gz, or a compressed log given by
// mistake, which checkObservations can then recognise), else in as it is.
// Concatenated gzip members are read as one stream, as zcat does.
func gunzipInput(in io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(in, 64<<10)
	magic, err := br.Peek(2)
	if err != nil || !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return br, nil // shorter than 2 bytes or plain: read as it is
	}
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	return gz, nil
}
