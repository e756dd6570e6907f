package parse

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// Squid access.log.
//
// The native format (logformat "squid") is
//
//	time.ms elapsed client code/status bytes method URL ident hierarchy/peer type
//
// with blank-padded columns. Every line is an access (records.KindAccess)
// except revalidations of a stale cached copy, which are also a visit at an
// irregular time (records.KindRevalidation, CGM §4.3):
//
//	*_REFRESH_UNMODIFIED*, Squid 2 *_REFRESH_HIT*   → Changed = Unchanged
//	*_REFRESH_MODIFIED*,   Squid 2 *_REFRESH_MISS*  → Changed = Changed
//
// whatever the prefix (TCP_, UDP_, NONE_) and the extra tags (CF_,
// _ABORTED, _TIMEDOUT, ...). REFRESH_FAIL_* and REFRESH_IGNORED did not
// learn anything about the origin: plain accesses. CONNECT lines name a
// tunnel, not an object, and are skipped (reason "connect"), as are
// "error:..." pseudo-URLs of requests that never named one (reason
// "no-object") and requests the proxy refused, *_DENIED* result codes (an
// ACL or a 407 authentication challenge before the authenticated request:
// the object was not served; reason "denied").
//
// A custom logformat (Config.SquidLogformat) is the name of one of Squid's
// predefined formats ("squid" = native, "common", "combined", "referrer")
// or a blank-separated list of fields, each either a Squid logformat token
// or a name:
//
//	%ts.%03tu, %ts, time      Unix seconds[.fraction]
//	[%tl], [%tg], clftime     [dd/Mon/yyyy:hh:mm:ss +zzzz] (two blank-separated parts inside brackets)
//	%tl without brackets, localtime   dd/Mon/yyyy:hh:mm:ss (no zone: needs Config.Zone)
//	%Ss/%03>Hs, code/status   result code and HTTP status
//	%Ss, %Ss:%Sh, code        result code
//	%>Hs, %03>Hs, status      HTTP status
//	%rm, method               request method
//	%ru, %>ru, url            request URL
//	"%rm %ru HTTP/%rv", request   quoted request line
//	anything else             ignored (quoted fields "..." and [...] count as one field)
//
// A custom format needs a time and a URL (or request) field.
type squidParser struct {
	canon  *Canonicalizer
	fields []squidField // nil: native format
	cfg    Config
	native [7][]byte
}

type squidField int

const (
	sqIgnore squidField = iota
	sqTime
	sqCLFTime
	sqLocalTime
	sqCodeStatus
	sqCode
	sqStatus
	sqMethod
	sqURL
	sqRequest
)

func newSquid(cfg Config) (lineParser, error) {
	p := &squidParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), cfg: cfg}
	if cfg.SquidLogformat != "" {
		f, err := compileSquidFormat(cfg.SquidLogformat)
		if err != nil {
			return nil, err
		}
		p.fields = f
	}
	return p, nil
}

func (p *squidParser) Format() string { return "squid" }

// Squid's predefined logformats (squid.conf "logformat"), usable by name in
// Config.SquidLogformat.
var squidPresets = map[string]string{
	"common":   `%>a %[ui %[un [%tl] "%rm %ru HTTP/%rv" %>Hs %<st %Ss:%Sh`,
	"combined": `%>a %[ui %[un [%tl] "%rm %ru HTTP/%rv" %>Hs %<st "%{Referer}>h" "%{User-Agent}>h" %Ss:%Sh`,
	"referrer": `%ts.%03tu %>a %{Referer}>h %ru`,
}

func compileSquidFormat(format string) ([]squidField, error) {
	if format == "squid" {
		return nil, nil // native
	}
	if p, ok := squidPresets[format]; ok {
		format = p
	}
	var out []squidField
	b := []byte(strings.TrimSpace(format))
	i := 0
	hasTime, hasURL := false, false
	for i < len(b) {
		tok, next, _ := nextToken(b, i)
		if len(tok) == 0 {
			break
		}
		i = next
		t := string(tok)
		f := sqIgnore
		switch {
		case t == "time" || strings.HasPrefix(t, "%ts"):
			f = sqTime
		case t == "clftime" || ((strings.Contains(t, "%tl") || strings.Contains(t, "%tg")) && strings.HasPrefix(t, "[")):
			f = sqCLFTime
		case t == "localtime" || strings.Contains(t, "%tl") || strings.Contains(t, "%tg"):
			f = sqLocalTime
		case t == "code/status" || (strings.Contains(t, "%Ss") && strings.Contains(t, "Hs")):
			f = sqCodeStatus
		case t == "code" || strings.Contains(t, "%Ss"):
			f = sqCode
		case t == "status" || strings.Contains(t, ">Hs"):
			f = sqStatus
		case t == "request" || (strings.Contains(t, "%rm") && strings.Contains(t, "%ru")):
			f = sqRequest
		case t == "method" || t == "%rm":
			f = sqMethod
		case t == "url" || t == "%ru" || t == "%>ru":
			f = sqURL
		}
		hasTime = hasTime || f == sqTime || f == sqCLFTime || f == sqLocalTime
		hasURL = hasURL || f == sqURL || f == sqRequest
		out = append(out, f)
	}
	if !hasTime || !hasURL {
		return nil, fmt.Errorf("parse: squid logformat %q needs a time and a URL field", format)
	}
	return out, nil
}

// nextToken returns the next field at or after i: a "quoted" or [bracketed]
// run counts as one field (returned with its delimiters); quoted is true for
// those. A quoted field may contain \" escapes.
func nextToken(b []byte, i int) (tok []byte, next int, quoted bool) {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) {
		return nil, i, false
	}
	s := i
	switch b[i] {
	case '"':
		i++
		for {
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				return b[s:], len(b), true // unterminated: the caller decides
			}
			i += j
			// An odd number of backslashes before it escapes the quote.
			k := i - 1
			for k > s && b[k] == '\\' {
				k--
			}
			if (i-1-k)%2 == 0 {
				return b[s : i+1], i + 1, true
			}
			i++
		}
	case '[':
		j := bytes.IndexByte(b[i:], ']')
		if j < 0 {
			return b[s:], len(b), true
		}
		return b[s : i+j+1], i + j + 1, true
	}
	f, next := nextField(b, i)
	return f, next, false
}

func (p *squidParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(line) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	var (
		code, method, rawURL []byte
		status               int
		err                  error
	)
	if p.fields == nil {
		f := &p.native
		n, _ := splitFields(line, f[:])
		if n < 7 {
			return reject(ReasonFields, "squid native line has %d fields, want at least 7", n)
		}
		obs.Time, err = epochTime(f[0])
		if err != nil {
			return reject(ReasonTime, "squid time %q: %v", trunc(f[0]), err)
		}
		code, status, err = splitCodeStatus(f[3])
		if err != nil {
			return err
		}
		method, rawURL = f[5], f[6]
	} else {
		code, status, method, rawURL, err = p.parseCustom(line, obs)
		if err != nil {
			return err
		}
	}
	return p.finish(code, status, method, rawURL, obs)
}

func (p *squidParser) parseCustom(line []byte, obs *records.Observation) (code []byte, status int, method, rawURL []byte, err error) {
	i := 0
	for k, f := range p.fields {
		tok, next, quoted := nextToken(line, i)
		if len(tok) == 0 {
			return nil, 0, nil, nil, reject(ReasonFields, "squid line has %d fields, logformat wants %d", k, len(p.fields))
		}
		i = next
		inner := tok
		if quoted && len(tok) >= 2 {
			inner = tok[1 : len(tok)-1]
		}
		switch f {
		case sqTime:
			obs.Time, err = epochTime(tok)
			if err != nil {
				return nil, 0, nil, nil, reject(ReasonTime, "squid time %q: %v", trunc(tok), err)
			}
		case sqCLFTime:
			t, ok := clfTimeWithZone(inner)
			if !ok {
				return nil, 0, nil, nil, reject(ReasonTime, "squid time %q", trunc(tok))
			}
			obs.Time = t
		case sqLocalTime:
			t, ok := clfWall(inner)
			if !ok {
				return nil, 0, nil, nil, reject(ReasonTime, "squid time %q", trunc(tok))
			}
			if p.cfg.Zone == nil {
				return nil, 0, nil, nil, reject(ReasonNoZone, "squid time %q has no zone and none is configured", trunc(tok))
			}
			obs.Time = inZone(t, p.cfg.Zone)
		case sqCodeStatus:
			code, status, err = splitCodeStatus(tok)
			if err != nil {
				return nil, 0, nil, nil, err
			}
		case sqCode:
			code = tok
			if c := bytes.IndexByte(code, ':'); c >= 0 {
				code = code[:c]
			}
		case sqStatus:
			status, err = parseStatus(tok)
			if err != nil {
				return nil, 0, nil, nil, err
			}
		case sqMethod:
			method = tok
		case sqURL:
			rawURL = tok
		case sqRequest:
			m, u, ok := splitRequest(inner)
			if !ok {
				return nil, 0, nil, nil, reject(ReasonFields, "malformed request %q", trunc(tok))
			}
			method, rawURL = m, u
		}
	}
	return code, status, method, rawURL, nil
}

func (p *squidParser) finish(code []byte, status int, method, rawURL []byte, obs *records.Observation) error {
	if string(method) == "CONNECT" {
		return skip(ReasonConnect)
	}
	if len(rawURL) > 6 && string(rawURL[:6]) == "error:" {
		return skip(ReasonNoObject)
	}
	if code != nil && !validSquidCode(code) {
		return reject(ReasonStatus, "squid result code %q", trunc(code))
	}
	if bytes.Contains(code, []byte("_DENIED")) {
		return skip(ReasonDenied)
	}
	obj, _, err := p.canon.Canonical(rawURL)
	if err != nil {
		return err
	}
	obs.Object, obs.Site = obj, records.SiteOf(obj)
	obs.Status = status
	obs.Format = "squid"
	obs.Kind = records.KindAccess
	if ch := squidRefresh(code); ch != records.ChangeUnknown {
		obs.Kind = records.KindRevalidation
		obs.Changed = ch
	}
	return nil
}

// splitCodeStatus splits "TCP_MISS/200".
func splitCodeStatus(f []byte) (code []byte, status int, err error) {
	slash := bytes.IndexByte(f, '/')
	if slash < 0 {
		return nil, 0, reject(ReasonStatus, "squid result %q has no /status", trunc(f))
	}
	status, err = parseStatus(f[slash+1:])
	return f[:slash], status, err
}

func parseStatus(b []byte) (int, error) {
	if len(b) == 1 && b[0] == '-' {
		return 0, nil
	}
	n, ok := digits(b)
	if !ok || len(b) > 3 || n > 999 {
		return 0, reject(ReasonStatus, "HTTP status %q", trunc(b))
	}
	return n, nil
}

func validSquidCode(code []byte) bool {
	if len(code) == 0 || len(code) > 64 {
		return false
	}
	for _, c := range code {
		if !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// squidRefresh classifies a result code: Changed or Unchanged for
// revalidations, ChangeUnknown otherwise.
func squidRefresh(code []byte) records.ChangeFlag {
	i := bytes.Index(code, []byte("REFRESH_"))
	if i < 0 {
		return records.ChangeUnknown
	}
	rest := code[i+len("REFRESH_"):]
	switch {
	case bytes.HasPrefix(rest, []byte("UNMODIFIED")), hasWord(rest, "HIT"):
		return records.Unchanged
	case bytes.HasPrefix(rest, []byte("MODIFIED")), hasWord(rest, "MISS"):
		if bytes.HasPrefix(rest, []byte("FAIL")) {
			return records.ChangeUnknown
		}
		return records.Changed
	}
	return records.ChangeUnknown
}

// hasWord reports whether rest starts with w followed by end or '_'
// (REFRESH_HIT, REFRESH_HIT_ABORTED), but not REFRESH_FAIL_HIT.
func hasWord(rest []byte, w string) bool {
	return bytes.HasPrefix(rest, []byte(w)) && (len(rest) == len(w) || rest[len(w)] == '_')
}

// clfTimeWithZone parses "10/Oct/2000:13:55:36 -0700" (the inside of the
// brackets of a CLF time).
func clfTimeWithZone(b []byte) (t time.Time, ok bool) {
	if len(b) < 22 || b[20] != ' ' {
		return t, false
	}
	w, ok := clfWall(b[:20])
	if !ok {
		return t, false
	}
	off, ok := zoneOffset(bytes.TrimSpace(b[21:]))
	if !ok {
		return t, false
	}
	return w.Add(-time.Duration(off) * time.Second), true
}

// splitRequest splits "GET /path HTTP/1.1" into method and target. The
// protocol is optional (HTTP/0.9).
func splitRequest(r []byte) (method, target []byte, ok bool) {
	m, i := nextField(r, 0)
	t, i := nextField(r, i)
	_, i = nextField(r, i)
	extra, _ := nextField(r, i)
	if len(m) == 0 || len(t) == 0 || len(extra) != 0 {
		return nil, nil, false
	}
	for _, c := range m {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return nil, nil, false
		}
	}
	return m, t, true
}

func trunc(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

func (p *squidParser) canonicalizer() *Canonicalizer { return p.canon }
