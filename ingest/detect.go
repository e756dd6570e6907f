package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/changerate/changerate/parse"
)

// SampleLines is how many leading lines DetectFormat looks at.
const SampleLines = 20

// DetectFormat reads the first lines of the first input among paths
// (files, directories or globs, expanded as Run does; stdin cannot be
// sampled) and returns the formats whose parser accepts them, best first
// (parse.Detect), with the input it sampled.
func DetectFormat(paths []string, cfg parse.Config) ([]parse.Candidate, string, error) {
	inputs, err := expandPaths(paths)
	if err != nil {
		return nil, "", err
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		sample, err := sampleFile(in, SampleLines)
		if err != nil {
			return nil, in, err
		}
		return parse.Detect(sample, cfg), in, nil
	}
	return nil, "", fmt.Errorf("ingest: no file to detect the format from (stdin cannot be sampled)")
}

// sampleFile returns the first n non-blank lines of a plain or gzip file.
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
		r = gz
	}
	sc := bufio.NewScanner(io.LimitReader(r, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out [][]byte
	for len(out) < n && sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	return out, nil
}
