package aggregate

// slab is the memory of the cache's names and encoded states: byte slots
// in size classes, carved from chunks of slabChunkBytes that hold no
// pointers. The cache's entries refer to their slot by a slabRef, not a
// pointer, so a cached object is no heap object of its own: the garbage
// collector marks a chunk per about 300 objects instead of the three or
// four allocations per object of a map of entries with their own name and
// encoding, and never scans inside a chunk. Freed slots go to their
// class's free list and are reused by the next allocation of that class;
// chunks are kept until reset (the cache's memory stays at its peak, as a
// malloc arena's does). A slot larger than the largest class is a []byte
// of its own (slabBig), which names of many kilobytes need.
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
	carved uint32 // slots carved from the chunks so far
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

// slabRef names one slot: the class in the top 6 bits (slabBig for a
// []byte of its own) and 1 + the slot's index in its class below; 0 is no
// slot.
type slabRef uint32

const (
	slabClassShift = 26
	slabIndexMask  = 1<<slabClassShift - 1
	slabBig        = 63
)

func makeSlabRef(class, i uint32) slabRef { return slabRef(class<<slabClassShift | (i + 1)) }

func (r slabRef) class() uint32 { return uint32(r) >> slabClassShift }
func (r slabRef) index() uint32 { return uint32(r)&slabIndexMask - 1 }

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

// alloc returns a slot of at least n bytes and its bytes (the whole slot:
// len is the slot's size, which may exceed n).
func (s *slab) alloc(n int) (slabRef, []byte) {
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
	}
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
}

// reset drops every slot and chunk.
func (s *slab) reset() { *s = slab{} }
