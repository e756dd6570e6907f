package records

import "strings"

// SiteOf is an object's site, the one definition of it: the host and port
// of a URL (http://raeder.dk:83/x is raeder.dk:83, user info dropped), the
// host of a Heritrix dns: object, "" for anything else. The aggregator
// keys its per-site state (seasonal profiles, sitemap trust, alert
// grouping) and the records' site field by it, and ingest writes it into
// the observation's site, so that an object has the same site everywhere.
func SiteOf(object string) string {
	if strings.HasPrefix(object, "dns:") {
		return object[len("dns:"):]
	}
	i := strings.Index(object, "://")
	if i < 0 {
		return ""
	}
	rest := object[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if k := strings.LastIndexByte(rest, '@'); k >= 0 {
		rest = rest[k+1:]
	}
	return rest
}
