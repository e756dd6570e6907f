package records

import "time"

// parseTimeUTC parses the contents s of a JSON string of the usual form of
// an observation's time, "YYYY-MM-DDTHH:MM:SS" with an optional fraction
// of 1 to 9 digits and "Z", into the time.Time that
// time.Time.UnmarshalJSON makes of it (the same instant, location UTC),
// without the layout machinery of time.Parse, which was most of the cost
// of decoding an observation's time. ok is false for anything else (a
// zone offset, lowercase letters, a date or time out of range, …), which
// UnmarshalJSON may or may not accept; FuzzParseTimeUTC checks both.
func parseTimeUTC(s []byte) (_ time.Time, ok bool) {
	n := len(s)
	if n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n-1] != 'Z' {
		return time.Time{}, false
	}
	year, ok1 := digits4(s[0:4])
	month, ok2 := digits2(s[5:7])
	day, ok3 := digits2(s[8:10])
	hour, ok4 := digits2(s[11:13])
	minute, ok5 := digits2(s[14:16])
	sec, ok6 := digits2(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	var ns int
	if n > 20 {
		// ".d" to ".ddddddddd" before the Z.
		frac := s[19 : n-1]
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		for _, c := range frac[1:] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			ns = ns*10 + int(c-'0')
		}
		for range 10 - len(frac) {
			ns *= 10
		}
	}
	// days_from_civil (H. Hinnant, "chrono-Compatible Low-Level Date
	// Algorithms"), the inverse of appendTimeUTC's: years counted from
	// March, 400 years added so that every division is of a non-negative
	// number (an era of 400 years is 146097 days).
	y := year + 400
	if month <= 2 {
		y--
	}
	mp := (month + 9) % 12 // March 0 … February 11
	era, yoe := y/400, y%400
	doe := yoe*365 + yoe/4 - yoe/100 + (153*mp+2)/5 + day - 1
	days := int64(era-1)*146097 + int64(doe) - 719468 // since 1970-01-01
	unix := days*86400 + int64(hour*3600+minute*60+sec)
	// time.Unix(…).UTC() is the time.Time time.Date(…, time.UTC) and
	// time.Parse make: the instant, no monotonic reading, location UTC.
	return time.Unix(unix, int64(ns)).UTC(), true
}

// digits2 returns the two decimal digits of b as a number.
func digits2(b []byte) (int, bool) {
	d0, d1 := b[0]-'0', b[1]-'0'
	return int(d0)*10 + int(d1), d0 <= 9 && d1 <= 9
}

// digits4 returns the four decimal digits of b as a number.
func digits4(b []byte) (int, bool) {
	hi, ok1 := digits2(b[0:2])
	lo, ok2 := digits2(b[2:4])
	return hi*100 + lo, ok1 && ok2
}

// daysIn returns the number of days of month in year (proleptic
// Gregorian, as package time).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
