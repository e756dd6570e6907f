package parse

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nlnwa/whatwg-url/canonicalizer"
	"github.com/nlnwa/whatwg-url/url"
)

// Canonicalisation profiles accepted by Config.Profile.
const (
	// ProfileChangerate is the default: WHATWG URL parsing (scheme and host
	// lower-case, IDNA to punycode, default port dropped, dot segments
	// resolved, invalid characters percent-encoded) plus: fragment dropped,
	// percent-encoding normalised by repeated decoding and re-encoding of
	// only the bytes that must be encoded (so %7e and ~ are the same object,
	// and %2F in a path becomes /), lax host parsing and acceptance of
	// invalid code points (real logs contain them). The query order is kept:
	// reordering parameters changes the resource on many servers.
	ProfileChangerate = "changerate"
	// ProfileWHATWG is plain WHATWG parsing with the fragment dropped.
	ProfileWHATWG = "whatwg"
	// ProfileSemantic is nlnwa's canonicalizer.Semantic profile (also sorts
	// query parameters, drops user info, collapses repeated slashes).
	ProfileSemantic = "semantic"
)

// MaxObjectBytes caps an object identity (a URL before canonicalisation, or
// any other identity). Longer ones are rejected with reason "too-long": an
// observation must fit in one Kafka message whatever the input.
const MaxObjectBytes = 16 << 10

// ReasonObjectTooLong is the reason of an object longer than MaxObjectBytes.
const ReasonObjectTooLong = "object-too-long"

func objectTooLong(n int) error {
	return &Error{Reason: ReasonObjectTooLong, Err: fmt.Errorf("object of %d bytes is longer than %d", n, MaxObjectBytes)}
}

// DefaultCacheEntries is the default bound of a Canonicalizer's intern cache.
const DefaultCacheEntries = 1 << 16

type canonEntry struct {
	object, site string
	err          error
}

// Canonicalizer turns raw URLs into object identities with the
// github.com/nlnwa/whatwg-url library, with two shortcuts that do not change
// the result: a bounded intern cache keyed by the raw bytes (a hit allocates
// nothing), and a fast path for URLs that are already canonical (checked
// byte by byte; FuzzCanonical checks that the fast path agrees with the
// library). It is not safe for concurrent use.
type Canonicalizer struct {
	stats    CanonicalStats
	idnHosts map[string]struct{} // punycode hosts the library kept unchanged
	p        url.Parser
	fast     bool
	cache    map[string]canonEntry
	max      int
	scratch  []byte
}

// CanonicalStats counts how a Canonicalizer answered: from its cache, by
// the fast path (already canonical), or by the library (of which Rejected
// failed).
type CanonicalStats struct {
	Cache, Fast, Library, Rejected int64
}

// Stats returns the counters since the Canonicalizer was made.
func (c *Canonicalizer) Stats() CanonicalStats { return c.stats }

// Stats returns the canonicalisation counters of a Parser or RecordReader
// made by this package (zero for one without URLs). Like the parser, it
// must not be called concurrently with Parse or Next.
func Stats(p any) CanonicalStats {
	if z, ok := p.(zeroing); ok {
		p = z.lineParser
	}
	if c, ok := p.(interface{ canonicalizer() *Canonicalizer }); ok && c.canonicalizer() != nil {
		return c.canonicalizer().Stats()
	}
	return CanonicalStats{}
}

// NewCanonicalizer returns a canonicalizer for profile ("" means
// ProfileChangerate) with an intern cache of cacheEntries entries (0 means
// DefaultCacheEntries, negative disables it). An unknown profile falls back
// to ProfileChangerate; Config.Validate rejects it earlier.
func NewCanonicalizer(profile string, cacheEntries int) *Canonicalizer {
	c := &Canonicalizer{}
	switch profile {
	case ProfileWHATWG:
		c.p = canonicalizer.New(canonicalizer.WithRemoveFragment())
		c.fast = true
	case ProfileSemantic:
		c.p = canonicalizer.Semantic
	default:
		c.p = canonicalizer.New(
			url.WithLaxHostParsing(),
			url.WithAcceptInvalidCodepoints(),
			url.WithPercentEncodeSinglePercentSign(),
			url.WithSkipEqualsForEmptySearchParamsValue(),
			canonicalizer.WithRemoveFragment(),
			canonicalizer.WithRepeatedPercentDecoding(),
		)
		c.fast = true
	}
	c.idnHosts = map[string]struct{}{}
	if cacheEntries == 0 {
		cacheEntries = DefaultCacheEntries
	}
	if cacheEntries > 0 {
		c.max = cacheEntries
		c.cache = make(map[string]canonEntry, min(cacheEntries, 4096))
	}
	return c
}

// Canonical returns the canonical object and its site (host name, empty for
// URLs without a host such as "dns:example.com"). raw is not retained. An
// error is a *Error with reason "url".
func (c *Canonicalizer) Canonical(raw []byte) (object, site string, err error) {
	if len(raw) > MaxObjectBytes {
		return "", "", objectTooLong(len(raw))
	}
	if c.cache != nil {
		if e, ok := c.cache[string(raw)]; ok {
			c.stats.Cache++
			return e.object, e.site, e.err
		}
	}
	key := string(raw)
	var e canonEntry
	if c.fast {
		if hs, he, ok := fastCanonical(raw, c.idnHosts); ok {
			e.object = key
			e.site = key[hs:he]
			c.stats.Fast++
		}
	}
	if e.object == "" {
		e.object, e.site, e.err = c.canonicalStable(key)
		c.stats.Library++
		if e.err != nil {
			c.stats.Rejected++
		} else if c.fast && hasPunycode([]byte(e.site)) && inputHost(key) == e.site {
			if len(c.idnHosts) >= 4096 {
				clear(c.idnHosts)
			}
			c.idnHosts[e.site] = struct{}{}
		}
	}
	if c.cache != nil {
		if len(c.cache) >= c.max {
			clear(c.cache)
		}
		c.cache[key] = e
	}
	return e.object, e.site, e.err
}

// CanonicalRef resolves an HTTP request target against base and
// canonicalises the result: an origin-form target (starting with '/', also
// "//x", which is a path in a request line, not a network-path reference)
// is appended to base; anything else is taken as an absolute URL. base must
// end without a slash ("http://example.com"). It shares the cache with
// Canonical.
func (c *Canonicalizer) CanonicalRef(base string, ref []byte) (object, site string, err error) {
	if len(ref) > 0 && ref[0] == '/' {
		c.scratch = append(append(c.scratch[:0], base...), ref...)
		return c.Canonical(c.scratch)
	}
	return c.Canonical(ref)
}

// canonicalStable canonicalises with the library until the result is a
// fixed point (the library is not idempotent on some odd inputs:
// "http:%2F0" → "http:///0/" → "http://0.0.0.0/"), so that an object read
// back from jsonl stays the same object. A result the fast path accepts is
// a fixed point (FuzzCanonical checks that), which saves the second run in
// the common case. An http(s) URL without a host is rejected.
func (c *Canonicalizer) canonicalStable(raw string) (object, site string, err error) {
	object, site, err = c.canonicalSlow(raw)
	for i := 0; err == nil; i++ {
		if c.fast {
			if _, _, ok := fastCanonical([]byte(object), nil); ok {
				break
			}
		}
		if site == "" && hasHTTPPrefix([]byte(object)) {
			return "", "", &Error{Reason: ReasonURL, Err: fmt.Errorf("URL %q has no host", truncS(raw))}
		}
		if i == 3 {
			return "", "", &Error{Reason: ReasonURL, Err: fmt.Errorf("URL %q has no stable canonical form", truncS(raw))}
		}
		again, againSite, aerr := c.canonicalSlow(object)
		if aerr != nil {
			return "", "", aerr
		}
		if again == object {
			break
		}
		object, site = again, againSite
	}
	return object, site, err
}

// canonicalSlow runs the library. Bytes that are not valid UTF-8 are
// percent-encoded first (the library works on code points and, with
// invalid code points accepted, indexes past the end of some such inputs:
// FuzzCanonical found "A://\xef\xd1"); a panic of the library is recovered
// and reported as a "url" rejection, so one URL can never stop ingest.
func (c *Canonicalizer) canonicalSlow(raw string) (object, site string, err error) {
	defer func() {
		if r := recover(); r != nil {
			object, site = "", ""
			err = &Error{Reason: ReasonURL, Err: fmt.Errorf("URL canonicaliser failed on %q: %v", truncS(raw), r)}
		}
	}()
	if !utf8.ValidString(raw) {
		raw = encodeInvalidUTF8(raw)
	}
	u, perr := c.p.Parse(raw)
	if perr != nil {
		msg := perr.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return "", "", &Error{Reason: ReasonURL, Err: fmt.Errorf("%s", msg)}
	}
	object = u.Href(true)
	site = u.Hostname()
	if len(object) > MaxObjectBytes {
		return "", "", objectTooLong(len(object))
	}
	if object == "" {
		return "", "", &Error{Reason: ReasonURL, Err: fmt.Errorf("empty URL")}
	}
	return object, site, nil
}

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
