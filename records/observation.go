package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Kind says what an observation tells about its object.
type Kind string

const (
	// KindAccess is one request for the object (a proxy or origin log line).
	// It feeds the access-rate estimators only.
	KindAccess Kind = "access"
	// KindVisit is one check of the object's content by an observer (a
	// crawler fetch, a WARC response or revisit record). It feeds the
	// change-rate estimators: Changed, Digest and LastModified say what was
	// seen.
	KindVisit Kind = "visit"
	// KindRevalidation is a request that also revalidated a cached copy
	// (Squid TCP_REFRESH_MODIFIED / TCP_REFRESH_UNMODIFIED, a 304 on a
	// conditional request): both an access and a visit. These visits come at
	// irregular times: passive monitoring (CGM §4.3).
	KindRevalidation Kind = "revalidation"
	// KindSnapshot is one periodic poll of indirect data (Matloff): at Time,
	// the end of a period of PeriodS seconds, the object's last access or
	// modification time was LastEvent (zero when no event fell in the
	// period). Event says which of the two it is.
	KindSnapshot Kind = "snapshot"
)

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindAccess, KindVisit, KindRevalidation, KindSnapshot:
		return true
	}
	return false
}

// IsAccess reports whether an observation of kind k counts as an access.
func (k Kind) IsAccess() bool { return k == KindAccess || k == KindRevalidation }

// IsVisit reports whether an observation of kind k is a check of content.
func (k Kind) IsVisit() bool { return k == KindVisit || k == KindRevalidation }

// ChangeFlag is a three-valued answer to "did the content change since the
// observer's previous visit?". Its JSON form is true, false, or absent.
type ChangeFlag int8

const (
	// ChangeUnknown: the observation does not say; the aggregator decides
	// from the digest (a digest different from the object's previous one is
	// a change) or from Last-Modified.
	ChangeUnknown ChangeFlag = 0
	// Changed: the content changed.
	Changed ChangeFlag = 1
	// Unchanged: the content is the same as at the previous visit.
	Unchanged ChangeFlag = 2
)

// MarshalJSON encodes Changed as true and Unchanged as false; ChangeUnknown
// is omitted by the omitempty tag of the field that holds it.
func (c ChangeFlag) MarshalJSON() ([]byte, error) {
	switch c {
	case Changed:
		return []byte("true"), nil
	case Unchanged:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON accepts true, false and null.
func (c *ChangeFlag) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*c = Changed
	case "false":
		*c = Unchanged
	case "null":
		*c = ChangeUnknown
	default:
		return fmt.Errorf("%w: changed must be true, false or null, got %.20s", ErrInvalid, b)
	}
	return nil
}

// Event says which event a snapshot's LastEvent is the time of.
type Event string

const (
	// EventAccess: LastEvent is the last access time (atime).
	EventAccess Event = "access"
	// EventModification: LastEvent is the last modification time (mtime).
	EventModification Event = "modification"
)

// Observation is what one input line (or WARC record) says about one
// object. It is the value of the "observations" topic, keyed by Object.
type Observation struct {
	// Object is the canonical URL (or other identity) of the object.
	Object string `json:"object"`
	// Site is the object's site, SiteOf(Object): the same for ingest, the
	// aggregator's per-site state and every record (a reader may ignore
	// it and call SiteOf).
	Site string `json:"site,omitempty"`
	// Time is when the access, visit or poll happened.
	Time time.Time `json:"time"`
	// Kind says what the observation tells; see the Kind constants.
	Kind Kind `json:"kind"`
	// Changed is the change status of a visit, when the source says it.
	Changed ChangeFlag `json:"changed,omitempty"`
	// Digest is a content digest of a visit (for example "sha1:..."); two
	// visits with different digests saw different content.
	Digest string `json:"digest,omitempty"`
	// LastModified is the object's Last-Modified time seen at a visit; zero
	// when the source had none.
	LastModified time.Time `json:"last_modified,omitzero"`
	// Status is the HTTP status code (or a negative Heritrix fetch status)
	// where the source has one.
	Status int `json:"status,omitempty"`
	// PeriodS is a snapshot's polling period τ in seconds.
	PeriodS float64 `json:"period_s,omitempty"`
	// LastEvent is a snapshot's last access or modification time; zero when
	// no event fell in the period.
	LastEvent time.Time `json:"last_event,omitzero"`
	// Event says which time LastEvent is (snapshots only).
	Event Event `json:"event,omitempty"`
	// ChangeFreq is the change frequency a site claims for the object
	// (a sitemap's <changefreq>: always, hourly, daily, weekly, monthly,
	// yearly or never), carried as the site's claim, not as evidence.
	ChangeFreq string `json:"changefreq,omitempty"`
	// Format is the input format the observation came from ("squid", ...).
	Format string `json:"format,omitempty"`
	// Source identifies the input the observation was read from (for
	// example a log file's path) and Offset its position there (a byte
	// offset that grows along the input). Together they let the aggregator
	// drop an observation that ingest delivers again after a restart: for
	// each object it remembers the last (Source, Offset) applied and drops
	// any observation of the same source at or before it and not later in
	// event time.
	Source string `json:"source,omitempty"`
	Offset int64  `json:"offset,omitempty"`
}

// MaxObjectBytes caps the length of an object identity (16 KiB, the same
// cap as ingest's parsers). Every output record carries the object's name,
// some twice (key and value); the cap keeps them far below Kafka's default
// 1 MiB message limit. It does not guarantee that an output is accepted: a
// topic with a smaller max.message.bytes, or a record grown by other
// fields (an alert carries two windows), can still be refused; the
// aggregator then writes a dead letter with reason output_rejected in its
// place (see aggregate.ReasonOutputRejected).
const MaxObjectBytes = 16 << 10

// MaxStringBytes caps the other free-text fields (digest, source, format,
// site): 4 KiB, room for a file path.
const MaxStringBytes = 4 << 10

// Validate checks the fields every consumer relies on. Errors wrap ErrInvalid
// and name the field.
func (o *Observation) Validate() error {
	if o.Object == "" {
		return fmt.Errorf("%w: object is empty", ErrInvalid)
	}
	if len(o.Object) > MaxObjectBytes {
		return fmt.Errorf("%w: %w: object of %d bytes is longer than %d", ErrInvalid, ErrObjectTooLong, len(o.Object), MaxObjectBytes)
	}
	if len(o.Digest) > MaxStringBytes || len(o.Source) > MaxStringBytes || len(o.Format) > MaxStringBytes || len(o.Site) > MaxStringBytes {
		return fmt.Errorf("%w: %w: digest, source, format or site longer than %d bytes", ErrInvalid, ErrFieldTooLong, MaxStringBytes)
	}
	if o.Time.IsZero() {
		return fmt.Errorf("%w: time is missing", ErrInvalid)
	}
	if !o.Kind.Valid() {
		return fmt.Errorf("%w: kind %q is not access, visit, revalidation or snapshot", ErrInvalid, o.Kind)
	}
	if !ValidChangeFreq(o.ChangeFreq) {
		return fmt.Errorf("%w: changefreq %q is not always, hourly, daily, weekly, monthly, yearly or never", ErrInvalid, o.ChangeFreq)
	}
	if o.Changed < ChangeUnknown || o.Changed > Unchanged {
		return fmt.Errorf("%w: changed has no meaning %d", ErrInvalid, o.Changed)
	}
	for _, t := range [...]time.Time{o.Time, o.LastModified, o.LastEvent} {
		if y := t.Year(); !t.IsZero() && (y < 0 || y > 9999) {
			return fmt.Errorf("%w: time %s outside years 0-9999", ErrInvalid, t.Format(time.RFC3339))
		}
	}
	if math.IsNaN(o.PeriodS) || math.IsInf(o.PeriodS, 0) || o.PeriodS < 0 {
		return fmt.Errorf("%w: period_s %v is not a positive finite number", ErrInvalid, o.PeriodS)
	}
	if o.Kind == KindSnapshot {
		if !(o.PeriodS > 0) {
			return fmt.Errorf("%w: snapshot needs period_s > 0", ErrInvalid)
		}
		if o.Event != EventAccess && o.Event != EventModification {
			return fmt.Errorf("%w: snapshot event %q is not access or modification", ErrInvalid, o.Event)
		}
		if !o.LastEvent.IsZero() {
			start := o.Time.Add(-time.Duration(o.PeriodS * float64(time.Second)))
			if o.LastEvent.After(o.Time) || o.LastEvent.Before(start) {
				return fmt.Errorf("%w: snapshot last_event %s outside its period (%s, %s]", ErrInvalid,
					o.LastEvent.Format(time.RFC3339), start.Format(time.RFC3339), o.Time.Format(time.RFC3339))
			}
		}
	}
	return nil
}

// DecodeObservation parses one JSON observation and validates it. Unknown
// fields are rejected so that a typo in a hand-written line is not silently
// ignored. Errors wrap ErrInvalid.
//
// It has the semantics of encoding/json (a Decoder with
// DisallowUnknownFields, then a check for trailing data) but decodes the
// usual form of an observation — what ingest writes: exact field names, no
// escapes, no nulls, no duplicate fields — without reflection; any other
// input takes the encoding/json path, so results and error messages are
// those of encoding/json (FuzzDecodeObservation checks the equivalence).
func DecodeObservation(b []byte) (Observation, error) {
	var o Observation
	if decodeFast(b, &o) {
		if err := o.Validate(); err != nil {
			return Observation{}, err
		}
		return o, nil
	}
	return decodeObservationJSON(b)
}

// decodeObservationJSON is DecodeObservation with encoding/json only.
func decodeObservationJSON(b []byte) (Observation, error) {
	var o Observation
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Observation{}, fmt.Errorf("%w: %s", ErrInvalid, jsonProblem(err))
	}
	if dec.More() {
		return Observation{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if err := o.Validate(); err != nil {
		return Observation{}, err
	}
	return o, nil
}

// jsonProblem says what is wrong with a line that does not decode as an
// observation, in the user's terms rather than encoding/json's (which
// names Go types).
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return "not a JSON object (an observation is one JSON object per line)"
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: a JSON %s where the observation schema wants another type", te.Field, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, err)
	}
	return err.Error()
}
