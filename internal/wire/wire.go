// Package wire holds the building blocks of changerate's compact state
// encodings: a reader with a sticky error for varints and fixed-width
// little-endian floats, millisecond times with an exact-or-raw fallback, and
// Elias-gamma bit packing for small counts. The estimators, windows and
// aggregate encodings are built from these, so the three agree on their
// primitives and each only describes its own layout. It is pure: no I/O, no
// allocation beyond the caller's slices.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrShort is wrapped by a Reader's error when the input ends early or holds
// an invalid varint; callers wrap it in turn with their own ErrCorrupt.
var ErrShort = errors.New("truncated or invalid")

// Reader reads an encoding front to back. The first failure sticks: later
// reads return zero values and Err reports the first problem with its byte
// offset. Not safe for concurrent use.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Err is the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Offset is the number of bytes consumed.
func (r *Reader) Offset() int { return r.off }

// Rest returns the bytes not yet consumed.
func (r *Reader) Rest() []byte { return r.b[r.off:] }

// Fail records a semantic error (what) at the current offset unless an error
// is already recorded.
func (r *Reader) Fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, r.off)
	}
}

func (r *Reader) short(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w %s at byte %d", ErrShort, what, r.off)
	}
}

// Skip consumes n bytes (for example what a BitReader or another decoder
// read from Rest).
func (r *Reader) Skip(n int) {
	if r.err != nil {
		return
	}
	if n < 0 || n > len(r.b)-r.off {
		r.short("skip")
		return
	}
	r.off += n
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.short("byte")
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.short("uvarint")
		return 0
	}
	r.off += n
	return v
}

// Varint reads a zig-zag signed varint.
func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.short("varint")
		return 0
	}
	r.off += n
	return v
}

// Count reads an unsigned varint that must fit a non-negative int64.
func (r *Reader) Count() int64 {
	v := r.Uvarint()
	if v > math.MaxInt64 {
		r.Fail("count overflow")
		return 0
	}
	return int64(v)
}

// Uint32 reads 4 bytes, little endian.
func (r *Reader) Uint32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 4 {
		r.short("uint32")
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

// Float32 reads an IEEE 754 single, little endian; NaN and ±Inf fail.
func (r *Reader) Float32() float32 {
	x := math.Float32frombits(r.Uint32())
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		r.Fail("non-finite float32")
		return 0
	}
	return x
}

// Float64 reads an IEEE 754 double, little endian; NaN and ±Inf fail.
func (r *Reader) Float64() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 8 {
		r.short("float64")
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
	if math.IsNaN(x) || math.IsInf(x, 0) {
		r.Fail("non-finite float64")
		return 0
	}
	r.off += 8
	return x
}

// AppendFloat32 appends x as 4 bytes, little endian.
func AppendFloat32(dst []byte, x float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
}

// AppendFloat64 appends x as 8 bytes, little endian.
func AppendFloat64(dst []byte, x float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
}

// maxMillis bounds the millisecond counts of AppendSeconds, so that their
// differences, doubled, fit an int64.
const maxMillis = 1 << 60

// roundMillis is t in whole milliseconds, 0 when out of range.
func roundMillis(t float64) int64 {
	f := math.Round(t * 1000)
	if !(f > -maxMillis && f < maxMillis) {
		return 0
	}
	return int64(f)
}

// AppendSeconds appends t (seconds) relative to ref (seconds) and returns
// the extended slice. With k and r the nearest whole milliseconds of t and
// ref, it writes the zig-zag varint of 2(k−r), or of 2(k−r)+1 followed by
// the uvarint of the bits of t XOR the bits of k/1000 when t is not exactly
// k/1000 (a computed time: they differ in the low mantissa bits only, so
// this adds 1–3 bytes). A time within a month of ref takes 5 bytes; an
// absolute Unix time (ref 0) 7. ReadSeconds with the same ref restores t
// bit for bit, whatever t is (NaN and ±Inf included).
func AppendSeconds(dst []byte, t, ref float64) []byte {
	r := roundMillis(ref)
	f := math.Round(t * 1000)
	k := r // out of range (or NaN): all of t goes into the XOR
	if f > -maxMillis && f < maxMillis {
		k = int64(f)
	}
	base := float64(k) / 1000
	if math.Float64bits(base) == math.Float64bits(t) {
		return binary.AppendVarint(dst, (k-r)*2)
	}
	dst = binary.AppendVarint(dst, (k-r)*2+1)
	return binary.AppendUvarint(dst, math.Float64bits(t)^math.Float64bits(base))
}

// ReadSeconds reads a time written by AppendSeconds with the same ref.
func (r *Reader) ReadSeconds(ref float64) float64 {
	v := r.Varint()
	if r.err != nil {
		return 0
	}
	k := roundMillis(ref) + v>>1
	if k <= -maxMillis || k >= maxMillis {
		r.Fail("time out of range")
		return 0
	}
	base := float64(k) / 1000
	if v&1 == 0 {
		return base
	}
	x := r.Uvarint()
	if r.err != nil {
		return 0
	}
	return math.Float64frombits(math.Float64bits(base) ^ x)
}

// Log is the natural logarithm to about 1e-9 relative error, computed with
// basic IEEE 754 operations only (each rounded explicitly, so the compiler
// cannot fuse them), hence bit for bit the same on every platform, unlike
// math.Log, which has architecture-specific implementations. It is for
// predictions that an encoder and a decoder must compute identically; 0
// for x ≤ 0, NaN or ±Inf.
func Log(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return 0
	}
	f, e := math.Frexp(x) // x = f·2^e, f in [0.5, 1)
	if f < math.Sqrt2/2 {
		f, e = float64(f*2), e-1 // f in [√½, √2)
	}
	// ln f = 2 atanh(s) = 2(s + s³/3 + s⁵/5 + ...), s = (f−1)/(f+1), |s| ≤ 0.172.
	s := float64(float64(f-1) / float64(f+1))
	s2 := float64(s * s)
	p := 1.0 / 13
	for _, c := range [...]float64{1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1} {
		p = float64(float64(p*s2) + c)
	}
	return float64(float64(e)*math.Ln2) + float64(2*float64(s*p))
}

// BitWriter packs Elias-gamma codes (see Gamma) after the bytes of a slice,
// least significant bit first, without allocating when the slice has room:
//
//	w := wire.NewBitWriter(dst)
//	w.Gamma(3)
//	dst = w.Finish()
type BitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint
}

// NewBitWriter starts packing bits after the bytes of dst.
func NewBitWriter(dst []byte) BitWriter { return BitWriter{buf: dst} }

func (w *BitWriter) bits(v uint64, n uint) {
	for n > 0 {
		take := min(n, 8)
		w.acc |= (v & (1<<take - 1)) << w.nacc
		w.nacc += take
		n -= take
		v >>= take
		for w.nacc >= 8 {
			w.buf = append(w.buf, byte(w.acc))
			w.acc >>= 8
			w.nacc -= 8
		}
	}
}

// Gamma writes the Elias-gamma code of v ≥ 1: ⌊log2 v⌋ zero bits, then the
// bits of v from the most significant (which is 1): 1 bit for 1, 3 for 2–3,
// 5 for 4–7, ... It panics on v = 0.
func (w *BitWriter) Gamma(v uint64) {
	if v == 0 {
		panic("wire: gamma code of 0")
	}
	n := uint(bits.Len64(v)) // significant bits
	w.bits(0, n-1)
	// v's bits from the most significant: reversed, so that the reader,
	// which reads low bits first, meets the leading 1 first.
	w.bits(bits.Reverse64(v)>>(64-n), n)
}

// Rice writes the Golomb–Rice code of v with parameter k ≤ 63: v>>k zero
// bits, a one bit, then the k low bits of v. With k near log2 of the
// typical value it beats Elias gamma for counts of similar size; the
// reader must bound v>>k (see BitReader.Rice).
func (w *BitWriter) Rice(v uint64, k uint) {
	for q := v >> k; q > 0; q-- {
		w.bits(0, 1)
	}
	w.bits(1, 1)
	w.bits(v, k)
}

// Finish returns dst with the packed bits appended, zero-padded to a whole
// byte.
func (w *BitWriter) Finish() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

// BitReader reads what a BitWriter packed. Reading past the end sets a
// sticky error.
type BitReader struct {
	b    []byte
	pos  uint // next bit
	fail bool
}

// NewBitReader reads the bits of b.
func NewBitReader(b []byte) BitReader { return BitReader{b: b} }

func (r *BitReader) bit() uint64 {
	if r.pos >= uint(len(r.b))*8 {
		r.fail = true
		return 0
	}
	v := uint64(r.b[r.pos/8]>>(r.pos%8)) & 1
	r.pos++
	return v
}

// Gamma reads one Elias-gamma code; 0 with Failed() true on a truncated
// or over-long (more than 64 significant bits) code.
func (r *BitReader) Gamma() uint64 {
	zeros := 0
	for !r.fail && r.bit() == 0 {
		if r.fail {
			return 0
		}
		zeros++
		if zeros > 63 {
			r.fail = true
			return 0
		}
	}
	if r.fail {
		return 0
	}
	v := uint64(1)
	for i := 0; i < zeros; i++ {
		v = v<<1 | r.bit()
	}
	if r.fail {
		return 0
	}
	return v
}

// Rice reads a code written by BitWriter.Rice with the same k; a quotient
// v>>k above maxQ fails, so a corrupt input cannot make it read long runs.
func (r *BitReader) Rice(k uint, maxQ uint64) uint64 {
	if k > 63 {
		r.fail = true
		return 0
	}
	var q uint64
	for !r.fail && r.bit() == 0 {
		if r.fail {
			return 0
		}
		if q++; q > maxQ {
			r.fail = true
			return 0
		}
	}
	v := q << k
	var low uint64
	for i := uint(0); i < k; i++ {
		low |= r.bit() << i
	}
	if r.fail {
		return 0
	}
	return v | low
}

// Failed reports whether a read went past the end or met a bad code.
func (r *BitReader) Failed() bool { return r.fail }

// Bytes is the number of bytes consumed so far (partial bytes count whole).
func (r *BitReader) Bytes() int { return int((r.pos + 7) / 8) }

// Padding reports whether the unread bits of the last consumed byte are all
// zero, as a BitWriter leaves them.
func (r *BitReader) Padding() bool {
	if r.pos%8 == 0 {
		return true
	}
	return r.b[r.pos/8]>>(r.pos%8) == 0
}
