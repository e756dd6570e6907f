package records

import "time"

// appendTimeUTC appends t, whose location must be time.UTC, the way
// t.AppendFormat(dst, time.RFC3339Nano) does (the fraction's trailing
// zeros dropped, no fraction when it is zero, "Z" for the zone), without
// the layout machinery of AppendFormat, which is most of the cost of an
// estimate record's four times. ok is false, and dst unchanged, for a year
// outside 0–9999, which time.Time.MarshalJSON refuses.
func appendTimeUTC(dst []byte, t time.Time) (_ []byte, ok bool) {
	// Seconds since -0400-03-01 (a proleptic Gregorian year starting in
	// March puts the leap day last; starting one 400-year era before year
	// 0 keeps every division below on non-negative numbers): 0000-01-01 is
	// 62167219200 s before the Unix epoch, and March 1st 60 days after it
	// (year 0 is leap).
	const (
		era            = 146097 * 86400 // seconds in 400 years
		epochToMarch0  = 62167219200 - 60*86400
		lastSupported  = 253402300799 // 9999-12-31T23:59:59
		firstSupported = -62167219200 // 0000-01-01T00:00:00
	)
	unix := t.Unix()
	if unix < firstSupported || unix > lastSupported {
		return dst, false
	}
	s := uint64(unix + epochToMarch0 + era)
	days, sod := s/86400, s%86400
	// civil_from_days (H. Hinnant, "chrono-Compatible Low-Level Date
	// Algorithms").
	doe := days % 146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	year := yoe + days/146097*400 - 400
	if month > 12 {
		month -= 12
		year++
	}
	hour, min, sec := sod/3600, sod/60%60, sod%60
	// Two digits at a time from a table: the divisions by 10 of one digit
	// at a time were most of the function's cost.
	var b [30]byte
	putPair(b[0:], year/100)
	putPair(b[2:], year%100)
	b[4] = '-'
	putPair(b[5:], month)
	b[7] = '-'
	putPair(b[8:], day)
	b[10] = 'T'
	putPair(b[11:], hour)
	b[13] = ':'
	putPair(b[14:], min)
	b[16] = ':'
	putPair(b[17:], sec)
	n := 19
	if ns := uint64(t.Nanosecond()); ns != 0 {
		b[19] = '.'
		b[20] = byte('0' + ns/100000000)
		r := ns % 100000000
		putPair(b[21:], r/1000000)
		putPair(b[23:], r/10000%100)
		putPair(b[25:], r/100%100)
		putPair(b[27:], r%100)
		n = 29
		for b[n-1] == '0' {
			n--
		}
	}
	b[n] = 'Z'
	return append(dst, b[:n+1]...), true
}

// pairs holds "00" to "99".
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// putPair writes the two decimal digits of v (< 100) at b[0:2].
func putPair(b []byte, v uint64) {
	b[0], b[1] = pairs[2*v], pairs[2*v+1]
}
