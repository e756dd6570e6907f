package aggregate

import "slices"

// slab is the memory of the cache's names and encoded states: byte slots
// in size classes, carved from chunks of slabChunkBytes that hold no
// pointers. The cache's entries refer to their slot by a slabRef, not a
// pointer, so a cached object is no heap object of its own: the garbage
// collector marks a chunk per about 300 objects instead of the three or
// four allocations per object of a map of entries with their own name and
// encoding, and never scans inside a chunk. Freed slots go to their
// class's free list and are reused by the next allocation of that class.
// An object's state grows with its history, so its slot moves up the
// classes and the classes below keep free slots that no new object may
// take: compact moves a class's live slots down into its free ones and
// drops the chunks left empty, once a quarter of the class is free. A slot
// larger than the largest class is a []byte of its own (slabBig), which
// names of many kilobytes need.
//
// A slab is used by one goroutine.
type slab struct {
	classes [len(slabClassSizes)]slabClass
	big     [][]byte // slots beyond the largest class; nil: free
	bigFree []uint32
}

// slabClass is the slots of one size: slot i is at chunks[i/per][(i%per)*size:].
type slabClass struct {
	chunks [][]byte
	free   []uint32
	owner  []int32 // the owner of each carved slot (alloc); -1: free
	carved uint32  // slots carved from the chunks so far
}

// slabChunkBytes is the size of a chunk of slots.
const slabChunkBytes = 64 << 10

// slabClassSizes are the slot sizes: from 64 bytes on, each at most a
// quarter above the one before (an eighth up to 384 bytes), so that a
// slot of 64 bytes or more wastes less than a fifth of itself (less than
// a ninth for the 100–300 bytes a name and state take in the live shape).
var slabClassSizes = [...]uint32{
	16, 32, 48, 64, 72, 80, 88, 96, 104, 112, 120, 128,
	144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
	5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 20480, 24576,
	28672, 32768, 40960, 49152, 57344, 65536,
}

// slabRef names one slot: the class in the high 32 bits (slabBig for a
// []byte of its own) and 1 + the slot's index in its class in the low 32
// (a class has fewer slots than the cache has entries, whose ids are
// int32); 0 is no slot.
type slabRef uint64

const slabBig = 1<<32 - 1

func makeSlabRef(class, i uint32) slabRef { return slabRef(uint64(class)<<32 | (uint64(i) + 1)) }

func (r slabRef) class() uint32 { return uint32(r >> 32) }
func (r slabRef) index() uint32 { return uint32(r) - 1 }

// slabClassOf is the smallest class whose slots hold n bytes, or slabBig.
func slabClassOf(n int) uint32 {
	lo, hi := 0, len(slabClassSizes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(slabClassSizes[m]) < n {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(slabClassSizes) {
		return slabBig
	}
	return uint32(lo)
}

// slabSlotBytes is the size of the slot that n bytes take.
func slabSlotBytes(n int) int {
	if c := slabClassOf(n); c != slabBig {
		return int(slabClassSizes[c])
	}
	return n
}

// alloc returns a slot of at least n bytes for owner (an id that compact
// hands back when it moves the slot) and its bytes (the whole slot: len is
// the slot's size, which may exceed n).
func (s *slab) alloc(n int, owner int32) (slabRef, []byte) {
	c := slabClassOf(n)
	if c == slabBig {
		b := make([]byte, n)
		if k := len(s.bigFree); k > 0 {
			i := s.bigFree[k-1]
			s.bigFree = s.bigFree[:k-1]
			s.big[i] = b
			return makeSlabRef(slabBig, i), b
		}
		s.big = append(s.big, b)
		return makeSlabRef(slabBig, uint32(len(s.big)-1)), b
	}
	cl := &s.classes[c]
	var i uint32
	if k := len(cl.free); k > 0 {
		i = cl.free[k-1]
		cl.free = cl.free[:k-1]
	} else {
		size := slabClassSizes[c]
		per := uint32(slabChunkBytes) / size
		if cl.carved == uint32(len(cl.chunks))*per {
			cl.chunks = append(cl.chunks, make([]byte, slabChunkBytes))
		}
		i = cl.carved
		cl.carved++
		cl.owner = append(cl.owner, -1)
	}
	cl.owner[i] = owner
	r := makeSlabRef(c, i)
	return r, s.bytes(r)
}

// bytes is r's whole slot.
func (s *slab) bytes(r slabRef) []byte {
	c := r.class()
	if c == slabBig {
		return s.big[r.index()]
	}
	size := slabClassSizes[c]
	per := uint32(slabChunkBytes) / size
	i := r.index()
	off := (i % per) * size
	return s.classes[c].chunks[i/per][off : off+size : off+size]
}

// size is the size of r's slot.
func (s *slab) size(r slabRef) int {
	if c := r.class(); c != slabBig {
		return int(slabClassSizes[c])
	}
	return len(s.big[r.index()])
}

// free returns r's slot to its class.
func (s *slab) free(r slabRef) {
	c, i := r.class(), r.index()
	if c == slabBig {
		s.big[i] = nil
		s.bigFree = append(s.bigFree, i)
		return
	}
	s.classes[c].free = append(s.classes[c].free, i)
	s.classes[c].owner[i] = -1
}

// compact moves, in each class of which at least a chunk's worth and a
// quarter of the slots carved are free, the live slots above the class's
// live count into the free slots below it, calling moved with each moved
// slot's owner and new ref, and drops the chunks left empty. Every slice
// of a moved slot (bytes) is stale afterwards.
func (s *slab) compact(moved func(owner int32, to slabRef)) {
	for c := range s.classes {
		cl := &s.classes[c]
		size := slabClassSizes[c]
		per := uint32(slabChunkBytes) / size
		nfree := uint32(len(cl.free))
		if nfree < per || 4*nfree < cl.carved {
			continue
		}
		slices.Sort(cl.free)
		live := cl.carved - nfree
		j := cl.carved
		for _, f := range cl.free {
			if f >= live {
				break // the free slots from here on are all dropped
			}
			// As many live slots lie at or above live as free ones below
			// it: the next one down exists.
			j--
			for cl.owner[j] < 0 {
				j--
			}
			to, from := makeSlabRef(uint32(c), f), makeSlabRef(uint32(c), j)
			copy(s.bytes(to), s.bytes(from))
			cl.owner[f], cl.owner[j] = cl.owner[j], -1
			moved(cl.owner[f], to)
		}
		cl.carved, cl.free, cl.owner = live, cl.free[:0], cl.owner[:live]
		keep := (live + per - 1) / per
		clear(cl.chunks[keep:])
		cl.chunks = cl.chunks[:keep]
	}
}

// reset drops every slot and chunk.
func (s *slab) reset() { *s = slab{} }
