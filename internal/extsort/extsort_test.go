package extsort

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestSortSpills sorts 20000 random records with a budget that forces
// dozens of runs and checks the output against an in-memory stable sort:
// same records, same order (equal keys keep insertion order).
func TestSortSpills(t *testing.T) {
	for _, budget := range []int64{1 << 30, 64 << 10, 2 << 10} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(budget)))
			// key = first byte; the rest is the insertion index, so the
			// stable order is checkable.
			cmp := func(a, b []byte) int { return int(a[0]) - int(b[0]) }
			dir := t.TempDir()
			s := New(cmp, budget, dir)
			defer s.Close()
			var want [][]byte
			for i := range 20000 {
				r := append([]byte{byte(rng.IntN(50))}, fmt.Sprintf("%06d", i)...)
				want = append(want, r)
				if err := s.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortStableFunc(want, cmp)
			if budget < 1<<20 && s.Runs() < 2 {
				t.Fatalf("budget %d: %d runs, want a spill", budget, s.Runs())
			}
			if budget == 1<<30 && s.Runs() != 0 {
				t.Fatalf("spilled %d runs within budget", s.Runs())
			}
			it := s.Sorted()
			i := 0
			for r, ok := it.Next(); ok; r, ok = it.Next() {
				if i >= len(want) || !bytes.Equal(r, want[i]) {
					t.Fatalf("record %d = %q, want %q", i, r, want[i])
				}
				i++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if i != len(want) {
				t.Fatalf("%d records out, want %d", i, len(want))
			}
			// Runs are unlinked at once: nothing is left in dir.
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("%d files left in the spill directory", len(ents))
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	s := New(bytes.Compare, 0, "")
	it := s.Sorted()
	if _, ok := it.Next(); ok {
		t.Fatal("record from an empty sorter")
	}
	if err := s.Add([]byte("x")); err == nil {
		t.Fatal("Add after Sorted succeeded")
	}
}

func TestSpillDirError(t *testing.T) {
	s := New(bytes.Compare, 1, "/nonexistent/dir")
	_ = s.Add([]byte("a"))
	if err := s.Add([]byte("b")); err == nil {
		t.Fatal("spill to a missing directory succeeded")
	}
}

// BenchmarkSort sorts 100,000 records of 100 bytes in memory and with a
// budget forcing about 40 runs; b.SetBytes reports the throughput.
func BenchmarkSort(b *testing.B) {
	recs := make([][]byte, 100000)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range recs {
		r := make([]byte, 100)
		for j := range r {
			r[j] = byte(rng.IntN(256))
		}
		recs[i] = r
	}
	for _, budget := range []int64{1 << 30, 256 << 10} {
		b.Run(fmt.Sprint(budget), func(b *testing.B) {
			b.SetBytes(int64(len(recs) * 100))
			for b.Loop() {
				s := New(bytes.Compare, budget, b.TempDir())
				for _, r := range recs {
					if err := s.Add(r); err != nil {
						b.Fatal(err)
					}
				}
				it := s.Sorted()
				for _, ok := it.Next(); ok; _, ok = it.Next() {
				}
				s.Close()
			}
		})
	}
}
