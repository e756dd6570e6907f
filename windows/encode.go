package windows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/changerate/changerate/internal/wire"
)

// ErrCorrupt is wrapped by every DecodeBinary error.
var ErrCorrupt = errors.New("windows: corrupt stream encoding")

const (
	flagStarted = 1 << 0
	flagVisited = 1 << 1
	flagDirUp   = 1 << 2
	flagDirDown = 1 << 3
	// flagCompact marks the second layout (relative origin, XOR-coded
	// float32s); the first is still decoded.
	flagCompact = 1 << 4
	// flagShifted: the current window was opened by a confirmed shift
	// (Segmenter.Shifted); absent from older encodings.
	flagShifted = 1 << 5
	// flagScan: the scan's excursion (Config.ScanAlarms) is pending; its
	// fields follow the CUSUM's. Absent from older encodings (compact
	// layout only).
	flagScan = 1 << 6
	flagMask = flagStarted | flagVisited | flagDirUp | flagDirDown | flagCompact | flagShifted | flagScan
)

// AppendBinary is AppendBinaryAt(dst, 0).
func (s *Segmenter) AppendBinary(dst []byte) []byte { return s.AppendBinaryAt(dst, 0) }

// AppendBinaryAt appends the lossless encoding of s to dst and returns the
// extended slice. ref (seconds) is a time the caller passes again to
// DecodeBinaryAt, best the object's latest observation: the origin is
// stored relative to it, and the local times relative to ref − origin. The
// layout (little endian):
//
//	flags byte (flagCompact set)
//	origin       if started: wire.AppendSeconds(origin, ref)
//	uvarint n;   if n > 0: x XOR (ref − origin), A XOR n,
//	             X̄ XOR (ln x − A/n), M2 and C XOR A
//	previous visit, if visited: XOR (ref − origin)
//	pending excursion, if any: discrepancy float32, uvarint k,
//	             τ XOR x, A_pending XOR (k − 1), A_pre XOR A
//	scan excursion, if any (flagScan): uvarint k, τ XOR x
//	uvarint n − mseN; if mseN > 0: MSE₀ float32, MSE₁ and MSE₂ XOR MSE₀
//
// "v XOR p" is the uvarint of v's float32 bits XOR the bits of the
// prediction p (the Gorilla encoding of time-series databases): a value
// close to its prediction shares its sign, exponent and high mantissa bits,
// so it takes 1–3 bytes instead of 4, and exactly the bits are restored
// whatever the prediction (A ≈ n/β and A_pending ≈ (k−1)/β are close to
// n and k − 1 for the common β ≈ 1, A_pending = 0 for k = 1, and
// X̄ = ln x − A/n exactly but for rounding, since A = Σ ln(x/x_i)).
// Predictions use only IEEE-exact operations, so
// every platform decodes the same bits. An active stream takes about 35
// bytes, 45 during a pending excursion. It does not allocate when dst has
// room.
func (s *Segmenter) AppendBinaryAt(dst []byte, ref float64) []byte {
	dst = append(dst, s.stateFlags()|flagCompact)
	if s.started {
		dst = wire.AppendSeconds(dst, s.w.origin, ref)
	}
	now := float32(ref - s.w.origin) // predicts the latest local times
	dst = binary.AppendUvarint(dst, uint64(s.w.n))
	if s.w.n > 0 {
		dst = appendXOR(dst, s.w.x, now)
		dst = appendXOR(dst, s.w.a, float32(s.w.n))
		dst = appendXOR(dst, s.w.mx, meanLogPrediction(&s.w))
		dst = appendXOR(dst, s.w.m2, s.w.a)
		dst = appendXOR(dst, s.w.c, s.w.a)
	}
	if s.visited {
		dst = appendXOR(dst, s.xv, now)
	}
	if s.dir != dirNone {
		dst = wire.AppendFloat32(dst, s.s)
		dst = binary.AppendUvarint(dst, uint64(s.k))
		dst = appendXOR(dst, s.tau, s.w.x)
		dst = appendXOR(dst, s.ca, float32(max(s.k, 1)-1))
		dst = appendXOR(dst, s.apre, s.w.a)
	}
	if s.sc.k > 0 {
		dst = binary.AppendUvarint(dst, uint64(s.sc.k))
		dst = appendXOR(dst, s.sc.tau, s.w.x)
	}
	dst = binary.AppendUvarint(dst, uint64(s.w.n-s.mseN))
	if s.mseN > 0 {
		dst = wire.AppendFloat32(dst, s.mse[0])
		dst = appendXOR(dst, s.mse[1], s.mse[0])
		dst = appendXOR(dst, s.mse[2], s.mse[0])
	}
	return dst
}

// meanLogPrediction predicts X̄ = (1/n) Σ ln x_i as ln x − A/n from x, A
// and n (already decoded when X̄ is read).
func meanLogPrediction(w *win) float32 {
	return float32(wire.Log(float64(w.x)) - float64(w.a)/float64(max(w.n, 1)))
}

// stateFlags are the flags that describe s (every layout's first byte but
// the layout flag).
func (s *Segmenter) stateFlags() byte {
	var f byte
	if s.started {
		f |= flagStarted
	}
	if s.visited {
		f |= flagVisited
	}
	if s.shifted {
		f |= flagShifted
	}
	if s.sc.k > 0 {
		f |= flagScan
	}
	switch s.dir {
	case dirUp:
		f |= flagDirUp
	case dirDown:
		f |= flagDirDown
	}
	return f
}

func appendXOR(dst []byte, x, ref float32) []byte {
	return binary.AppendUvarint(dst, uint64(math.Float32bits(x)^math.Float32bits(ref)))
}

// reader decodes with a sticky error.
type reader struct{ wire.Reader }

func (r *reader) f32(v ...*float32) {
	for _, p := range v {
		*p = r.Float32()
	}
}

func (r *reader) xor(ref float32) float32 {
	v := r.Uvarint()
	if v > math.MaxUint32 {
		r.Fail("bad float32 XOR")
		return 0
	}
	x := math.Float32frombits(uint32(v) ^ math.Float32bits(ref))
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		r.Fail("non-finite float32")
		return 0
	}
	return x
}

func (r *reader) u32() uint32 {
	v := r.Uvarint()
	if v > math.MaxUint32 {
		r.Fail("uvarint overflows uint32")
		return 0
	}
	return uint32(v)
}

// DecodeBinary is DecodeBinaryAt(src, 0).
func (s *Segmenter) DecodeBinary(src []byte) (n int, err error) { return s.DecodeBinaryAt(src, 0) }

// DecodeBinaryAt replaces s with the stream encoded at the start of src by
// AppendBinaryAt with the same ref (or by the first layout, which ignores
// ref) and returns the number of bytes consumed. Errors wrap ErrCorrupt; on
// error s is left unchanged.
func (s *Segmenter) DecodeBinaryAt(src []byte, ref float64) (n int, err error) {
	r := reader{wire.NewReader(src)}
	if len(src) == 0 {
		return 0, fmt.Errorf("%w: empty input", ErrCorrupt)
	}
	f := r.Byte()
	if f&^flagMask != 0 || f&(flagDirUp|flagDirDown) == flagDirUp|flagDirDown {
		return 0, fmt.Errorf("%w: bad flags %#x", ErrCorrupt, f)
	}
	compact := f&flagCompact != 0
	var d Segmenter
	d.started = f&flagStarted != 0
	d.visited = f&flagVisited != 0
	d.shifted = f&flagShifted != 0
	switch {
	case f&flagDirUp != 0:
		d.dir = dirUp
	case f&flagDirDown != 0:
		d.dir = dirDown
	}
	if d.started {
		if compact {
			d.w.origin = r.ReadSeconds(ref)
		} else {
			d.w.origin = r.Float64()
		}
	}
	now := float32(ref - d.w.origin)
	d.w.n = r.u32()
	if d.w.n > 0 {
		if compact {
			d.w.x = r.xor(now)
			d.w.a = r.xor(float32(d.w.n))
			d.w.mx = r.xor(meanLogPrediction(&d.w))
			d.w.m2, d.w.c = r.xor(d.w.a), r.xor(d.w.a)
		} else {
			r.f32(&d.w.x, &d.w.a, &d.w.mx, &d.w.m2, &d.w.c)
		}
	}
	if d.visited {
		if compact {
			d.xv = r.xor(now)
		} else {
			r.f32(&d.xv)
		}
	}
	if d.dir != dirNone {
		r.f32(&d.s)
		d.k = r.u32()
		if compact {
			d.tau = r.xor(d.w.x)
			d.ca = r.xor(float32(max(d.k, 1) - 1))
			d.apre = r.xor(d.w.a)
		} else {
			r.f32(&d.tau, &d.ca, &d.apre)
		}
	}
	if f&flagScan != 0 {
		e := &d.sc
		e.k = r.u32()
		if !compact {
			r.Fail("scan excursion in the first layout")
		}
		e.tau = r.xor(d.w.x)
		if e.k == 0 || e.k >= d.w.n || e.tau < 0 || e.tau > d.w.x {
			r.Fail("scan excursion")
		}
	}
	d.mseN = r.u32()
	if compact {
		if d.mseN > d.w.n {
			r.Fail("more scored points than points")
		}
		d.mseN = d.w.n - d.mseN
	}
	if d.mseN > 0 {
		if compact {
			r.f32(&d.mse[0])
			d.mse[1], d.mse[2] = r.xor(d.mse[0]), r.xor(d.mse[0])
		} else {
			r.f32(&d.mse[0], &d.mse[1], &d.mse[2])
		}
	}
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
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
	return r.Offset(), nil
}
