package idtable

import (
	"math/rand/v2"
	"testing"
)

// TestTableAgainstMap puts, finds and deletes random ids with few distinct
// hashes (so that runs of collisions wrap around the table and deletions
// shift them back) and checks every id against a map after each step.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb Table
	ref := map[int32]uint64{} // id → hash
	next := int32(0)
	find := func(h uint64, id int32) int32 {
		got, _ := tb.Find(h, func(c int32) bool { return c == id })
		return got
	}
	for step := range 200000 {
		if rng.IntN(3) > 0 || len(ref) == 0 {
			// hashes in a narrow band: long probe runs, some near the end
			// of the table (wrapping to its start)
			h := uint64(rng.IntN(64)) | uint64(rng.Uint32())<<32
			if rng.IntN(2) == 0 {
				h = uint64(uint32(minSize-1-rng.IntN(8))) | uint64(rng.Uint32())<<32
			}
			if len(ref) < 3000 {
				tb.Grow()
				_, p := tb.Find(h, func(int32) bool { return false })
				tb.Put(p, h, next)
				ref[next] = h
				next++
			}
		} else {
			for id, h := range ref {
				tb.Delete(h, id)
				delete(ref, id)
				break
			}
		}
		if step%1000 == 0 || len(ref) < 20 {
			if tb.Len() != len(ref) {
				t.Fatalf("step %d: Len %d, want %d", step, tb.Len(), len(ref))
			}
			for id, h := range ref {
				if got := find(h, id); got != id {
					t.Fatalf("step %d: id %d (hash %x) found as %d", step, id, h, got)
				}
			}
			// Peek names an id with the same tag, or none, and finds
			// the ids that sit where their search starts (few here: the
			// hashes are made to collide).
			home := 0
			for id, h := range ref {
				got := tb.Peek(h)
				if got >= 0 && uint32(ref[got]) != uint32(h) {
					t.Fatalf("step %d: Peek of hash %x gives id %d (hash %x)", step, h, got, ref[got])
				}
				if got == id {
					home++
				}
			}
			if len(ref) > 0 && home == 0 {
				t.Fatalf("step %d: Peek found %d of %d ids", step, home, len(ref))
			}
			if got := find(12345, next+1); got != -1 {
				t.Fatalf("step %d: an absent id found as %d", step, got)
			}
		}
	}
	if tb.Size() < minSize || tb.Len()*maxLoadDen > tb.Size()*maxLoadNum {
		t.Fatalf("size %d for %d ids", tb.Size(), tb.Len())
	}
	tb.Reset()
	if tb.Len() != 0 || tb.Size() != 0 {
		t.Fatal("Reset left ids")
	}
}
