package parse

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The fast path of Canonical (fastCanonical): a URL already canonical under
// the changerate and whatwg profiles is recognised by a byte scan, without
// net/url; everything else takes canonicalSlow (canon.go). The helpers
// after it (invalid UTF-8, truncation) serve both paths.

// Byte classes for the fast path.
var (
	hostByte [256]bool // a-z 0-9 - .
	pathByte [256]bool // bytes that no profile step changes in a path
	qryByte  [256]bool // bytes that no profile step changes in a query
)

func init() {
	for b := 'a'; b <= 'z'; b++ {
		hostByte[b] = true
	}
	for b := '0'; b <= '9'; b++ {
		hostByte[b] = true
	}
	hostByte['-'], hostByte['.'] = true, true
	for b := 'a'; b <= 'z'; b++ {
		pathByte[b], qryByte[b] = true, true
	}
	for b := 'A'; b <= 'Z'; b++ {
		pathByte[b], qryByte[b] = true, true
	}
	for b := '0'; b <= '9'; b++ {
		pathByte[b], qryByte[b] = true, true
	}
	for _, b := range []byte("-._~!$&'()*,;=:@/") {
		pathByte[b] = true
	}
	for _, b := range []byte("-._~=&/:,") {
		qryByte[b] = true
	}
	// Escapes that canonicalisation keeps as they are (upper-case hex):
	// bytes the profile must encode again after decoding them.
	for b := 0; b < 256; b++ {
		if b <= 0x20 || b >= 0x7F {
			pathEsc[b], qryEsc[b] = true, true
		}
	}
	for _, b := range []byte("\"#?`{}") {
		pathEsc[b] = true
	}
	for _, b := range []byte("#&=") {
		qryEsc[b] = true
	}
}

// pathEsc[b] and qryEsc[b] are true when "%XX" for byte b survives
// canonicalisation unchanged in a path or a query.
var pathEsc, qryEsc [256]bool

// keptEscape reports whether raw[i:] starts with an upper-case "%XX"
// escape of a byte in set.
func keptEscape(raw []byte, i int, set *[256]bool) bool {
	if i+2 >= len(raw) {
		return false
	}
	h, l := unhexUpper(raw[i+1]), unhexUpper(raw[i+2])
	if h < 0 || l < 0 {
		return false
	}
	return set[h<<4|l]
}

func unhexUpper(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// fastCanonical reports whether raw is already canonical under the
// changerate and whatwg profiles, and where its host ends. It accepts only
// a conservative subset: lower-case http or https, a plain lower-case
// host name whose last label does not start with a digit (IPv4 parsing) and
// has no punycode (unless idnHosts holds the host: the library kept it
// unchanged before, and WHATWG parses a host independently of the rest of
// the URL), no port, no user info, a path of unreserved bytes
// without dot segments, an optional simple query, no fragment, and percent
// escapes only in upper-case hex of bytes that stay escaped (spaces,
// controls, non-ASCII, and the delimiters of the component).
func fastCanonical(raw []byte, idnHosts map[string]struct{}) (hostStart, hostEnd int, ok bool) {
	var i int
	https := false
	switch {
	case len(raw) > 8 && string(raw[:8]) == "https://":
		i, https = 8, true
	case len(raw) > 7 && string(raw[:7]) == "http://":
		i = 7
	case len(raw) > 4 && string(raw[:4]) == "dns:":
		// Heritrix DNS lookups: an opaque path, kept as is when it is a
		// plain lower-case host name.
		for _, b := range raw[4:] {
			if !hostByte[b] {
				return 0, 0, false
			}
		}
		return len(raw), len(raw), true // no site, as the library says
	default:
		return 0, 0, false
	}
	hs := i
	label := i
	for i < len(raw) && raw[i] != '/' && raw[i] != ':' {
		b := raw[i]
		if !hostByte[b] {
			return 0, 0, false
		}
		if b == '.' {
			if i == label { // empty label
				return 0, 0, false
			}
			label = i + 1
		}
		i++
	}
	if i == hs || i == label || i == len(raw) { // empty host, trailing dot, no path
		return 0, 0, false
	}
	if c := raw[label]; c >= '0' && c <= '9' {
		return 0, 0, false
	}
	if raw[hs] == '-' {
		return 0, 0, false
	}
	if hasPunycode(raw[hs:i]) {
		// Punycode needs validation: only hosts the library already kept
		// as they are.
		if _, known := idnHosts[string(raw[hs:i])]; !known {
			return 0, 0, false
		}
	}
	hostEnd = i
	if raw[i] == ':' {
		// A port: digits without a leading zero, 1..65535, not the
		// scheme's default (which canonicalisation drops).
		j := i + 1
		port := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			port = port*10 + int(raw[j]-'0')
			if port > 65535 {
				return 0, 0, false
			}
			j++
		}
		if j == i+1 || raw[i+1] == '0' || j == len(raw) || raw[j] != '/' ||
			(https && port == 443) || (!https && port == 80) {
			return 0, 0, false
		}
		i = j
	}
	// Path.
	pathStart := i
	seg := i + 1
	for i < len(raw) && raw[i] != '?' {
		b := raw[i]
		if b == '%' {
			if !keptEscape(raw, i, &pathEsc) {
				return 0, 0, false
			}
			i += 3
			continue
		}
		if !pathByte[b] {
			return 0, 0, false
		}
		if b == '/' && i > pathStart {
			if isDotSeg(raw[seg:i]) {
				return 0, 0, false
			}
			seg = i + 1
		}
		i++
	}
	if isDotSeg(raw[seg:i]) {
		return 0, 0, false
	}
	if i == len(raw) {
		return hs, hostEnd, true
	}
	// Query: simple name=value pairs only.
	i++
	q := i
	for i < len(raw) {
		if raw[i] == '%' {
			if !keptEscape(raw, i, &qryEsc) {
				return 0, 0, false
			}
			i += 3
			continue
		}
		if !qryByte[raw[i]] {
			return 0, 0, false
		}
		i++
	}
	return hs, hostEnd, simpleQuery(raw[q:])
}

// inputHost returns the host of an http(s) URL as written ("" when the
// authority has user info or the URL is not http(s)).
func inputHost(raw string) string {
	var rest string
	switch {
	case strings.HasPrefix(raw, "http://"):
		rest = raw[7:]
	case strings.HasPrefix(raw, "https://"):
		rest = raw[8:]
	default:
		return ""
	}
	end := strings.IndexAny(rest, "/:?#\\")
	if end < 0 {
		end = len(rest)
	}
	if strings.ContainsRune(rest[:end], '@') {
		return ""
	}
	return rest[:end]
}

func isDotSeg(s []byte) bool {
	return (len(s) == 1 && s[0] == '.') || (len(s) == 2 && s[0] == '.' && s[1] == '.')
}

func hasPunycode(h []byte) bool {
	for i := 0; i+4 <= len(h); i++ {
		if h[i] == 'x' && h[i+1] == 'n' && h[i+2] == '-' && h[i+3] == '-' {
			return true
		}
	}
	return false
}

// simpleQuery accepts "" or pairs separated by single '&': a non-empty
// name, optionally with one '=' and a non-empty value.
func simpleQuery(q []byte) bool {
	if len(q) == 0 {
		return true
	}
	start := 0
	for i := 0; i <= len(q); i++ {
		if i == len(q) || q[i] == '&' {
			pair := q[start:i]
			eq := -1
			for j, b := range pair {
				if b == '=' {
					if eq >= 0 {
						return false
					}
					eq = j
				}
			}
			if len(pair) == 0 || eq == 0 || eq == len(pair)-1 { // empty pair, name or value ("a=" becomes "a")
				return false
			}
			start = i + 1
		}
	}
	return true
}

// encodeInvalidUTF8 percent-encodes the bytes of s that are not part of a
// valid UTF-8 sequence.
func encodeInvalidUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, "%%%02X", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

func truncS(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// validString returns b as a string, with bytes that are not valid UTF-8
// percent-encoded: an identity must survive JSON (which would replace them
// with U+FFFD) and equal its Kafka key.
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return encodeInvalidUTF8(string(b))
}
