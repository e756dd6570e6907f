package estimators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorrupt is wrapped by every DecodeBinary error.
var ErrCorrupt = errors.New("estimators: corrupt state encoding")

// encodingVersion is stored in the high nibble of the first byte.
const encodingVersion = 1

const (
	secVisits  = 1 << 0
	secLastMod = 1 << 1
	secMatloff = 1 << 2
	secDirect  = 1 << 3
)

// AppendBinary appends the compact, lossless encoding of c to dst:
//
//	byte      version<<4 | section flags
//	visits:   uvarint visits, uvarint X; float64 first; if visits > 1:
//	          float64 last, Σ I², Σ t_u, Σ t_c; uvarint #non-empty buckets, then
//	          per bucket uvarint (index − previous index − 1), uvarint count
//	lastmod:  uvarint N, X (Fig. 10), float64 T; uvarint ages, float64 Σ age
//	matloff:  uvarint periods, M_n, #(0,h); float64 Σ τ, Σ W/τ
//
// Floats are 8-byte little-endian IEEE 754, so DecodeBinary restores every
// field bit for bit. A crawler object with Last-Modified and a few interval
// buckets takes about 70 bytes.
func (c *Change) AppendBinary(dst []byte) []byte {
	var flags byte
	if c.visits != 0 || c.changes != 0 || c.first != 0 || c.last != 0 || c.sumSq != 0 || c.unchanged != 0 || c.changedT != 0 || c.buckets != [NumBuckets]uint32{} {
		flags |= secVisits
	}
	if c.lmN != 0 || c.lmX != 0 || c.lmT != 0 || c.ageN != 0 || c.ageSum != 0 {
		flags |= secLastMod
	}
	if c.mat != (matloffState{}) {
		flags |= secMatloff
	}
	dst = append(dst, encodingVersion<<4|flags)
	if flags&secVisits != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.visits))
		dst = binary.AppendUvarint(dst, uint64(c.changes))
		dst = appendF64(dst, c.first)
		if c.visits != 1 || c.changes != 0 {
			// Long form; a baseline-only state (one visit) has last ==
			// first and no interval data, so it is just its time.
			dst = appendF64(dst, c.last)
			dst = appendF64(dst, c.sumSq)
			dst = appendF64(dst, c.unchanged)
			dst = appendF64(dst, c.changedT)
			nb := 0
			for _, cnt := range c.buckets {
				if cnt != 0 {
					nb++
				}
			}
			dst = binary.AppendUvarint(dst, uint64(nb))
			prev := -1
			for b, cnt := range c.buckets {
				if cnt != 0 {
					dst = binary.AppendUvarint(dst, uint64(b-prev-1))
					dst = binary.AppendUvarint(dst, uint64(cnt))
					prev = b
				}
			}
		}
	}
	if flags&secLastMod != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.lmN))
		dst = binary.AppendUvarint(dst, uint64(c.lmX))
		dst = appendF64(dst, c.lmT)
		dst = binary.AppendUvarint(dst, uint64(c.ageN))
		dst = appendF64(dst, c.ageSum)
	}
	if flags&secMatloff != 0 {
		dst = c.mat.append(dst)
	}
	return dst
}

// DecodeBinary replaces c with the state encoded at the start of src by
// AppendBinary and returns the number of bytes read. On error (wrapping
// ErrCorrupt) c is left unchanged. It validates the invariants that Visit
// and Snapshot maintain, so a decoded state is always one that updates
// could have produced (up to float rounding).
func (c *Change) DecodeBinary(src []byte) (n int, err error) {
	d := decoder{b: src}
	flags := d.header(secVisits | secLastMod | secMatloff)
	var s Change
	if flags&secVisits != 0 {
		s.visits = d.count()
		s.changes = d.count()
		s.first = d.f64()
		if s.visits != 1 || s.changes != 0 {
			s.last = d.f64()
			s.sumSq = d.f64()
			s.unchanged = d.f64()
			s.changedT = d.f64()
			nb := d.count()
			if nb > NumBuckets {
				d.fail("too many buckets")
			}
			prev := -1
			var sum int64
			for i := int64(0); i < nb && d.err == nil; i++ {
				gap := d.count()
				cnt := d.count()
				b := int64(prev) + 1 + gap
				if gap > NumBuckets || b >= NumBuckets || cnt == 0 || cnt > math.MaxUint32 {
					d.fail("bad bucket")
					break
				}
				s.buckets[b] = uint32(cnt)
				sum += cnt
				prev = int(b)
			}
			if d.err == nil {
				switch {
				case s.visits < 1:
					d.fail("intervals without baseline")
				case s.changes > s.visits-1:
					d.fail("more changes than intervals")
				case sum > s.changes:
					d.fail("bucket counts exceed changes")
				case !finite(s.first) || !finite(s.last) || !(s.last >= s.first):
					d.fail("bad visit times")
				case !(s.sumSq >= 0) || !finite(s.sumSq) || !(s.unchanged >= 0) || !finite(s.unchanged) || !(s.changedT >= 0) || !finite(s.changedT):
					d.fail("bad interval sums")
				case s.visits == 1 && (s.last != s.first || s.sumSq != 0 || s.unchanged != 0 || s.changedT != 0):
					d.fail("baseline with interval data")
				}
			}
		} else {
			s.last = s.first
			if d.err == nil && !finite(s.first) {
				d.fail("bad visit time")
			}
		}
	}
	if flags&secLastMod != 0 {
		s.lmN = d.count()
		s.lmX = d.count()
		s.lmT = d.f64()
		s.ageN = d.count()
		s.ageSum = d.f64()
		if d.err == nil {
			switch {
			case s.lmX > s.lmN || s.lmN > s.Intervals() || s.ageN > s.visits:
				d.fail("last-modified counts")
			case !(s.lmT >= 0) || !finite(s.lmT) || !(s.ageSum >= 0) || !finite(s.ageSum):
				d.fail("last-modified sums")
			}
		}
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if d.err != nil {
		return 0, d.err
	}
	*c = s
	return d.off, nil
}

// AppendBinary appends the compact, lossless encoding of a:
//
//	byte     version<<4 | section flags
//	direct:  uvarint accesses, float64 first; if accesses > 1 or last ≠ first: float64 last
//	matloff: as for Change
//
// About 20 bytes for direct data only, 30 for snapshots only.
func (a *Access) AppendBinary(dst []byte) []byte {
	var flags byte
	if a.n != 0 || a.first != 0 || a.last != 0 {
		flags |= secDirect
	}
	if a.mat != (matloffState{}) {
		flags |= secMatloff
	}
	dst = append(dst, encodingVersion<<4|flags)
	if flags&secDirect != 0 {
		dst = binary.AppendUvarint(dst, uint64(a.n))
		dst = appendF64(dst, a.first)
		if a.n != 1 {
			dst = appendF64(dst, a.last)
		}
	}
	if flags&secMatloff != 0 {
		dst = a.mat.append(dst)
	}
	return dst
}

// DecodeBinary replaces a with the state encoded at the start of src and
// returns the bytes read; errors wrap ErrCorrupt and leave a unchanged.
func (a *Access) DecodeBinary(src []byte) (int, error) {
	d := decoder{b: src}
	flags := d.header(secDirect | secMatloff)
	var s Access
	if flags&secDirect != 0 {
		s.n = d.count()
		s.first = d.f64()
		s.last = s.first
		if s.n != 1 {
			s.last = d.f64()
		}
		if d.err == nil && (!finite(s.first) || !finite(s.last) || !(s.last >= s.first) || (s.n == 0 && (s.first != 0 || s.last != 0))) {
			d.fail("bad access times")
		}
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if d.err != nil {
		return 0, d.err
	}
	*a = s
	return d.off, nil
}

func (s *matloffState) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(s.n))
	dst = binary.AppendUvarint(dst, uint64(s.m))
	dst = binary.AppendUvarint(dst, uint64(s.kern))
	dst = appendF64(dst, s.sumTau)
	return appendF64(dst, s.sumU)
}

func (s *matloffState) decode(d *decoder) {
	s.n = d.count()
	s.m = d.count()
	s.kern = d.count()
	s.sumTau = d.f64()
	s.sumU = d.f64()
	if d.err != nil {
		return
	}
	switch {
	case s.m > s.n || s.kern > s.m:
		d.fail("snapshot counts")
	case !finite(s.sumTau) || !(s.sumTau >= 0) || (s.n > 0) != (s.sumTau > 0):
		d.fail("snapshot periods")
	case !finite(s.sumU) || !(s.sumU >= 0) || s.sumU > float64(s.m):
		d.fail("snapshot times")
	}
}

func appendF64(dst []byte, x float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
}

// decoder reads with sticky errors.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(why string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, why, d.off)
	}
}

func (d *decoder) header(allowed byte) byte {
	if d.off >= len(d.b) {
		d.fail("empty")
		return 0
	}
	h := d.b[d.off]
	d.off++
	if h>>4 != encodingVersion {
		d.fail(fmt.Sprintf("unknown version %d", h>>4))
		return 0
	}
	if f := h & 0x0f; f&^allowed != 0 {
		d.fail("unknown section")
		return 0
	}
	return h & 0x0f
}

// count reads a uvarint that must fit a non-negative int64.
func (d *decoder) count() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	if v > math.MaxInt64 {
		d.fail("count overflow")
		return 0
	}
	d.off += n
	return int64(v)
}

func (d *decoder) f64() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.fail("short float")
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return x
}
