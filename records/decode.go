package records

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Fields of an observation, as bits for duplicate detection in decodeFast.
const (
	fObject = 1 << iota
	fSite
	fTime
	fKind
	fChanged
	fDigest
	fLastModified
	fStatus
	fPeriodS
	fLastEvent
	fEvent
	fFormat
	fSource
	fOffset
	fChangeFreq
)

// decodeFast decodes the usual form of a JSON observation into o without
// reflection and reports whether it did. It accepts only input that
// encoding/json (as used by decodeObservationJSON) accepts with the same
// result: one object, exact field names, each at most once, strings
// without escapes or control characters and with valid UTF-8, integers
// without fraction or exponent, changed true or false, times parsed by
// time.Time.UnmarshalJSON, optional whitespace around tokens, nothing after
// the object. It returns false for anything else (which may or may not be
// valid) and leaves o unspecified then.
func decodeFast(b []byte, o *Observation) bool {
	d := fastDecoder{b: b}
	d.ws()
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.byte('}') {
		d.ws()
		return d.i == len(d.b)
	}
	var seen uint32
	// Site, digest and source share one allocation (made at the end); the
	// object name has its own, since it outlives the observation in caches.
	var spans [3][2]int
	for {
		d.ws()
		// A key is compared with the known names only, so it needs no
		// validation: one with an escape or a control character matches
		// none of them.
		key, ok := d.rawStr()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		var bit uint32
		switch string(key) {
		case "object":
			bit = fObject
			o.Object, ok = d.strValue()
		case "site":
			bit = fSite
			ok = d.span(&spans[0])
		case "time":
			bit = fTime
			ok = d.timeValue(&o.Time)
		case "kind":
			bit = fKind
			var s []byte
			s, ok = d.str()
			o.Kind = Kind(intern(s))
		case "changed":
			bit = fChanged
			switch {
			case d.literal("true"):
				o.Changed = Changed
			case d.literal("false"):
				o.Changed = Unchanged
			default:
				ok = false
			}
		case "digest":
			bit = fDigest
			ok = d.span(&spans[1])
		case "last_modified":
			bit = fLastModified
			ok = d.timeValue(&o.LastModified)
		case "status":
			bit = fStatus
			var v int64
			v, ok = d.intValue()
			o.Status = int(v)
			ok = ok && int64(o.Status) == v
		case "period_s":
			bit = fPeriodS
			o.PeriodS, ok = d.floatValue()
		case "last_event":
			bit = fLastEvent
			ok = d.timeValue(&o.LastEvent)
		case "event":
			bit = fEvent
			var s []byte
			s, ok = d.str()
			o.Event = Event(intern(s))
		case "changefreq":
			bit = fChangeFreq
			var s []byte
			s, ok = d.str()
			o.ChangeFreq = intern(s)
		case "format":
			bit = fFormat
			var s []byte
			s, ok = d.str()
			o.Format = intern(s)
		case "source":
			bit = fSource
			ok = d.span(&spans[2])
		case "offset":
			bit = fOffset
			o.Offset, ok = d.intValue()
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		d.ws()
		if d.byte(',') {
			continue
		}
		if !d.byte('}') {
			return false
		}
		d.ws()
		if d.i != len(d.b) {
			return false
		}
		var n int
		for _, sp := range spans {
			n += sp[1] - sp[0]
		}
		if n == 0 {
			return true
		}
		var sb strings.Builder
		sb.Grow(n)
		for _, sp := range spans {
			sb.Write(d.b[sp[0]:sp[1]])
		}
		all, at := sb.String(), 0
		for k, dst := range [3]*string{&o.Site, &o.Digest, &o.Source} {
			l := spans[k][1] - spans[k][0]
			*dst = all[at : at+l]
			at += l
		}
		return true
	}
}

type fastDecoder struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// rawStr returns the bytes up to the next quote, unvalidated.
func (d *fastDecoder) rawStr() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	n := bytes.IndexByte(d.b[d.i:], '"')
	if n < 0 {
		return nil, false
	}
	s := d.b[d.i : d.i+n]
	d.i += n + 1
	return s, true
}

// str returns the contents of a string without escapes or control
// characters and with valid UTF-8.
func (d *fastDecoder) str() ([]byte, bool) {
	s, ok := d.rawStr()
	if !ok || !plainASCII(s) && !plainUTF8(s) {
		return nil, false
	}
	return s, true
}

// plainASCII reports whether s has only printable ASCII other than '\\'
// (and '"', which ends a string), checking 8 bytes at a time.
func plainASCII(s []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		y := x ^ (ones * '\\')
		// A high bit in any term flags a byte >= 0x80, < 0x20 or == '\\'
		// (the subtraction tricks can flag more bytes only when one of
		// them is such a byte; plainUTF8 then decides).
		if (x|(x-ones*0x20)&^x|(y-ones)&^y)&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// plainUTF8 reports whether s has no control characters or backslashes
// and is valid UTF-8.
func plainUTF8(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(s)
}

// intern returns s as a string, without allocating for the usual kinds,
// events and input formats.
func intern(s []byte) string {
	switch string(s) {
	case "access":
		return "access"
	case "visit":
		return "visit"
	case "revalidation":
		return "revalidation"
	case "snapshot":
		return "snapshot"
	case "modification":
		return "modification"
	case "squid":
		return "squid"
	case "heritrix":
		return "heritrix"
	case "heritrix-json":
		return "heritrix-json"
	case "clf":
		return "clf"
	case "storelog":
		return "storelog"
	case "warc":
		return "warc"
	case "jsonl":
		return "jsonl"
	case "cdx":
		return "cdx"
	case "cdxj":
		return "cdxj"
	case "sitemap":
		return "sitemap"
	case "daily":
		return "daily"
	case "weekly":
		return "weekly"
	case "monthly":
		return "monthly"
	}
	return string(s)
}

// span records where a string's contents are.
func (d *fastDecoder) span(sp *[2]int) bool {
	s, ok := d.str()
	if !ok {
		return false
	}
	sp[0] = d.i - 1 - len(s)
	sp[1] = d.i - 1
	return true
}

func (d *fastDecoder) strValue() (string, bool) {
	s, ok := d.str()
	if !ok {
		return "", false
	}
	return string(s), true
}

// timeValue decodes a string as time.Time's own UnmarshalJSON does, as
// encoding/json does: its usual UTC form by parseTimeUTC, anything else by
// UnmarshalJSON itself.
func (d *fastDecoder) timeValue(t *time.Time) bool {
	start := d.i
	s, ok := d.str()
	if !ok {
		return false
	}
	if tm, ok := parseTimeUTC(s); ok {
		*t = tm
		return true
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

// number returns a JSON number literal; integer reports that it has no
// fraction or exponent.
func (d *fastDecoder) number() (lit []byte, integer, ok bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false, false
	}
	integer = true
	if d.byte('.') {
		integer = false
		if !d.digits() {
			return nil, false, false
		}
	}
	if d.byte('e') || d.byte('E') {
		integer = false
		if !d.byte('+') {
			d.byte('-')
		}
		if !d.digits() {
			return nil, false, false
		}
	}
	return d.b[start:d.i], integer, true
}

// digits skips one or more decimal digits.
func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

func (d *fastDecoder) intValue() (int64, bool) {
	lit, integer, ok := d.number()
	if !ok || !integer {
		return 0, false
	}
	digits, neg := lit, false
	if digits[0] == '-' {
		digits, neg = digits[1:], true
	}
	if len(digits) > 18 { // may overflow: let strconv decide
		v, err := strconv.ParseInt(string(lit), 10, 64)
		return v, err == nil
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (d *fastDecoder) floatValue() (float64, bool) {
	lit, _, ok := d.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	return v, err == nil
}
