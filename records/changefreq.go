package records

// ChangeFreqs are the values of a sitemap's <changefreq> (sitemaps.org
// protocol 0.9), and of Observation.ChangeFreq.
var ChangeFreqs = []string{"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"}

// ValidChangeFreq reports whether s is "" (no claim) or one of ChangeFreqs.
func ValidChangeFreq(s string) bool {
	switch s {
	case "", "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
		return true
	}
	return false
}

// ChangeFreqSeconds is the mean time between changes that a <changefreq>
// claims, in seconds: hourly 3600, daily 86400, weekly 7 days, monthly
// 30.4375 days (a Gregorian month), yearly 365.25 days; ok is false for
// "always" (changes at every access), "never" (archived) and "".
func ChangeFreqSeconds(s string) (seconds float64, ok bool) {
	switch s {
	case "hourly":
		return 3600, true
	case "daily":
		return 86400, true
	case "weekly":
		return 7 * 86400, true
	case "monthly":
		return 30.4375 * 86400, true
	case "yearly":
		return 365.25 * 86400, true
	}
	return 0, false
}
