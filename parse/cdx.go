package parse

import (
	"bytes"
	"time"

	"github.com/changerate/changerate/records"
)

// Capture indexes of web archives (CDX): one line per capture, blank
// separated, in the column order that the index's header line names:
//
//	" CDX N b a m s k r M S V g"   (pywb, Wayback, OutbackCDX's CDX11)
//
// The letters used here (from the Internet Archive's CDX specification):
// N massaged URL key (SURT), b capture time (14 digits, UTC), a original
// URL, A canonised URL, m MIME type, s HTTP status ("-" for revisits), k
// new-style checksum (base32 SHA-1 of the payload), c old-style checksum;
// the others (r redirect, M meta tags, S length, V offset, g file name, ...)
// are read over. Without a header the column count decides: 11 columns
// are CDX11 (N b a m s k r M S V g), 9 the older CDX9 (N b a m s k r V g),
// 7 the Wayback CDX API's default output (urlkey timestamp original
// mimetype statuscode digest length = N b a m s k S). A header applies to
// the lines after it in the same input (ResetInput forgets it).
//
// Each capture is a visit (records.KindVisit) at the capture time of the
// object named by the original URL (a; the URL key N, turned back into a
// URL, when the index has no a column), canonicalised like every input.
// The digest is normalised like crawl.log's ("sha1:BASE32"), so the CDX of
// a WARC and the WARC itself give the same digests. A "warc/revisit" row
// (mime m) or status 304 is an unchanged visit, as a WARC revisit record
// is; otherwise Changed is unknown and the aggregator compares the digest
// with the object's previous one. Redirects and errors are visits with
// their status, which the aggregator counts as carrying no information
// (as for crawl.log and WARC); a row without a digest ("-") is a visit the
// aggregator cannot judge (no information either).
//
// An index is sorted by URL key, so the captures of one object come in
// time order (per object, not across objects): ingest reads it in input
// order (no event-time sort), and the aggregator's per-object order holds.
type cdxParser struct {
	canon  *Canonicalizer
	cols   cdxColumns // from the header; zero: by column count
	f      [cdxMaxColumns][]byte
	urlBuf []byte
	// the statuses of the current URL key's captures by digest (at most
	// cdxMaxDigests), for the revisit rows that carry no status
	key    []byte
	status map[string]int
}

// cdxMaxDigests bounds the digests remembered for one URL key.
const cdxMaxDigests = 4096

// cdxMaxColumns is the most columns a CDX header may name.
const cdxMaxColumns = 24

// cdxColumns are the 1-based positions of the columns read (0: absent)
// and the column count n.
type cdxColumns struct {
	n                                 int
	key, time, url, canon, mime, stat int
	digest, oldDigest                 int
	header                            bool
}

var (
	cdx11 = cdxColumns{n: 11, key: 1, time: 2, url: 3, mime: 4, stat: 5, digest: 6}
	cdx9  = cdxColumns{n: 9, key: 1, time: 2, url: 3, mime: 4, stat: 5, digest: 6}
	cdx7  = cdxColumns{n: 7, key: 1, time: 2, url: 3, mime: 4, stat: 5, digest: 6}
)

func newCDX(cfg Config) (lineParser, error) {
	return &cdxParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries)}, nil
}

func (p *cdxParser) Format() string { return "cdx" }

func (p *cdxParser) resetInput() {
	p.cols = cdxColumns{}
	p.key = p.key[:0]
	clear(p.status)
}

func (p *cdxParser) canonicalizer() *Canonicalizer { return p.canon }

func (p *cdxParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if h := bytes.TrimLeft(line, " \t"); bytes.HasPrefix(h, []byte("CDX ")) || bytes.Equal(h, []byte("CDX")) {
		return p.header(h[3:])
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	f := &p.f
	n, rest := splitFields(line, f[:])
	if len(bytes.TrimSpace(rest)) > 0 {
		return reject(ReasonFields, "CDX line has more than %d columns", cdxMaxColumns)
	}
	c := p.cols
	if !c.header {
		switch n {
		case 11:
			c = cdx11
		case 9:
			c = cdx9
		case 7:
			c = cdx7
		default:
			return reject(ReasonFields, "CDX line has %d columns; without a \" CDX ...\" header line the index must have 7 (Wayback CDX API), 9 (CDX9) or 11 (CDX11)", n)
		}
	} else if n != c.n {
		return reject(ReasonFields, "CDX line has %d columns, its header names %d", n, c.n)
	}
	col := func(i int) []byte {
		if i == 0 {
			return nil
		}
		return f[i-1]
	}
	t, err := captureTime(col(c.time))
	if err != nil {
		return err
	}
	status, err := cdxStatus(col(c.stat))
	if err != nil {
		return err
	}
	digest := col(c.digest)
	if len(digest) == 0 {
		digest = col(c.oldDigest)
	}
	return p.fill(obs, "cdx", t, status, col(c.url), col(c.canon), col(c.key), col(c.mime), digest)
}

// header reads the letters of a " CDX N b a ..." line.
func (p *cdxParser) header(letters []byte) error {
	c := cdxColumns{header: true}
	for i := 0; ; {
		l, next := nextField(letters, i)
		if len(l) == 0 {
			break
		}
		i = next
		c.n++
		if c.n > cdxMaxColumns {
			p.cols = cdxColumns{}
			return reject(ReasonFields, "CDX header names more than %d columns", cdxMaxColumns)
		}
		if len(l) != 1 {
			p.cols = cdxColumns{}
			return reject(ReasonFields, "CDX header field %q is not one letter", trunc(l))
		}
		switch l[0] {
		case 'N':
			c.key = c.n
		case 'b':
			c.time = c.n
		case 'a':
			c.url = c.n
		case 'A':
			c.canon = c.n
		case 'm':
			c.mime = c.n
		case 's':
			c.stat = c.n
		case 'k':
			c.digest = c.n
		case 'c':
			c.oldDigest = c.n
		}
	}
	if c.time == 0 || (c.url == 0 && c.canon == 0 && c.key == 0) {
		p.cols = cdxColumns{}
		return reject(ReasonFields, "CDX header names no capture time (b) or no URL (a, A or N)")
	}
	p.cols = c
	return skip(ReasonComment)
}

// captureTime parses a 14-digit yyyyMMddHHmmss capture time (UTC).
func captureTime(b []byte) (time.Time, error) {
	if len(b) != 14 {
		return time.Time{}, reject(ReasonTime, "capture time %q is not 14 digits", trunc(b))
	}
	t, ok := warcDate(b)
	if !ok || t.Year() < 1970 {
		return time.Time{}, reject(ReasonTime, "capture time %q", trunc(b))
	}
	return t, nil
}

// cdxStatus parses a status column: three digits, or "-"/"" (none: 0).
func cdxStatus(b []byte) (int, error) {
	if len(b) == 0 || (len(b) == 1 && b[0] == '-') {
		return 0, nil
	}
	n, err := atoi(b)
	if err != nil || len(b) != 3 || n < 100 {
		return 0, reject(ReasonStatus, "HTTP status %q", trunc(b))
	}
	return int(n), nil
}

// fill makes obs the visit of one capture (CDX or CDXJ). url is the
// original URL (preferred), canon the canonised one, key the SURT URL key;
// any may be empty or "-".
func (p *cdxParser) fill(obs *records.Observation, format string, t time.Time, status int, url, canon, key, mime, digest []byte) error {
	u := url
	if isDash(u) {
		u = canon
	}
	if isDash(u) {
		if isDash(key) {
			return reject(ReasonFields, "capture has no URL")
		}
		p.urlBuf = unSURT(p.urlBuf[:0], key)
		u = p.urlBuf
	}
	obj, _, err := p.canon.Canonical(u) // a dns: object's site is its host (records.SiteOf)
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Kind, obs.Format, obs.Status = obj, records.SiteOf(obj), t, records.KindVisit, format, status
	if !isDash(digest) {
		if len(digest) > maxDigestBytes {
			*obs = records.Observation{}
			return reject(ReasonFields, "digest of %d bytes is longer than %d", len(digest), maxDigestBytes)
		}
		obs.Digest = normDigest(digest)
	}
	revisit := bytes.Equal(mime, []byte("warc/revisit"))
	if obs.Digest != "" {
		obs.Status = p.revisitStatus(key, obs.Digest, status, revisit)
	}
	if (revisit && !redirectOrError(obs.Status)) || obs.Status == 304 {
		obs.Changed = records.Unchanged
	}
	return nil
}

// revisitStatus returns the status of a capture: its own, or for a
// revisit row without one ("-") that of the same URL key's earlier capture
// with the same digest, which the revisit repeats. A revisit of a redirect
// or an error page (the Wayback rows of dw.com revisit its 301) is then no
// unchanged visit of the object's content: its Changed stays unknown and
// the aggregator counts it as carrying no information, as it does the
// redirect itself. An index is sorted by URL key, so the memory is that
// of one key (at most cdxMaxDigests digests).
func (p *cdxParser) revisitStatus(key []byte, digest string, status int, revisit bool) int {
	if !bytes.Equal(key, p.key) {
		p.key = append(p.key[:0], key...)
		clear(p.status)
	}
	if revisit {
		if status == 0 {
			status = p.status[digest]
		}
		return status
	}
	if status != 0 {
		if p.status == nil {
			p.status = make(map[string]int)
		}
		if _, ok := p.status[digest]; ok || len(p.status) < cdxMaxDigests {
			p.status[digest] = status
		}
	}
	return status
}

// redirectOrError reports whether an HTTP status is a redirect or an error
// (3xx but 304, 4xx, 5xx): a response without the object's content (the
// aggregator's rule, aggregate.errorOrRedirect).
func redirectOrError(status int) bool {
	return status >= 300 && status < 600 && status != 304
}

func isDash(b []byte) bool { return len(b) == 0 || (len(b) == 1 && b[0] == '-') }

// unSURT turns a SURT URL key ("com,example)/path?q") back into a URL
// ("http://example.com/path?q"); a key that is not SURT is given an http
// scheme if it has none. The scheme, the "www." and the case that the key
// dropped cannot be recovered.
func unSURT(dst, key []byte) []byte {
	i := bytes.IndexByte(key, ')')
	if i < 0 || bytes.Contains(key[:i], []byte("/")) {
		if !bytes.Contains(key, []byte("://")) {
			dst = append(dst, "http://"...)
		}
		return append(dst, key...)
	}
	host, rest := key[:i], key[i+1:]
	dst = append(dst, "http://"...)
	port := []byte(nil)
	if j := bytes.IndexByte(host, ':'); j >= 0 {
		host, port = host[:j], host[j:]
	}
	parts := bytes.Split(host, []byte(","))
	first := true
	for k := len(parts) - 1; k >= 0; k-- {
		if len(parts[k]) == 0 {
			continue
		}
		if !first {
			dst = append(dst, '.')
		}
		first = false
		dst = append(dst, parts[k]...)
	}
	dst = append(dst, port...)
	if len(rest) == 0 || rest[0] != '/' {
		dst = append(dst, '/')
	}
	return append(dst, rest...)
}
