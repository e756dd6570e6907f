package main

import (
	"bytes"
	"io"
	"testing"
)

// FuzzBoundedLines compares boundedLines with splitting the whole input
// at '\n': the same lines, each cut at max bytes (tooLong when cut), a
// trailing '\r' dropped, a last line without '\n' kept.
func FuzzBoundedLines(f *testing.F) {
	f.Add([]byte("a\r\nbb\nccc"), 2)
	f.Add(bytes.Repeat([]byte("x"), 70_000), 65_536)
	f.Add([]byte("\n\n\r\n"), 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<20 {
			return
		}
		var want [][]byte
		var long []bool
		segs := bytes.Split(in, []byte("\n"))
		if len(segs[len(segs)-1]) == 0 {
			segs = segs[:len(segs)-1] // in ends with '\n' (or is empty)
		}
		for _, s := range segs {
			tl := len(s) > max
			if tl {
				s = s[:max]
			}
			want, long = append(want, bytes.TrimSuffix(s, []byte("\r"))), append(long, tl)
		}
		b := newBoundedLines(bytes.NewReader(in), max)
		for i := range want {
			l, tl, err := b.next()
			if err != nil || !bytes.Equal(l, want[i]) || tl != long[i] {
				t.Fatalf("line %d: %q %v %v, want %q %v", i+1, l, tl, err, want[i], long[i])
			}
		}
		if l, _, err := b.next(); err != io.EOF {
			t.Fatalf("after %d lines: %q %v, want EOF", len(want), l, err)
		}
	})
}
