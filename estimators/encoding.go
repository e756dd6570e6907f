package estimators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/changerate/changerate/internal/wire"
)

// ErrCorrupt is wrapped by every DecodeBinary error.
var ErrCorrupt = errors.New("estimators: corrupt state encoding")

// encodingVersion is stored in the high nibble of the first byte. Version 1
// (float64 seconds, uvarint bucket pairs) is still decoded; see decodeV1.
// Access writes version 2; Change writes changeVersion.
const encodingVersion = 2

// changeVersion is Change's encoding: version 2 plus the spacing
// statistics of the change flags (dependence.go, R2). Version 3 (the lag-1
// pair count, D3, in their place) and version 2 (neither) still decode:
// the statistics start from their values under the dependence the state
// had measured (importSpacings).
const changeVersion = 4

const (
	secVisits  = 1 << 0
	secLastMod = 1 << 1
	secMatloff = 1 << 2
	secDirect  = 1 << 3
	// secExtra (Change only; Access uses the bit for secDirect): the
	// count of complete change events and of "gone" answers. States
	// written before it have no such section and decode with neither.
	secExtra = 1 << 3
)

// maxMillis bounds decoded times and durations (MaxTime in ms), as Visit
// and Access do for their inputs.
const maxMillis = MaxTime * 1000

// AppendBinary appends the compact, lossless encoding of c to dst:
//
//	byte      version<<4 | section flags
//	visits:   uvarint visits, uvarint X, varint ref−last (ms); if visits > 1:
//	          uvarint last−first (ms), float32 Σ I² (s²), uvarint Σ t_c (ms),
//	          uvarint #non-empty buckets, then per bucket the Elias-gamma
//	          code of (index − previous index; for the first bucket, the
//	          zig-zag of the bucket of the mean changed interval − index, +1)
//	          and the Rice code of count−1 with k = ⌊log2(X/#buckets)⌋,
//	          then, if 0 < X < n ≤ 2³¹−1, the spacing statistics run and
//	          Q_c (dependence.go, R2): the Elias-gamma code of run + 1 and
//	          the exponential-Golomb code of order k = spacingParam of
//	          zigzag(Q_c − E) (Elias gamma of its bits above k, plus 1,
//	          then the Rice code of its k low bits), E = round(2M(M−1)/(X+1)
//	          + 3M + X) the expectation of Q_c for independent flags given
//	          X spacings summing to n − run (M = n − run − X;
//	          expectedSpacingSq), all bit-packed and zero-padded to a byte
//	          (X = 0 has run = n, Q_c = 0, and X = n has run = 0, Q_c = X)
//	lastmod:  uvarint N, X (Fig. 10), T (ms), ages, Σ age (ms)
//	matloff:  uvarint periods, M_n, #(0,h); float64 Σ τ, Σ W/τ
//	extra:    uvarint complete change events (Visit.Complete), uvarint
//	          "gone" answers since the latest visit (MarkGone)
//
// ref (seconds) is a time the caller passes again to DecodeBinaryAt, best
// the object's latest observation, which makes the latest visit time 1–3
// bytes. DecodeBinaryAt restores every field exactly. A crawler object with
// a few dozen visits and Last-Modified takes about 35 bytes; a year of
// revalidations every few hours about 55. It does not allocate when dst has
// room.
func (c *Change) AppendBinaryAt(dst []byte, ref float64) []byte {
	var flags byte
	if c.visits != 0 || c.changes != 0 || c.first != 0 || c.last != 0 || c.sumSq != 0 || c.changedT != 0 || c.buckets != [NumBuckets]uint32{} {
		flags |= secVisits
	}
	if c.lmN != 0 || c.lmX != 0 || c.lmT != 0 || c.ageN != 0 || c.ageSum != 0 {
		flags |= secLastMod
	}
	if c.mat != (matloffState{}) {
		flags |= secMatloff
	}
	if c.events != 0 || c.gone != 0 {
		flags |= secExtra
	}
	dst = append(dst, changeVersion<<4|flags)
	if flags&secVisits != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.visits))
		dst = binary.AppendUvarint(dst, uint64(c.changes))
		dst = binary.AppendVarint(dst, refMillis(ref)-c.last)
		if c.visits != 1 || c.changes != 0 {
			// Long form; a baseline-only state (one visit) has last ==
			// first and no interval data, so it is just its time.
			dst = binary.AppendUvarint(dst, uint64(c.last-c.first))
			dst = wire.AppendFloat32(dst, c.sumSq)
			dst = binary.AppendUvarint(dst, uint64(c.changedT))
			nb := 0
			for _, cnt := range c.buckets {
				if cnt != 0 {
					nb++
				}
			}
			dst = binary.AppendUvarint(dst, uint64(nb))
			w := wire.NewBitWriter(dst)
			k := riceParam(c.changes, int64(nb))
			prev := -1
			for b, cnt := range c.buckets {
				if cnt != 0 {
					if prev < 0 {
						w.Gamma(zigzag(int64(meanBucket(c.changedT, c.changes)-b)) + 1)
					} else {
						w.Gamma(uint64(b - prev))
					}
					w.Rice(uint64(cnt-1), k)
					prev = b
				}
			}
			if n := c.Intervals(); c.spacingsCoded() {
				l := n - c.run
				z, k := zigzag(c.sq-expectedSpacingSq(l, c.changes)), spacingParam(l, c.changes)
				w.Gamma(uint64(c.run) + 1)
				w.Gamma(z>>k + 1)
				w.Rice(z&(1<<k-1), k)
			}
			dst = w.Finish()
		}
	}
	if flags&secLastMod != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.lmN))
		dst = binary.AppendUvarint(dst, uint64(c.lmX))
		dst = binary.AppendUvarint(dst, uint64(c.lmT))
		dst = binary.AppendUvarint(dst, uint64(c.ageN))
		dst = binary.AppendUvarint(dst, uint64(c.ageSum))
	}
	if flags&secMatloff != 0 {
		dst = c.mat.append(dst)
	}
	if flags&secExtra != 0 {
		dst = binary.AppendUvarint(dst, uint64(c.events))
		dst = binary.AppendUvarint(dst, uint64(c.gone))
	}
	return dst
}

// AppendBinary is AppendBinaryAt(dst, 0).
func (c *Change) AppendBinary(dst []byte) []byte { return c.AppendBinaryAt(dst, 0) }

// DecodeBinary is DecodeBinaryAt(src, 0).
func (c *Change) DecodeBinary(src []byte) (n int, err error) { return c.DecodeBinaryAt(src, 0) }

// riceParam is the Rice parameter for bucket counts: ⌊log2(X/nb)⌋, the
// magnitude of the mean count (0 when it is below 2). Every count c ≤ X then
// has (c−1)>>k < 4·nb+4, the bound the decoder enforces.
func riceParam(changes, nb int64) uint {
	if nb <= 0 || changes/nb < 2 {
		return 0
	}
	return uint(bits.Len64(uint64(changes/nb)) - 1)
}

// meanBucket is the bucket of the mean changed interval Σt_c/X (0 without
// changes), which predicts the first non-empty bucket. Division and
// BucketOf are exact operations, so encoder and decoder agree everywhere.
func meanBucket(changedT, changes int64) int {
	if changes <= 0 {
		return 0
	}
	return BucketOf(seconds(changedT) / float64(changes))
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// refMillis is ref in whole milliseconds (0 when ref is not a valid time).
func refMillis(ref float64) int64 {
	if !validTime(ref) {
		return 0
	}
	return millis(ref)
}

// DecodeBinaryAt replaces c with the state encoded at the start of src by
// AppendBinaryAt with the same ref (or by version 1, which ignores ref) and
// returns the number of bytes read. On error (wrapping ErrCorrupt) c is left
// unchanged. It validates the invariants that Visit and Snapshot maintain,
// so a decoded state is always one that updates could have produced (up to
// float rounding).
func (c *Change) DecodeBinaryAt(src []byte, ref float64) (n int, err error) {
	d := decoder{r: reader{wire.NewReader(src)}}
	version, flags := d.header(secVisits|secLastMod|secMatloff|secExtra, changeVersion)
	if d.err() == nil && version == 1 {
		return c.decodeV1(src)
	}
	var s Change
	prev, pairD := false, 1.0 // the version-3 statistics (importSpacings)
	if flags&secVisits != 0 {
		s.visits = d.r.Count()
		s.changes = d.r.Count()
		s.last = d.r.relTime(ref)
		s.first = s.last
		if s.visits != 1 || s.changes != 0 {
			span := d.r.Count()
			s.sumSq = d.r.Float32()
			s.changedT = d.r.Count()
			nb := d.r.Count()
			if d.err() == nil && (span >= 2*maxMillis || s.last-span <= -maxMillis) {
				d.r.Fail("bad visit times")
			}
			s.first = s.last - span
			if nb > NumBuckets {
				d.r.Fail("too many buckets")
			}
			var sum int64
			coded := version == changeVersion && s.spacingsCoded()
			if d.err() == nil && (nb > 0 || coded) {
				br := wire.NewBitReader(d.r.Rest())
				k := riceParam(s.changes, nb)
				b := int64(-1)
				for i := int64(0); i < nb && !br.Failed(); i++ {
					g := br.Gamma()
					var next int64
					if i == 0 {
						next = int64(meanBucket(s.changedT, s.changes)) - unzigzag(g-1)
					} else {
						next = b + int64(min(g, NumBuckets))
					}
					cnt := br.Rice(k, uint64(4*nb+4)) + 1
					if br.Failed() || next <= b || next >= NumBuckets || cnt > math.MaxUint32 {
						d.r.Fail("bad bucket")
						break
					}
					b = next
					s.buckets[b] = uint32(cnt)
					sum += int64(cnt)
				}
				if coded && d.err() == nil && !br.Failed() {
					s.decodeSpacings(&br, &d)
				}
				if br.Failed() || !br.Padding() {
					d.r.Fail("bad bucket bits")
				}
				d.r.Skip(br.Bytes())
			}
			n, x := s.Intervals(), s.changes
			switch {
			case d.err() != nil || x > n:
				// reported below
			case version == changeVersion:
				if !coded {
					s.importSpacings(false, 1) // exact: X ∈ {0, n}, or not kept
				}
			case version == 3:
				pc := d.r.Uvarint()
				pairs := unzigzag(pc>>1) + expectedPairs(n, x)
				prev = pc&1 == 1
				if pairs < 0 || pairs > max(x-1, 0) || (prev && x == 0) {
					d.r.Fail("bad dependence count")
				}
				pairD = pairFactor(n, x, pairs)
			}
			if d.err() == nil {
				switch {
				case s.visits < 1:
					d.r.Fail("intervals without baseline")
				case s.changes > s.visits-1:
					d.r.Fail("more changes than intervals")
				case sum > s.changes:
					d.r.Fail("bucket counts exceed changes")
				case s.changedT > span:
					d.r.Fail("changed time exceeds span")
				case s.visits == 1 && (span != 0 || s.sumSq != 0 || s.changedT != 0):
					d.r.Fail("baseline with interval data")
				case !(s.sumSq >= 0):
					d.r.Fail("bad interval sums")
				}
			}
		}
	}
	if flags&secLastMod != 0 {
		s.lmN = d.r.Count()
		s.lmX = d.r.Count()
		s.lmT = d.r.Count()
		s.ageN = d.r.Count()
		s.ageSum = d.r.Count()
		if d.err() == nil {
			switch {
			case s.lmX > s.lmN || s.lmN > s.Intervals() || s.ageN > s.visits:
				d.r.Fail("last-modified counts")
			case s.lmT > s.last-s.first:
				d.r.Fail("last-modified exposure exceeds span")
			}
		}
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if flags&secExtra != 0 {
		s.events = d.r.Count()
		gone := d.r.Count()
		if d.err() == nil && (s.events > s.visits || gone > math.MaxUint32 || (s.events == 0 && gone == 0)) {
			d.r.Fail("bad events or gone count")
		}
		s.gone = uint32(gone)
	}
	if version < changeVersion && d.err() == nil {
		s.importSpacings(prev, pairD)
	}
	if err := d.err(); err != nil {
		return 0, err
	}
	*c = s
	return d.r.Offset(), nil
}

// AppendBinary appends the compact, lossless encoding of a:
//
//	byte     version<<4 | section flags
//	direct:  uvarint accesses, varint ref−last (ms); if accesses ≠ 1: uvarint last−first (ms)
//	matloff: as for Change
//
// ref is as for Change.AppendBinaryAt. About 10 bytes for direct data only,
// 30 for snapshots only.
func (a *Access) AppendBinaryAt(dst []byte, ref float64) []byte {
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
		dst = binary.AppendVarint(dst, refMillis(ref)-a.last)
		if a.n != 1 {
			dst = binary.AppendUvarint(dst, uint64(a.last-a.first))
		}
	}
	if flags&secMatloff != 0 {
		dst = a.mat.append(dst)
	}
	return dst
}

// AppendBinary is AppendBinaryAt(dst, 0).
func (a *Access) AppendBinary(dst []byte) []byte { return a.AppendBinaryAt(dst, 0) }

// DecodeBinary is DecodeBinaryAt(src, 0).
func (a *Access) DecodeBinary(src []byte) (int, error) { return a.DecodeBinaryAt(src, 0) }

// DecodeBinaryAt replaces a with the state encoded at the start of src by
// AppendBinaryAt with the same ref (or by version 1) and returns the bytes
// read; errors wrap ErrCorrupt and leave a unchanged.
func (a *Access) DecodeBinaryAt(src []byte, ref float64) (int, error) {
	d := decoder{r: reader{wire.NewReader(src)}}
	version, flags := d.header(secDirect|secMatloff, encodingVersion)
	if d.err() == nil && version == 1 {
		return a.decodeV1(src)
	}
	var s Access
	if flags&secDirect != 0 {
		s.n = d.r.Count()
		s.last = d.r.relTime(ref)
		s.first = s.last
		if s.n != 1 {
			span := d.r.Count()
			if span >= 2*maxMillis || s.last-span <= -maxMillis {
				d.r.Fail("bad access span")
			}
			s.first = s.last - span
		}
		if d.err() == nil && (s.n == 0 && (s.first != 0 || s.last != 0)) {
			d.r.Fail("bad access times")
		}
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if err := d.err(); err != nil {
		return 0, err
	}
	*a = s
	return d.r.Offset(), nil
}

func (s *matloffState) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(s.n))
	dst = binary.AppendUvarint(dst, uint64(s.m))
	dst = binary.AppendUvarint(dst, uint64(s.kern))
	dst = wire.AppendFloat64(dst, s.sumTau)
	return wire.AppendFloat64(dst, s.sumU)
}

func (s *matloffState) decode(d *decoder) {
	s.n = d.r.Count()
	s.m = d.r.Count()
	s.kern = d.r.Count()
	s.sumTau = d.r.Float64()
	s.sumU = d.r.Float64()
	if d.err() != nil {
		return
	}
	switch {
	case s.m > s.n || s.kern > s.m:
		d.r.Fail("snapshot counts")
	case !(s.sumTau >= 0) || (s.n > 0) != (s.sumTau > 0):
		d.r.Fail("snapshot periods")
	case !(s.sumU >= 0) || s.sumU > float64(s.m):
		d.r.Fail("snapshot times")
	}
}

// decoder wraps a reader; its errors wrap ErrCorrupt.
type decoder struct {
	r reader
}

type reader struct{ wire.Reader }

func (d *decoder) err() error {
	if err := d.r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// relTime reads a varint written as refMillis(ref) − t and returns t (ms),
// which must be a valid time.
func (r *reader) relTime(ref float64) int64 {
	d := r.Varint()
	rm := refMillis(ref)
	if d <= -2*maxMillis || d >= 2*maxMillis || rm-d <= -maxMillis || rm-d >= maxMillis {
		r.Fail("time out of range")
		return 0
	}
	return rm - d
}

// header reads the version (1 to maxVersion) and section flags.
func (d *decoder) header(allowed byte, maxVersion int) (version int, flags byte) {
	h := d.r.Byte()
	if d.r.Err() != nil {
		d.r.Fail("empty")
		return 0, 0
	}
	version = int(h >> 4)
	if version < 1 || version > maxVersion {
		d.r.Fail(fmt.Sprintf("unknown version %d", version))
		return 0, 0
	}
	if f := h & 0x0f; f&^allowed != 0 {
		d.r.Fail("unknown section")
		return 0, 0
	}
	return version, h & 0x0f
}
