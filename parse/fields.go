package parse

import (
	"bytes"
	"errors"
	"time"
)

var (
	errNumber = errors.New("not a number")
	errRange  = errors.New("out of range")
)

func isSpace(b byte) bool { return b == ' ' || b == '\t' }

// nextField returns the next run of non-blank bytes at or after i and the
// index just after it; field is empty at the end of the line.
func nextField(b []byte, i int) (field []byte, next int) {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	s := i
	rest := b[s:]
	e := bytes.IndexByte(rest, ' ')
	if e < 0 {
		e = len(rest)
	}
	if t := bytes.IndexByte(rest[:e], '\t'); t >= 0 {
		e = t
	}
	return rest[:e], s + e
}

// splitFields fills dst with up to len(dst) blank-separated fields of b and
// returns how many it found and the rest of the line after the last one.
func splitFields(b []byte, dst [][]byte) (n int, rest []byte) {
	i := 0
	for n < len(dst) {
		f, next := nextField(b, i)
		if len(f) == 0 {
			return n, nil
		}
		dst[n] = f
		n++
		i = next
	}
	return n, b[i:]
}

// atoi parses a decimal integer with an optional sign, without allocating.
func atoi(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errNumber
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, errNumber
		}
	}
	if len(b) > 18 {
		return 0, errRange
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errNumber
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// epochTime parses Unix seconds with an optional fraction ("1157689312.049")
// into a UTC time. Negative or absurd values (before 1970 or after 9999) are
// rejected.
func epochTime(b []byte) (time.Time, error) {
	sec, frac := b, []byte(nil)
	for i, c := range b {
		if c == '.' {
			sec, frac = b[:i], b[i+1:]
			break
		}
	}
	s, err := atoi(sec)
	if err != nil || len(sec) == 0 || sec[0] == '-' || sec[0] == '+' {
		return time.Time{}, errNumber
	}
	if s > 253402300799 {
		return time.Time{}, errRange
	}
	var ns int64
	if frac != nil {
		if len(frac) == 0 || len(frac) > 9 {
			return time.Time{}, errNumber
		}
		for i := 0; i < 9; i++ {
			ns *= 10
			if i < len(frac) {
				c := frac[i]
				if c < '0' || c > '9' {
					return time.Time{}, errNumber
				}
				ns += int64(c - '0')
			}
		}
	}
	return time.Unix(s, ns).UTC(), nil
}

func digits(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

var monthNames = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

func month3(b []byte) (time.Month, bool) {
	if len(b) != 3 {
		return 0, false
	}
	for i, m := range monthNames {
		if (b[0]|0x20) == (m[0]|0x20) && (b[1]|0x20) == m[1] && (b[2]|0x20) == m[2] {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

// civil builds a time from fields and checks that none overflowed (time.Date
// normalises 31 Feb to 3 Mar; a log line with 31 Feb is broken). Years
// before 1970 are rejected: no log of this kind predates Unix time, and the
// zero time.Time (year 1) means "missing" in records.
func civil(y int, mo time.Month, d, h, mi, s, ns int) (time.Time, bool) {
	if y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return time.Time{}, false
	}
	if s == 60 { // leap second: clamp
		s = 59
		ns = 999999999
	}
	t := time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	if t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}

// zoneOffset parses "+hhmm", "-hhmm", "+hh:mm", "Z" into seconds east of UTC.
func zoneOffset(b []byte) (int, bool) {
	if len(b) == 1 && (b[0] == 'Z' || b[0] == 'z') {
		return 0, true
	}
	if len(b) != 5 && len(b) != 6 {
		return 0, false
	}
	sign := 1
	switch b[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, false
	}
	hh, ok1 := digits(b[1:3])
	var mm int
	var ok2 bool
	if len(b) == 6 {
		if b[3] != ':' {
			return 0, false
		}
		mm, ok2 = digits(b[4:6])
	} else {
		mm, ok2 = digits(b[3:5])
	}
	if !ok1 || !ok2 || hh > 23 || mm > 59 {
		return 0, false
	}
	return sign * (hh*3600 + mm*60), true
}

// inZone interprets wall-clock fields in loc and returns UTC.
func inZone(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), loc).UTC()
}

// clfTime parses "10/Oct/2000:13:55:36" (wall clock, no zone).
func clfWall(b []byte) (time.Time, bool) {
	if len(b) != 20 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' {
		return time.Time{}, false
	}
	d, ok1 := digits(b[0:2])
	mo, ok2 := month3(b[3:6])
	y, ok3 := digits(b[7:11])
	h, ok4 := digits(b[12:14])
	mi, ok5 := digits(b[15:17])
	s, ok6 := digits(b[18:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	return civil(y, mo, d, h, mi, s, 0)
}

// isoTime parses "2006-01-02T15:04:05[.fff...](Z|±hh:mm|±hhmm)" and, when
// there is no zone, reports hasZone false with the wall-clock time in UTC.
func isoTime(b []byte) (t time.Time, hasZone bool, ok bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	s, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false, false
	}
	rest := b[19:]
	ns := 0
	if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
		j := 1
		scale := 100000000
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			if scale > 0 {
				ns += int(rest[j]-'0') * scale
				scale /= 10
			}
			j++
		}
		if j == 1 {
			return time.Time{}, false, false
		}
		rest = rest[j:]
	}
	t, ok = civil(y, time.Month(mo), d, h, mi, s, ns)
	if !ok {
		return time.Time{}, false, false
	}
	if len(rest) == 0 {
		return t, false, true
	}
	off, zok := zoneOffset(rest)
	if !zok {
		return time.Time{}, false, false
	}
	return t.Add(-time.Duration(off) * time.Second), true, true
}
