package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/changerate/changerate/records"
)

// tableWriter collects the estimate records written to it (JSON lines) and
// prints the latest one per object and kind as the demo's readable tables
// (--out-format=table).
type tableWriter struct {
	out    io.Writer
	buf    []byte
	latest map[[2]string]records.Estimate
	bad    int
}

func newTableWriter(out io.Writer) *tableWriter {
	return &tableWriter{out: out, latest: map[[2]string]records.Estimate{}}
}

// Write implements io.Writer: complete lines are decoded, a partial line
// waits for its end.
func (t *tableWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := bytes.TrimSpace(t.buf[:i])
		t.buf = t.buf[i+1:]
		if len(line) == 0 {
			continue
		}
		var e records.Estimate
		if err := json.Unmarshal(line, &e); err != nil {
			t.bad++
			continue
		}
		t.latest[[2]string{e.Object, e.Kind}] = e
	}
}

// print writes the tables of the latest estimates.
func (t *tableWriter) print() error {
	var change, access []records.Estimate
	for _, e := range t.latest {
		if e.Kind == records.EstimateAccess {
			access = append(access, e)
		} else {
			change = append(change, e)
		}
	}
	sort.Slice(change, func(i, j int) bool { return change[i].Object < change[j].Object })
	sort.Slice(access, func(i, j int) bool { return access[i].Object < access[j].Object })
	if t.bad > 0 {
		return fmt.Errorf("table: %d estimate lines could not be decoded", t.bad)
	}
	fmt.Fprintf(t.out, "%d change estimates, %d access estimates\n\n", len(change), len(access))
	return printEstimates(t.out, change, access, nil)
}
