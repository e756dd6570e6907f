// Package extsort sorts more byte records than fit in memory: records are
// buffered up to a memory budget, sorted, and spilled as sorted runs to a
// temporary directory; reading merges the runs (and what is still in
// memory) with a k-way heap merge (container/heap). When everything fits,
// no file is written and the sort is an ordinary in-memory sort.
//
// It is hand-written rather than taken from a library: the maintained Go
// external sorts (github.com/lanrat/extsort and its forks) bound a run by a
// record count rather than bytes, run the merge in goroutines behind
// channels, and report I/O errors out of band; this one is ~200 lines,
// bounds memory in bytes (the user's --sort-memory), is deterministic, runs
// on the caller's goroutine and returns every error in line.
//
// Order: records are compared with the caller's cmp; records that compare
// equal keep their insertion order (a stable sort), so the output is a
// pure function of the input sequence and cmp.
package extsort

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// DefaultMemory is the default memory budget: 256 MiB of buffered records.
const DefaultMemory = 256 << 20

// perRecordOverhead approximates the bookkeeping of one buffered record (a
// slice header) in the memory budget.
const perRecordOverhead = 24

// Sorter collects records (Add) and returns them sorted (Sorted). It is not
// safe for concurrent use.
type Sorter struct {
	cmp    func(a, b []byte) int
	dir    string
	budget int64

	recs [][]byte
	mem  int64
	runs []*os.File
	n    int64
	done bool
}

// New returns a Sorter that orders records by cmp, keeps at most memory
// bytes of records in memory (0: DefaultMemory) and spills sorted runs to
// files in dir ("" : os.TempDir()). Runs are removed by Close.
func New(cmp func(a, b []byte) int, memory int64, dir string) *Sorter {
	if memory <= 0 {
		memory = DefaultMemory
	}
	return &Sorter{cmp: cmp, dir: dir, budget: memory}
}

// Add copies rec into the sorter, spilling a sorted run first when the
// memory budget would be exceeded.
func (s *Sorter) Add(rec []byte) error {
	if s.done {
		return errors.New("extsort: Add after Sorted")
	}
	size := int64(len(rec)) + perRecordOverhead
	if s.mem+size > s.budget && len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.recs = append(s.recs, append([]byte(nil), rec...))
	s.mem += size
	s.n++
	return nil
}

// Len is the number of records added.
func (s *Sorter) Len() int64 { return s.n }

// Runs is the number of sorted runs spilled to disk so far.
func (s *Sorter) Runs() int { return len(s.runs) }

func (s *Sorter) spill() error {
	slices.SortStableFunc(s.recs, s.cmp)
	f, err := os.CreateTemp(s.dir, "changerate-sort-*.run")
	if err != nil {
		return fmt.Errorf("extsort: spill: %w", err)
	}
	// Unlinked at once: the open file is the run, and nothing is left
	// behind if the process dies.
	_ = os.Remove(f.Name())
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr [binary.MaxVarintLen64]byte
	for _, r := range s.recs {
		n := binary.PutUvarint(hdr[:], uint64(len(r)))
		if _, err := w.Write(hdr[:n]); err != nil {
			return fmt.Errorf("extsort: spill: %w", err)
		}
		if _, err := w.Write(r); err != nil {
			return fmt.Errorf("extsort: spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("extsort: spill: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("extsort: spill: %w", err)
	}
	clear(s.recs)
	s.recs = s.recs[:0]
	s.mem = 0
	return nil
}

// Iterator returns the records in order. The slice Next returns is valid
// until the next call.
type Iterator struct {
	s    *Sorter
	h    mergeHeap
	cur  []byte
	err  error
	init bool
}

// Sorted ends the input and returns an iterator over the sorted records.
func (s *Sorter) Sorted() *Iterator {
	s.done = true
	it := &Iterator{s: s}
	slices.SortStableFunc(s.recs, s.cmp)
	if len(s.runs) > 0 {
		// Every source: the runs in spill order, then memory (which holds
		// the latest records), so equal records keep insertion order.
		for i, f := range s.runs {
			it.h.srcs = append(it.h.srcs, &source{idx: i, r: bufio.NewReaderSize(f, 256<<10)})
		}
		it.h.srcs = append(it.h.srcs, &source{idx: len(s.runs), mem: s.recs})
	} else {
		it.h.srcs = append(it.h.srcs, &source{mem: s.recs})
	}
	it.h.cmp = s.cmp
	return it
}

// Next returns the next record, or false at the end or on error (see Err).
func (it *Iterator) Next() ([]byte, bool) {
	if it.err != nil {
		return nil, false
	}
	if !it.init {
		it.init = true
		live := it.h.srcs[:0]
		for _, src := range it.h.srcs {
			ok, err := src.advance()
			if err != nil {
				it.err = err
				return nil, false
			}
			if ok {
				live = append(live, src)
			}
		}
		it.h.srcs = live
		heap.Init(&it.h)
	} else if len(it.h.srcs) > 0 {
		// Advance the source of the record returned last.
		top := it.h.srcs[0]
		ok, err := top.advance()
		if err != nil {
			it.err = err
			return nil, false
		}
		if ok {
			heap.Fix(&it.h, 0)
		} else {
			heap.Pop(&it.h)
		}
	}
	if len(it.h.srcs) == 0 {
		return nil, false
	}
	return it.h.srcs[0].cur, true
}

// Err is the first read error of the runs.
func (it *Iterator) Err() error { return it.err }

// Close releases the runs. It is safe to call more than once.
func (s *Sorter) Close() error {
	var first error
	for _, f := range s.runs {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.runs = nil
	s.recs = nil
	return first
}

// source is one sorted run (a file) or the in-memory remainder.
type source struct {
	idx int
	r   *bufio.Reader
	buf []byte
	mem [][]byte
	cur []byte
}

func (s *source) advance() (bool, error) {
	if s.r == nil {
		if len(s.mem) == 0 {
			return false, nil
		}
		s.cur, s.mem = s.mem[0], s.mem[1:]
		return true, nil
	}
	n, err := binary.ReadUvarint(s.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("extsort: read run: %w", err)
	}
	if uint64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	s.buf = s.buf[:n]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		return false, fmt.Errorf("extsort: read run: %w", err)
	}
	s.cur = s.buf
	return true, nil
}

type mergeHeap struct {
	srcs []*source
	cmp  func(a, b []byte) int
}

func (h *mergeHeap) Len() int { return len(h.srcs) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := h.cmp(h.srcs[i].cur, h.srcs[j].cur); c != 0 {
		return c < 0
	}
	return h.srcs[i].idx < h.srcs[j].idx
}
func (h *mergeHeap) Swap(i, j int) { h.srcs[i], h.srcs[j] = h.srcs[j], h.srcs[i] }
func (h *mergeHeap) Push(x any)    { h.srcs = append(h.srcs, x.(*source)) }
func (h *mergeHeap) Pop() any {
	n := len(h.srcs)
	x := h.srcs[n-1]
	h.srcs = h.srcs[:n-1]
	return x
}
