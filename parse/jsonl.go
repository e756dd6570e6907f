package parse

import (
	"bytes"
	"errors"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// JSON lines in the project's own observation schema (records.Observation,
// decoded and validated by records.DecodeObservation; unknown fields are
// rejected). The record says what it says; the parser only canonicalises an
// object that is an absolute http or https URL (other identities are kept as
// given), fills Site from it when the record has none, and sets Format to
// "jsonl" when the record names no format. Times before 1970 or after 9999
// are rejected (reason "time"), as by every other parser. Lines starting
// with '#' are comments.
type jsonlParser struct {
	canon *Canonicalizer
}

func newJSONL(cfg Config) (lineParser, error) {
	return &jsonlParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries)}, nil
}

func (p *jsonlParser) Format() string { return "jsonl" }

func (p *jsonlParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return skip(ReasonEmpty)
	}
	if t[0] == '#' {
		return skip(ReasonComment)
	}
	if t[0] != '{' {
		return reject(ReasonJSON, "not a JSON object")
	}
	o, err := records.DecodeObservation(t)
	if errors.Is(err, records.ErrObjectTooLong) {
		return &Error{Reason: ReasonObjectTooLong, Err: err}
	}
	if errors.Is(err, records.ErrFieldTooLong) {
		return &Error{Reason: ReasonTooLarge, Err: err}
	}
	if err != nil {
		reason := ReasonInvalid
		if strings.Contains(err.Error(), "invalid character") || strings.Contains(err.Error(), "unexpected EOF") ||
			strings.Contains(err.Error(), "trailing data") || strings.Contains(err.Error(), "cannot unmarshal") ||
			strings.Contains(err.Error(), "unknown field") {
			reason = ReasonJSON
		}
		return &Error{Reason: reason, Err: err}
	}
	if len(o.Object) > MaxObjectBytes {
		return objectTooLong(len(o.Object))
	}
	if hasHTTPPrefix([]byte(o.Object)) {
		obj, _, cerr := p.canon.Canonical([]byte(o.Object))
		if cerr != nil {
			return cerr
		}
		o.Object = obj
	}
	// The site is the object's, as the aggregator reads it, whatever the
	// line said.
	o.Site = records.SiteOf(o.Object)
	for _, tm := range []time.Time{o.Time, o.LastModified, o.LastEvent} {
		if !tm.IsZero() && (tm.Year() < 1970 || tm.Year() > 9999) {
			return reject(ReasonTime, "time %s is before 1970 or after 9999", tm.Format(time.RFC3339))
		}
	}
	if o.Format == "" {
		o.Format = "jsonl"
	}
	o.Time = o.Time.UTC()
	if !o.LastModified.IsZero() {
		o.LastModified = o.LastModified.UTC()
	}
	if !o.LastEvent.IsZero() {
		o.LastEvent = o.LastEvent.UTC()
	}
	*obs = o
	return nil
}

func (p *jsonlParser) canonicalizer() *Canonicalizer { return p.canon }
