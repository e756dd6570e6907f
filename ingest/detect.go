package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/changerate/changerate/parse"
)

// SampleLines is how many leading lines DetectFormat looks at.
const SampleLines = 20

// ErrNothingToSample is wrapped by DetectFormat's error when no input has
// a line to detect the format from (only stdin, or only empty files).
var ErrNothingToSample = errors.New("no file with lines to detect the format from")

// DetectFormat reads the first lines of the first input among paths
// (files, directories or globs, expanded as Run does; stdin cannot be
// sampled) that has any, and returns the formats whose parser accepts them,
// best first (parse.Detect), with the input it sampled. Empty inputs are
// passed over: the current file of a rotated log set is often empty.
func DetectFormat(paths []string, cfg parse.Config) ([]parse.Candidate, string, error) {
	inputs, err := expandPaths(paths)
	if err != nil {
		return nil, "", err
	}
	stdin, empty := false, 0
	for _, in := range inputs {
		if in == "-" {
			stdin = true
			continue
		}
		sample, err := sampleFile(in, SampleLines)
		if err != nil {
			return nil, in, err
		}
		if len(sample) == 0 {
			empty++
			continue
		}
		return parse.Detect(sample, cfg), in, nil
	}
	var why []string
	if empty > 0 {
		why = append(why, fmt.Sprintf("%d empty file(s)", empty))
	}
	if stdin {
		why = append(why, "stdin cannot be sampled")
	}
	return nil, "", fmt.Errorf("ingest: %w (%s)", ErrNothingToSample, strings.Join(why, "; "))
}

// sampleFile returns the first n non-blank lines of a plain or gzip file,
// as Run gives them to the parser: without the line ending, otherwise
// untouched (a parser may depend on leading or trailing blanks, e.g. the
// empty last fields of a TSV line). Lines longer than sampleMaxLine, which
// no parser sees whole, are passed over.
func sampleFile(path string, n int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("ingest: %s: gzip: %w", path, err)
		}
		defer gz.Close()
		gz.Multistream(true)
		r = gz
	}
	return sampleLines(io.LimitReader(r, 4<<20), n, true), nil
}

// sampleLines returns the first n non-blank lines of r as sampleFile does;
// a last line without a newline only when final.
func sampleLines(r io.Reader, n int, final bool) [][]byte {
	lr := newLineReader(bufio.NewReaderSize(r, 64<<10), sampleMaxLine, 0)
	var out [][]byte
	for len(out) < n {
		l, tooLong, err := lr.next(final)
		if err != nil {
			break
		}
		if !tooLong && len(bytes.TrimSpace(l)) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	return out
}

// peekSample returns the first n non-blank lines of br (stdin) without
// consuming them: it waits until br holds n lines, is full, or its stream
// ends (or fails: the reading that follows reports it).
func peekSample(br *bufio.Reader, n int) [][]byte {
	end := false
	for {
		buf, _ := br.Peek(br.Buffered())
		if bytes.Count(buf, []byte{'\n'}) >= n || br.Buffered() >= br.Size() {
			break
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			end = true
			break
		}
	}
	buf, _ := br.Peek(br.Buffered())
	return sampleLines(bytes.NewReader(buf), n, end)
}

// sampleMaxLine is the longest line sampleFile returns.
const sampleMaxLine = 1 << 20
