package windows

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/internal/wire"
)

// profileVersion is the first byte of an encoded Profile.
const profileVersion = 1

const profileActive = 1 << 0

// AppendBinary appends the lossless encoding of p: version, flags, float64
// start and last, the 24 hour and 7 day counts (float32), and when active
// the 31 factors (float32), the first activation time and the anchor T₀,
// Λ₀ (float64). At most 290
// bytes.
func (p *Profile) AppendBinary(dst []byte) []byte {
	var f byte
	if p.active {
		f |= profileActive
	}
	dst = append(dst, profileVersion, f)
	dst = wire.AppendFloat64(dst, p.start)
	dst = wire.AppendFloat64(dst, p.last)
	for _, v := range p.hour {
		dst = wire.AppendFloat32(dst, v)
	}
	for _, v := range p.dow {
		dst = wire.AppendFloat32(dst, v)
	}
	if p.active {
		for _, v := range p.f {
			dst = wire.AppendFloat32(dst, v)
		}
		for _, v := range p.g {
			dst = wire.AppendFloat32(dst, v)
		}
		dst = wire.AppendFloat64(dst, p.since)
		dst = wire.AppendFloat64(dst, p.t0)
		dst = wire.AppendFloat64(dst, p.l0)
	}
	return dst
}

// DecodeBinary replaces p with the profile encoded in src (all of it).
// Errors wrap ErrCorrupt; on error p is unchanged.
func (p *Profile) DecodeBinary(src []byte) error {
	r := wire.NewReader(src)
	if v := r.Byte(); r.Err() == nil && v != profileVersion {
		return fmt.Errorf("%w: profile version %d", ErrCorrupt, v)
	}
	fl := r.Byte()
	var d Profile
	d.start, d.last = r.Float64(), r.Float64()
	for i := range d.hour {
		d.hour[i] = r.Float32()
	}
	for i := range d.dow {
		d.dow[i] = r.Float32()
	}
	if fl&profileActive != 0 {
		d.active = true
		for i := range d.f {
			d.f[i] = r.Float32()
		}
		for i := range d.g {
			d.g[i] = r.Float32()
		}
		d.since, d.t0, d.l0 = r.Float64(), r.Float64(), r.Float64()
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: profile: %w", ErrCorrupt, err)
	}
	if fl&^profileActive != 0 {
		return fmt.Errorf("%w: profile flags %#x", ErrCorrupt, fl)
	}
	if r.Offset() != len(src) {
		return fmt.Errorf("%w: profile: %d trailing bytes", ErrCorrupt, len(src)-r.Offset())
	}
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !ok(d.start) || !ok(d.last) || d.last < d.start || !ok(d.t0) || !ok(d.l0) || !ok(d.since) {
		return fmt.Errorf("%w: profile times", ErrCorrupt)
	}
	for _, v := range append(append(append(d.hour[:], d.dow[:]...), d.f[:]...), d.g[:]...) {
		if !(v >= 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: profile count or factor %v", ErrCorrupt, v)
		}
	}
	if d.active {
		for _, v := range append(d.f[:], d.g[:]...) {
			if !(v > 0) {
				return fmt.Errorf("%w: profile factor %v", ErrCorrupt, v)
			}
		}
	}
	if d.start != 0 {
		d.week, d.day = weekIndex(d.last), dayIndex(d.last)
	}
	if d.active {
		d.derive()
	}
	*p = d
	return nil
}
