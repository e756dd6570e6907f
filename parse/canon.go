package parse

import (
	"fmt"
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
