package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/changerate/changerate/internal/wire"
)

// AppendBinary appends the object's compact encoding to dst. The encoding is
// lossless: DecodeBinary of it gives an Object equal to o. Layout: version,
// flags, varint lastTime (ms), varint lastTime−lastEmit, then the present
// parts in flag order: dedup (uint32 source hash, varint offset), uint32
// digest fingerprint, varint Last-Modified, access period (varint index,
// uvarint count), and the Change, ChangeWin, Access and AccessWin
// encodings, each with lastTime as its reference time (AppendBinaryAt);
// then, for an object learning or using its own rhythm, the rhythm section
// (Rhythm.appendBinary: its own tag and version).
func (o *Object) AppendBinary(dst []byte) []byte {
	version := byte(encodingVersion)
	if o.sm.flags != 0 {
		version = encodingVersionSitemap
	}
	dst = append(dst, version, o.flags)
	dst = binary.AppendVarint(dst, o.lastTime)
	dst = binary.AppendVarint(dst, o.lastTime-o.lastEmit)
	if o.flags&hasDedup != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, o.dedupHash)
		dst = binary.AppendVarint(dst, o.dedupOff)
	}
	if o.flags&hasDigest != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, o.digest)
	}
	if o.flags&hasLastMod != 0 {
		dst = binary.AppendVarint(dst, o.lastMod)
	}
	if o.flags&hasPeriod != 0 {
		dst = binary.AppendVarint(dst, o.periodIdx)
		dst = binary.AppendUvarint(dst, uint64(o.periodCount))
	}
	ref := seconds(o.lastTime)
	if o.flags&hasChange != 0 {
		dst = o.Change.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasChangeWin != 0 {
		dst = o.ChangeWin.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasAccess != 0 {
		dst = o.Access.AppendBinaryAt(dst, ref)
	}
	if o.flags&hasAccessWin != 0 {
		dst = o.AccessWin.AppendBinaryAt(dst, ref)
	}
	if version == encodingVersionSitemap {
		dst = o.sm.appendBinary(dst)
	}
	if o.Rhythm.Started() {
		// a separate, versioned section (issue 36): a decoder without
		// it would report trailing bytes
		dst = o.Rhythm.appendBinary(dst, o.lastTime)
	}
	return dst
}

// DecodeBinary replaces o with the object encoded in src. Errors wrap
// ErrCorrupt; on error o is unspecified.
func (o *Object) DecodeBinary(src []byte) error {
	*o = Object{}
	if len(src) < 2 {
		return fmt.Errorf("%w: %d bytes", ErrCorrupt, len(src))
	}
	if src[0] != encodingVersion && src[0] != 1 && src[0] != encodingVersionSitemap {
		return fmt.Errorf("%w: unknown version %d", ErrCorrupt, src[0])
	}
	o.flags = src[1]
	d := wire.NewReader(src[2:])
	o.lastTime = d.Varint()
	o.lastEmit = o.lastTime - d.Varint()
	if o.flags&hasDedup != 0 {
		o.dedupHash = d.Uint32()
		o.dedupOff = d.Varint()
	}
	if o.flags&hasDigest != 0 {
		o.digest = d.Uint32()
	}
	if o.flags&hasLastMod != 0 {
		o.lastMod = d.Varint()
	}
	if o.flags&hasPeriod != 0 {
		o.periodIdx = d.Varint()
		c := d.Uvarint()
		if c > math.MaxUint32 {
			d.Fail("period count overflows uint32")
		}
		o.periodCount = uint32(c)
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// Version-1 sub-states are in their own first layouts, which ignore ref.
	ref := seconds(o.lastTime)
	// (Four calls, not a table of method values: those were allocated at
	// every decode, once per observation in the processor.)
	if err := decodeSub(&d, o.flags&hasChange != 0, "change", ref, o.Change.DecodeBinaryAt); err != nil {
		return err
	}
	if err := decodeSub(&d, o.flags&hasChangeWin != 0, "change window", ref, o.ChangeWin.DecodeBinaryAt); err != nil {
		return err
	}
	if err := decodeSub(&d, o.flags&hasAccess != 0, "access", ref, o.Access.DecodeBinaryAt); err != nil {
		return err
	}
	if err := decodeSub(&d, o.flags&hasAccessWin != 0, "access window", ref, o.AccessWin.DecodeBinaryAt); err != nil {
		return err
	}
	if src[0] == encodingVersionSitemap {
		o.sm.decode(&d)
		if err := d.Err(); err != nil {
			return fmt.Errorf("%w: sitemap: %w", ErrCorrupt, err)
		}
		if o.sm.flags == 0 || o.sm.flags&^smFlags != 0 {
			return fmt.Errorf("%w: sitemap flags %#x", ErrCorrupt, o.sm.flags)
		}
	}
	if rest := d.Rest(); len(rest) != 0 && rest[0] == rhythmTag {
		if err := o.Rhythm.decodeBinary(&d, o.lastTime); err != nil {
			return err
		}
	}
	if rest := len(d.Rest()); rest != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, rest)
	}
	return nil
}

// decodeSub decodes, when present, the sub-state named name at d's
// position with dec and moves d past it.
func decodeSub(d *wire.Reader, present bool, name string, ref float64, dec func([]byte, float64) (int, error)) error {
	if !present {
		return nil
	}
	n, err := dec(d.Rest(), ref)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	d.Skip(n)
	return nil
}
