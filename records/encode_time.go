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
	dst = append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if ns := uint32(t.Nanosecond()); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		dst = append(dst, frac[:n]...)
	}
	return append(dst, 'Z'), true
}
