package windows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrCorrupt is wrapped by every DecodeBinary error.
var ErrCorrupt = errors.New("windows: corrupt stream encoding")

const (
	flagStarted = 1 << 0
	flagVisited = 1 << 1
	flagDirUp   = 1 << 2
	flagDirDown = 1 << 3
	flagMask    = flagStarted | flagVisited | flagDirUp | flagDirDown
)

// AppendBinary appends the encoding of s to dst and returns the extended
// slice. Layout (little endian): flags byte; origin float64 if started;
// uvarint n; if n > 0 the window sums x, A, X̄, M2, C as float32; previous
// visit float32 if visited; if an excursion is pending its discrepancy
// float32, uvarint k, τ, A_pending, A_pre float32; uvarint mseN and, if
// mseN > 0, the three MSE sums float32. An active stream takes 43 bytes, 60
// during a pending excursion, 4 more in existence-of-change mode. It does not
// allocate when dst has room.
func (s *Stream) AppendBinary(dst []byte) []byte {
	var f byte
	if s.started {
		f |= flagStarted
	}
	if s.visited {
		f |= flagVisited
	}
	switch s.dir {
	case dirUp:
		f |= flagDirUp
	case dirDown:
		f |= flagDirDown
	}
	dst = append(dst, f)
	if s.started {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.w.origin))
	}
	dst = binary.AppendUvarint(dst, uint64(s.w.n))
	if s.w.n > 0 {
		dst = appendF32(dst, s.w.x, s.w.a, s.w.mx, s.w.m2, s.w.c)
	}
	if s.visited {
		dst = appendF32(dst, s.xv)
	}
	if s.dir != dirNone {
		dst = appendF32(dst, s.s)
		dst = binary.AppendUvarint(dst, uint64(s.k))
		dst = appendF32(dst, s.tau, s.ca, s.apre)
	}
	dst = binary.AppendUvarint(dst, uint64(s.mseN))
	if s.mseN > 0 {
		dst = appendF32(dst, s.mse[0], s.mse[1], s.mse[2])
	}
	return dst
}

func appendF32(dst []byte, v ...float32) []byte {
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, what, r.off)
	}
}

func (r *reader) f32(v ...*float32) {
	for _, p := range v {
		if r.err != nil {
			return
		}
		if len(r.b)-r.off < 4 {
			r.fail("truncated float32")
			return
		}
		x := math.Float32frombits(binary.LittleEndian.Uint32(r.b[r.off:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			r.fail("non-finite float32")
			return
		}
		*p = x
		r.off += 4
	}
}

func (r *reader) f64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 8 {
		r.fail("truncated float64")
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
	if math.IsNaN(x) || math.IsInf(x, 0) {
		r.fail("non-finite float64")
		return 0
	}
	r.off += 8
	return x
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || v > math.MaxUint32 {
		r.fail("bad uvarint")
		return 0
	}
	r.off += n
	return uint32(v)
}

// DecodeBinary replaces s with the stream encoded at the start of src (see
// AppendBinary) and returns the number of bytes consumed. Errors wrap
// ErrCorrupt; on error s is left unchanged.
func (s *Stream) DecodeBinary(src []byte) (n int, err error) {
	r := reader{b: src}
	if len(src) == 0 {
		return 0, fmt.Errorf("%w: empty input", ErrCorrupt)
	}
	f := src[0]
	r.off = 1
	if f&^flagMask != 0 || f&(flagDirUp|flagDirDown) == flagDirUp|flagDirDown {
		return 0, fmt.Errorf("%w: bad flags %#x", ErrCorrupt, f)
	}
	var d Stream
	d.started = f&flagStarted != 0
	d.visited = f&flagVisited != 0
	switch {
	case f&flagDirUp != 0:
		d.dir = dirUp
	case f&flagDirDown != 0:
		d.dir = dirDown
	}
	if d.started {
		d.w.origin = r.f64()
	}
	d.w.n = r.u32()
	if d.w.n > 0 {
		r.f32(&d.w.x, &d.w.a, &d.w.mx, &d.w.m2, &d.w.c)
	}
	if d.visited {
		r.f32(&d.xv)
	}
	if d.dir != dirNone {
		r.f32(&d.s)
		d.k = r.u32()
		r.f32(&d.tau, &d.ca, &d.apre)
	}
	d.mseN = r.u32()
	if d.mseN > 0 {
		r.f32(&d.mse[0], &d.mse[1], &d.mse[2])
	}
	if r.err != nil {
		return 0, r.err
	}
	switch {
	case !d.started && (d.w.n > 0 || d.visited || d.dir != dirNone):
		return 0, fmt.Errorf("%w: state without origin", ErrCorrupt)
	case d.dir != dirNone && (d.k == 0 || d.k >= d.w.n):
		return 0, fmt.Errorf("%w: %d pending points of %d", ErrCorrupt, d.k, d.w.n)
	case d.mseN > d.w.n:
		return 0, fmt.Errorf("%w: %d scored points of %d", ErrCorrupt, d.mseN, d.w.n)
	case d.w.x < 0 || d.w.a < 0 || d.w.m2 < 0 || d.tau < 0 || d.tau > d.w.x:
		return 0, fmt.Errorf("%w: negative time or sum", ErrCorrupt)
	}
	*s = d
	return r.off, nil
}
