// Package idtable is an open-addressing hash table from names to int32
// ids that holds no pointer: the query API's index and the aggregator's
// object cache find their entries by name with it, so that the garbage
// collector neither marks nor scans their millions of objects.
//
// The caller keeps the names (in an arena of its own) and their hashes;
// the table holds, per id, the low 32 bits of its name's hash (the tag,
// which also gives its home position: tables are smaller than 2³²) above
// 1 + the id, in one uint64; 0 is an empty position. Collisions probe
// linearly from the home position, and Delete shifts the positions probed
// after a hole back into it (no tombstones), so a lookup ends at the first
// empty position. The table doubles when one more id would load it beyond
// 4/5. A Table is used by one goroutine.
package idtable

// Table is the table; the zero value is empty (Grow before the first Put).
type Table struct {
	slots []uint64
	n     int // ids in the table
}

// Sizing: at least minSize positions, at most maxLoadNum/maxLoadDen full.
const (
	minSize    = 1 << 10
	maxLoadNum = 4
	maxLoadDen = 5
)

// Len is the number of ids in the table.
func (t *Table) Len() int { return t.n }

// Size is the number of positions (0 before the first Grow).
func (t *Table) Size() int { return len(t.slots) }

// Peek returns the id at the position where a Find of hash starts when
// its tag is uint32(hash) (-1 otherwise): the id Find most likely
// returns, read without comparing. A caller about to Find many hashes
// peeks at them all first and touches what it will compare, so that the
// cache misses of the lookups overlap instead of following one another.
func (t *Table) Peek(hash uint64) int32 {
	if len(t.slots) == 0 {
		return -1
	}
	tag := uint64(uint32(hash))
	if v := t.slots[tag&uint64(len(t.slots)-1)]; v != 0 && v>>32 == tag {
		return int32(uint32(v) - 1)
	}
	return -1
}

// Find returns the id whose tag is uint32(hash) and for which same reports
// true, or -1, and the position where it is or would be put.
func (t *Table) Find(hash uint64, same func(id int32) bool) (int32, uint64) {
	if len(t.slots) == 0 {
		return -1, 0
	}
	mask := uint64(len(t.slots) - 1)
	tag := uint64(uint32(hash))
	for p := tag & mask; ; p = (p + 1) & mask {
		v := t.slots[p]
		if v == 0 {
			return -1, p
		}
		if v>>32 == tag {
			if id := int32(uint32(v) - 1); same(id) {
				return id, p
			}
		}
	}
}

// Put puts id, with the tag of hash, at position p, which Find returned
// for it (with no Grow since).
func (t *Table) Put(p uint64, hash uint64, id int32) {
	t.slots[p] = uint64(uint32(hash))<<32 | uint64(uint32(id)+1)
	t.n++
}

// Grow doubles the table (or makes it) if one more id would load it beyond
// 4/5, and reports whether it did: positions from Find are then stale.
func (t *Table) Grow() bool {
	if len(t.slots) > 0 && (t.n+1)*maxLoadDen <= len(t.slots)*maxLoadNum {
		return false
	}
	size := max(minSize, 2*len(t.slots))
	old := t.slots
	t.slots = make([]uint64, size)
	mask := uint64(size - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		p := (v >> 32) & mask
		for t.slots[p] != 0 {
			p = (p + 1) & mask
		}
		t.slots[p] = v
	}
	return true
}

// Delete removes id, whose tag is uint32(hash), which must be in the table.
func (t *Table) Delete(hash uint64, id int32) {
	mask := uint64(len(t.slots) - 1)
	tag := uint64(uint32(hash))
	want := tag<<32 | uint64(uint32(id)+1)
	p := tag & mask
	for t.slots[p] != want {
		p = (p + 1) & mask
	}
	t.n--
	for {
		t.slots[p] = 0
		q := p
		for {
			q = (q + 1) & mask
			v := t.slots[q]
			if v == 0 {
				return
			}
			// v may fill the hole at p if p lies between its home and q.
			home := (v >> 32) & mask
			if (q-home)&mask >= (q-p)&mask {
				t.slots[p] = v
				p = q
				break
			}
		}
	}
}

// Reset empties the table and drops its memory.
func (t *Table) Reset() { *t = Table{} }
