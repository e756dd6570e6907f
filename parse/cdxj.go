package parse

import (
	"bytes"
	"encoding/json"

	"github.com/changerate/changerate/records"
)

// CDXJ capture indexes (pywb, OutbackCDX): "urlkey timestamp {json}", one
// capture per line, the JSON object holding the other columns by name:
// url, mime, status, digest (and length, offset, filename, ... read over).
// A capture is the same visit as the equivalent CDX row (see cdx.go):
// object from url (or the URL key when url is missing), digest normalised
// to "sha1:BASE32", "warc/revisit" or 304 unchanged, redirects and errors
// visits with their status. Lines starting with '!' (pywb's "!meta") or
// '#' are comments. status may be a JSON string or number.
type cdxjParser struct {
	cdx cdxParser
	// the JSON values of the current line (slices of it, or of unq for an
	// escaped string)
	url, mime, status, digest []byte
	unq                       [4][]byte
}

func newCDXJ(cfg Config) (lineParser, error) {
	return &cdxjParser{cdx: cdxParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries)}}, nil
}

func (p *cdxjParser) Format() string { return "cdxj" }

func (p *cdxjParser) canonicalizer() *Canonicalizer { return p.cdx.canon }

func (p *cdxjParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '!' || line[0] == '#' {
		return skip(ReasonComment)
	}
	key, i := nextField(line, 0)
	ts, i := nextField(line, i)
	js := bytes.TrimSpace(line[i:])
	if len(js) == 0 || js[0] != '{' {
		return reject(ReasonFields, "CDXJ line is not \"urlkey timestamp {json}\"")
	}
	t, err := captureTime(ts)
	if err != nil {
		return err
	}
	if !json.Valid(js) {
		return reject(ReasonJSON, "CDXJ line's JSON is not valid")
	}
	p.url, p.mime, p.status, p.digest = nil, nil, nil, nil
	if err := p.fields(js); err != nil {
		return err
	}
	status, err := cdxStatus(p.status)
	if err != nil {
		return err
	}
	return p.cdx.fill(obs, "cdxj", t, status, p.url, nil, key, p.mime, p.digest)
}

// fields reads the top-level members of a valid JSON object.
func (p *cdxjParser) fields(js []byte) error {
	i := 1 // after '{'
	for {
		i = skipWS(js, i)
		if i >= len(js) || js[i] == '}' {
			return nil
		}
		if js[i] == ',' {
			i++
			continue
		}
		// a member name (a string: the JSON is valid)
		ks, ke := i, endOfValue(js, i)
		i = skipWS(js, ke)
		i++ // ':'
		i = skipWS(js, i)
		vs, ve := i, endOfValue(js, i)
		i = ve
		var slot int
		switch string(js[ks:ke]) {
		case `"url"`:
			slot = 0
		case `"mime"`:
			slot = 1
		case `"status"`:
			slot = 2
		case `"digest"`:
			slot = 3
		default:
			continue
		}
		v := js[vs:ve]
		if v[0] == '"' {
			inner := v[1 : len(v)-1]
			if bytes.IndexByte(inner, '\\') >= 0 {
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return reject(ReasonJSON, "CDXJ string %q", trunc(v))
				}
				p.unq[slot] = append(p.unq[slot][:0], s...)
				inner = p.unq[slot]
			}
			v = inner
		} else if slot != 2 || v[0] < '0' || v[0] > '9' {
			if string(v) == "null" {
				continue
			}
			return reject(ReasonJSON, "CDXJ member %s is %q, want a string", js[ks:ke], trunc(v))
		}
		switch slot {
		case 0:
			p.url = v
		case 1:
			p.mime = v
		case 2:
			p.status = v
		case 3:
			p.digest = v
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfValue returns the index just after the JSON value starting at i of
// a valid JSON text.
func endOfValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = endOfValue(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j
	}
}
