package parse

import (
	"bytes"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// DefaultBaseURL resolves path-only request targets when Config.BaseURL is
// empty.
const DefaultBaseURL = "http://localhost"

// Common and Combined Log Format (Apache, nginx):
//
//	host ident authuser [dd/Mon/yyyy:hh:mm:ss ±hhmm] "METHOD target PROTO" status bytes ["referer" "user-agent" ...]
//
// and the vhost_combined variant with a leading "vhost[:port]" field. Every
// line is an access at the bracketed time, except status 304, which answers
// only a conditional request: a revalidation that found the content
// Unchanged (records.KindRevalidation). A path-only target is resolved
// against the line's vhost when there is one, else Config.BaseURL (default
// "http://localhost"); an absolute target (proxy logs) is used as is.
// Requests with no target ("-", nginx's empty connections), "*" (OPTIONS *)
// and CONNECT are skipped with reason "no-object" or "connect". A request
// line whose target contains blanks (a client bug) is accepted when it ends
// in HTTP/x: the blanks are percent-encoded by the canonicaliser.
type clfParser struct {
	zone  *time.Location
	canon *Canonicalizer
	base  string
	vbuf  []byte
}

func newCLF(cfg Config) (lineParser, error) {
	return &clfParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), base: baseOf(cfg), zone: cfg.Zone}, nil
}

func baseOf(cfg Config) string {
	b := cfg.BaseURL
	if b == "" {
		b = DefaultBaseURL
	}
	return strings.TrimRight(b, "/")
}

func (p *clfParser) Format() string { return "clf" }

func (p *clfParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	var tok [6][]byte
	i := 0
	n := 0
	for ; n < 5; n++ {
		t, next, _ := nextToken(line, i)
		if len(t) == 0 {
			return reject(ReasonFields, "CLF line has %d fields before the time, want 4 or 5", n)
		}
		tok[n] = t
		i = next
		if t[0] == '[' {
			break
		}
	}
	var vhost []byte
	switch n {
	case 3:
	case 4:
		vhost = tok[0]
	default:
		return reject(ReasonFields, "CLF line has no [time] field in position 4 or 5")
	}
	ts := tok[n]
	if len(ts) < 2 || ts[len(ts)-1] != ']' {
		return reject(ReasonTime, "CLF time %q is not bracketed", trunc(ts))
	}
	t, ok := clfTimeWithZone(ts[1 : len(ts)-1])
	if !ok {
		w, wall := clfWall(ts[1 : len(ts)-1])
		switch {
		case !wall:
			return reject(ReasonTime, "CLF time %q", trunc(ts))
		case p.zone == nil:
			return reject(ReasonNoZone, "CLF time %q has no zone and none is configured", trunc(ts))
		}
		t = inZone(w, p.zone)
	}
	req, next, quoted := nextToken(line, i)
	if !quoted || len(req) < 2 || req[0] != '"' || req[len(req)-1] != '"' {
		return reject(ReasonFields, "CLF request %q is not quoted", trunc(req))
	}
	i = next
	st, next, _ := nextToken(line, i)
	status, err := parseStatus(st)
	if err != nil {
		return err
	}
	_ = next
	method, target, ok := splitRequestLenient(req[1 : len(req)-1])
	if !ok {
		if r := req[1 : len(req)-1]; len(r) == 0 || (len(r) == 1 && r[0] == '-') {
			return skip(ReasonNoObject)
		}
		return reject(ReasonFields, "malformed request %q", trunc(req))
	}
	if string(method) == "CONNECT" {
		return skip(ReasonConnect)
	}
	if len(target) == 1 && target[0] == '*' {
		return skip(ReasonNoObject)
	}
	obj, _, err := p.resolve(vhost, target)
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Status, obs.Format = obj, records.SiteOf(obj), t, status, "clf"
	obs.Kind = records.KindAccess
	if status == 304 {
		obs.Kind = records.KindRevalidation
		obs.Changed = records.Unchanged
	}
	return nil
}

func (p *clfParser) resolve(vhost, target []byte) (string, string, error) {
	if len(vhost) > 0 && target[0] == '/' && !(len(vhost) == 1 && vhost[0] == '-') {
		h := vhost
		if c := bytes.LastIndexByte(h, ':'); c > 0 && bytes.IndexByte(h, ']') < c {
			port := h[c+1:]
			h = h[:c]
			if string(port) == "443" {
				p.vbuf = append(append(append(p.vbuf[:0], "https://"...), h...), target...)
				return p.canon.Canonical(p.vbuf)
			}
			if string(port) != "80" {
				p.vbuf = append(append(append(append(append(p.vbuf[:0], "http://"...), h...), ':'), port...), target...)
				return p.canon.Canonical(p.vbuf)
			}
		}
		p.vbuf = append(append(append(p.vbuf[:0], "http://"...), h...), target...)
		return p.canon.Canonical(p.vbuf)
	}
	return p.canon.CanonicalRef(p.base, target)
}

// splitRequestLenient splits "GET /path HTTP/1.1"; a target with blanks is
// accepted when the last word is HTTP/x.
func splitRequestLenient(r []byte) (method, target []byte, ok bool) {
	if m, t, ok := splitRequest(r); ok {
		return m, t, true
	}
	m, i := nextField(r, 0)
	if len(m) == 0 {
		return nil, nil, false
	}
	rest := bytes.TrimSpace(r[i:])
	sp := bytes.LastIndexAny(rest, " \t")
	if sp < 0 || !bytes.HasPrefix(rest[sp+1:], []byte("HTTP/")) {
		return nil, nil, false
	}
	for _, c := range m {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return nil, nil, false
		}
	}
	return m, bytes.TrimSpace(rest[:sp]), true
}

func (p *clfParser) canonicalizer() *Canonicalizer { return p.canon }
