package records

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendEstimateJSON appends the JSON encoding of e to dst: the bytes
// json.Marshal(e) produces (checked by FuzzAppendEstimateJSON), without
// reflection. ok is false, and dst is returned unchanged, when e holds a
// value json.Marshal cannot encode (a NaN or infinite float, a time outside
// years 0–9999); use json.Marshal then.
func AppendEstimateJSON(dst []byte, e *Estimate) (_ []byte, ok bool) {
	var buf [16]Keyed
	return appendEstimateJSON(dst, e, keyedOf(e, buf[:0]))
}

// Keyed is one estimator's entries in an estimate record: its rate in
// "estimates" (when HasRate) and its interval in "intervals" (when HasCI).
type Keyed struct {
	Key            string
	Rate           float64
	CI             [2]float64
	HasRate, HasCI bool
}

// AppendEstimateJSONKeyed is AppendEstimateJSON for a record whose
// estimators' rates and intervals are given by keyed, sorted by key with
// each key once, instead of by e.Estimates and e.Intervals (which must be
// empty; it panics otherwise): the form a producer builds without maps.
// The bytes are those of the record with the maps filled from keyed.
func AppendEstimateJSONKeyed(dst []byte, e *Estimate, keyed []Keyed) (_ []byte, ok bool) {
	if len(e.Estimates) > 0 || len(e.Intervals) > 0 {
		panic("records: AppendEstimateJSONKeyed of a record with Estimates or Intervals")
	}
	return appendEstimateJSON(dst, e, keyed)
}

func appendEstimateJSON(dst []byte, e *Estimate, keyed []Keyed) (_ []byte, ok bool) {
	n := len(dst)
	a := jsonAppender{b: dst, ok: true}
	a.raw(`{"object":`)
	a.str(e.Object)
	if e.Site != "" {
		a.raw(`,"site":`)
		a.str(e.Site)
	}
	a.raw(`,"kind":`)
	a.str(e.Kind)
	a.raw(`,"as_of":`)
	a.time(e.AsOf)
	if e.RatePerS != nil {
		a.raw(`,"rate_per_s":`)
		a.float(*e.RatePerS)
	}
	if e.Estimator != "" {
		a.raw(`,"estimator":`)
		a.str(e.Estimator)
	}
	if e.CI95 != nil {
		a.raw(`,"ci95":`)
		a.pair(*e.CI95)
	}
	a.keyedObject(`,"estimates":{`, keyed, false)
	a.keyedObject(`,"intervals":{`, keyed, true)
	a.raw(`,"observations":`)
	a.b = strconv.AppendInt(a.b, e.Observations, 10)
	a.raw(`,"changes":`)
	a.b = strconv.AppendInt(a.b, e.Changes, 10)
	if e.Gone {
		a.raw(`,"gone":true`)
	}
	if w := e.Window; w != nil {
		a.raw(`,"window":{"state":`)
		a.str(w.State)
		a.raw(`,"start":`)
		a.time(w.Start)
		a.raw(`,"points":`)
		a.b = strconv.AppendInt(a.b, w.Points, 10)
		a.optFloat(`,"weibull_beta":`, w.WeibullBeta)
		a.optFloat(`,"weibull_eta_s":`, w.WeibullEta)
		a.optFloat(`,"duane_slope":`, w.DuaneSlope)
		a.optFloat(`,"rate_per_s":`, w.RatePerS)
		if w.Model != "" {
			a.raw(`,"model":`)
			a.str(w.Model)
		}
		if w.NextUpdate != nil {
			a.raw(`,"next_update":`)
			a.time(*w.NextUpdate)
		}
		a.raw("}")
	}
	if e.NextVisit != nil {
		a.raw(`,"next_visit":`)
		a.time(*e.NextVisit)
	}
	a.optFloat(`,"ttl_s":`, e.TTLS)
	if e.PlanEvidence != nil {
		a.raw(`,"plan_evidence":`)
		a.pair(*e.PlanEvidence)
	}
	if e.PlanPrior != nil {
		a.raw(`,"plan_prior":`)
		a.pair(*e.PlanPrior)
	}
	a.optFloat(`,"plan_omega":`, e.PlanOmega)
	a.raw("}")
	if !a.ok {
		return dst[:n], false
	}
	return a.b, true
}

// keyedOf appends to dst the entries of e.Estimates and e.Intervals, one
// per key, in the order of their keys (as encoding/json writes a map), and
// returns dst.
func keyedOf(e *Estimate, dst []Keyed) []Keyed {
	for k, v := range e.Estimates {
		dst = append(dst, Keyed{Key: k, Rate: v, HasRate: true})
	}
	n := len(dst)
	for k, v := range e.Intervals {
		if _, ok := e.Estimates[k]; ok {
			for i := range dst[:n] {
				if dst[i].Key == k {
					dst[i].CI, dst[i].HasCI = v, true
					break
				}
			}
			continue
		}
		dst = append(dst, Keyed{Key: k, CI: v, HasCI: true})
	}
	// Insertion sort: a dozen keys at most.
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && dst[j].Key < dst[j-1].Key; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// jsonAppender writes JSON the way encoding/json does; ok turns false on a
// value encoding/json rejects.
type jsonAppender struct {
	b  []byte
	ok bool
	// floats remembers where the record's latest distinct floats were
	// written: an estimate repeats several (the best rate among the
	// estimators' rates, its interval among theirs), and copying their
	// bytes is cheaper than formatting them again.
	floats [8]writtenFloat
	nf     int
}

// writtenFloat is a float64 (by its bits) written at b[off:off+n].
type writtenFloat struct {
	bits   uint64
	off, n int32
}

// keyedObject writes open (the field's name and "{"), then keyed's rates,
// or its intervals if intervals, by key, and "}"; nothing when keyed has
// none.
func (a *jsonAppender) keyedObject(open string, keyed []Keyed, intervals bool) {
	first := true
	for i := range keyed {
		k := &keyed[i]
		if intervals && !k.HasCI || !intervals && !k.HasRate {
			continue
		}
		if first {
			a.raw(open)
			first = false
		} else {
			a.raw(",")
		}
		a.str(k.Key)
		a.raw(":")
		if intervals {
			a.pair(k.CI)
		} else {
			a.float(k.Rate)
		}
	}
	if !first {
		a.raw("}")
	}
}

func (a *jsonAppender) raw(s string) { a.b = append(a.b, s...) }

func (a *jsonAppender) optFloat(key string, f *float64) {
	if f != nil {
		a.raw(key)
		a.float(*f)
	}
}

func (a *jsonAppender) pair(p [2]float64) {
	a.raw("[")
	a.float(p[0])
	a.raw(",")
	a.float(p[1])
	a.raw("]")
}

// float follows encoding/json's float64 encoding.
func (a *jsonAppender) float(f float64) {
	if f != f || f > math.MaxFloat64 || f < -math.MaxFloat64 {
		a.ok = false
		return
	}
	bits := math.Float64bits(f)
	for i := range a.nf {
		if w := a.floats[i]; w.bits == bits {
			a.b = append(a.b, a.b[w.off:w.off+w.n]...)
			return
		}
	}
	start := len(a.b)
	defer a.remember(bits, start)
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		a.b = strconv.AppendFloat(a.b, f, 'e', -1, 64)
		// clean up e-09 to e-9
		n := len(a.b)
		if n >= 4 && a.b[n-4] == 'e' && a.b[n-3] == '-' && a.b[n-2] == '0' {
			a.b[n-2] = a.b[n-1]
			a.b = a.b[:n-1]
		}
		return
	}
	// The 'f' format from the 'e' one: both write the same shortest
	// digits, but strconv's 'f' appends its fraction a byte at a time
	// (fmtF: 2.5 % of the aggregator's CPU in BenchmarkProcessorLivePoisson,
	// whose rates are mostly 0.0000…) where 'e' copies them at once.
	var buf [32]byte
	a.b = appendFixed(a.b, strconv.AppendFloat(buf[:0], f, 'e', -1, 64))
}

// appendFixed appends the number that strconv writes as e in its 'e'
// format with the shortest digits ("-d.ddde±XX") as strconv's 'f' format
// with the shortest digits writes it: the same digits, with the decimal
// point placed by the exponent and as many zeros as that needs
// (FuzzJSONFloat checks it against encoding/json).
func appendFixed(dst, e []byte) []byte {
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	k := len(e) - 4 // "e±XX"; three exponent digits from 1e100 on
	if e[k] != 'e' {
		k--
	}
	exp := 0
	for _, c := range e[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[k+1] == '-' {
		exp = -exp
	}
	// The digits are e[0] and e[2:k] (when there is a '.'); the value is
	// 0.digits × 10^dp.
	first, rest := e[:1], e[min(2, k):k]
	nd, dp := 1+len(rest), exp+1
	switch {
	case dp <= 0: // 0.000ddd
		dst = append(dst, "0.00000"[:2-dp]...) // dp ≥ -5: the value is ≥ 1e-6
		dst = append(dst, first...)
		return append(dst, rest...)
	case dp >= nd: // ddd000
		dst = append(dst, first...)
		dst = append(dst, rest...)
		return append(dst, "000000000000000000000"[:dp-nd]...) // dp ≤ 21: the value is < 1e21
	default: // dd.ddd
		dst = append(dst, first...)
		dst = append(dst, rest[:dp-1]...)
		dst = append(dst, '.')
		return append(dst, rest[dp-1:]...)
	}
}

// remember records that the float with bits was written at a.b[start:].
func (a *jsonAppender) remember(bits uint64, start int) {
	if a.nf < len(a.floats) {
		a.floats[a.nf] = writtenFloat{bits, int32(start), int32(len(a.b) - start)}
		a.nf++
	}
}

// time follows time.Time.MarshalJSON (RFC 3339 with nanoseconds; a year
// outside 0–9999 or a zone offset of 24 hours or more is an error).
func (a *jsonAppender) time(t time.Time) {
	a.b = append(a.b, '"')
	if t.Location() == time.UTC {
		var ok bool
		if a.b, ok = appendTimeUTC(a.b, t); !ok {
			a.ok = false
		}
		a.b = append(a.b, '"')
		return
	}
	n0 := len(a.b)
	a.b = t.AppendFormat(a.b, time.RFC3339Nano)
	b := a.b
	switch {
	case len(b) < n0+5 || b[n0+4] != '-':
		a.ok = false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := 10*(b[len(b)-5]-'0') + (b[len(b)-4] - '0')
		if ('0' <= c && c <= '9') || h >= 24 {
			a.ok = false
		}
	}
	a.b = append(a.b, '"')
}

const hexDigits = "0123456789abcdef"

// str follows encoding/json's string encoding with HTML escaping.
func (a *jsonAppender) str(s string) { a.b = AppendJSONString(a.b, s) }

// jsonSafe[c] says that the ASCII byte c is written as is in a JSON string
// (not a control character, quote, backslash or one of the HTML
// characters that encoding/json escapes). Read-only.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// jsonSafeWord reports whether the 8 bytes of x (little endian) are all
// written as they are in a JSON string (jsonSafe), exactly: a subtraction
// borrows across bytes only below a byte < 0x20 or equal to the byte
// compared with, and such a byte is unsafe itself (FuzzJSONSafeWord).
//
// The five characters take three tests: '"' (0x22) and '&' (0x26) differ
// only in bit 2, '<' (0x3c) and '>' (0x3e) only in bit 1, so a byte with
// that bit set is equal to the higher one exactly when it is one of the
// pair.
func jsonSafeWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	t := x | (x-ones*0x20)&^x           // >= 0x80, < 0x20
	y := (x | ones*0x04) ^ (ones * '&') // '"' or '&'
	t |= (y - ones) &^ y
	y = (x | ones*0x02) ^ (ones * '>') // '<' or '>'
	t |= (y - ones) &^ y
	y = x ^ (ones * '\\')
	t |= (y - ones) &^ y
	return t&highs == 0
}

// AppendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it (HTML-safe escaping, invalid UTF-8 replaced by
// U+FFFD, U+2028 and U+2029 escaped). Ingest's observation encoder and the
// estimate encoder share it.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Runs of bytes written as they are, 8 at a time.
		for i+8 <= len(s) && jsonSafeWord(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
