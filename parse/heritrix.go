package parse

import (
	"bytes"
	"time"

	"github.com/changerate/changerate/records"
)

// Heritrix crawl.log (Heritrix 1 and 3): blank-separated columns
//
//	1 log time (ISO 8601, ms, Z)   2 fetch status   3 size   4 URI
//	5 discovery path   6 via   7 MIME type   8 thread   9 fetch start+duration
//	10 content digest ("sha1:BASE32", plain BASE32 in Heritrix 1, or "-")
//	11 source tag   12 annotations (comma list)   [13 extra info JSON, H3]
//
// Every fetch line is a visit (records.KindVisit) at the log time (column 1;
// column 9 is absent on unfetched lines and was written in another clock on
// some Heritrix 1 installations). Status is the fetch status, including
// Heritrix's negative codes (-5003 "blocked by scope", -404 empty response,
// ...); such visits saw no content and carry no digest: the aggregator
// decides what to do with them. The digest is normalised to "sha1:BASE32"
// (Heritrix 1 omits the prefix), so H1 and H3 logs of one object compare
// equal. A "duplicate:*" annotation (duplicate:digest,
// duplicate:server-not-modified, Heritrix 1 deduplicator
// duplicate:"file,offset"), a "warcRevisit:*" annotation or status 304 mark
// the visit Unchanged; otherwise Changed is unknown and the aggregator
// compares digests. Header lines of ARC/WARC-wrapped logs ("filedesc://",
// "metadata://") are skipped with reason "comment". DNS lookups ("dns:host")
// are visits of the object "dns:host" with site "host".
type heritrixParser struct {
	zone  *time.Location
	canon *Canonicalizer
	f     [12][]byte
}

func newHeritrix(cfg Config) (lineParser, error) {
	return &heritrixParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), zone: cfg.Zone}, nil
}

func (p *heritrixParser) Format() string { return "heritrix" }

func (p *heritrixParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' || bytes.HasPrefix(line, []byte("filedesc://")) || bytes.HasPrefix(line, []byte("metadata://")) {
		return skip(ReasonComment)
	}
	f := &p.f
	n, _ := splitFields(line, f[:])
	if n < 10 {
		return reject(ReasonFields, "crawl.log line has %d fields, want at least 10", n)
	}
	t, hasZone, ok := isoTime(f[0])
	if !ok {
		return reject(ReasonTime, "crawl.log time %q", trunc(f[0]))
	}
	if !hasZone {
		if p.zone == nil {
			return reject(ReasonNoZone, "crawl.log time %q has no zone and none is configured", trunc(f[0]))
		}
		t = inZone(t, p.zone)
	}
	st, err := atoi(f[1])
	if err != nil || st < -99999 || st > 999 {
		return reject(ReasonStatus, "crawl.log fetch status %q", trunc(f[1]))
	}
	var annotations []byte
	if n >= 12 {
		annotations = f[11]
	}
	return fillCrawl(p.canon, "heritrix", t, int(st), f[3], f[9], annotations, obs)
}

// fillCrawl fills a visit from the fields of a crawl.log line or feed
// message.
func fillCrawl(c *Canonicalizer, format string, t time.Time, status int, uri, digest, annotations []byte, obs *records.Observation) error {
	obj, _, err := c.Canonical(uri) // a dns: object's site is its host (records.SiteOf)
	if err != nil {
		return err
	}
	obs.Object, obs.Site = obj, records.SiteOf(obj)
	obs.Time = t
	obs.Kind = records.KindVisit
	obs.Status = status
	obs.Format = format
	if len(digest) > 0 && !(len(digest) == 1 && digest[0] == '-') {
		if len(digest) > maxDigestBytes {
			return reject(ReasonFields, "digest of %d bytes is longer than %d", len(digest), maxDigestBytes)
		}
		obs.Digest = normDigest(digest)
	}
	if status == 304 || hasDuplicateAnnotation(annotations) {
		obs.Changed = records.Unchanged
	}
	return nil
}

// maxDigestBytes caps a content digest (a SHA-512 in hex with a prefix is
// 135 bytes).
const maxDigestBytes = 256

// normDigest returns "sha1:BASE32" for a bare 32-character base32 digest
// and the digest unchanged otherwise.
func normDigest(d []byte) string {
	if len(d) == 32 && isBase32(d) {
		return "sha1:" + string(d)
	}
	return validString(d)
}

func isBase32(d []byte) bool {
	for _, c := range d {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func hasDuplicateAnnotation(a []byte) bool {
	if len(a) == 0 {
		return false
	}
	return bytes.HasPrefix(a, []byte("duplicate")) || bytes.Contains(a, []byte(",duplicate")) ||
		bytes.HasPrefix(a, []byte("warcRevisit:")) || bytes.Contains(a, []byte(",warcRevisit:"))
}

func (p *heritrixParser) canonicalizer() *Canonicalizer { return p.canon }
