// Package records defines every record that crosses a process boundary in
// changerate: the observation that ingest produces (topic "observations"),
// and the estimate, access-report, alert and dead-letter records that the
// aggregator publishes. It is the one place where the wire formats live; the
// README documents them with one example each.
//
// Conventions shared by every record: rates are per second, durations are in
// seconds, times are RFC 3339 (UTC, with fractional seconds when present), and
// every record names its object and the time it is valid for. A field that is
// undefined (for example an estimator that has too few observations) is
// absent, never 0 or NaN.
//
// The types are plain values; they are safe to copy and have no internal
// synchronisation.
package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrInvalid is wrapped by every validation error of this package, so callers
// can tell a bad record (dead-letter it) from an I/O failure (retry it).
var ErrInvalid = errors.New("records: invalid record")

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

// Change is a three-valued answer to "did the content change since the
// observer's previous visit?". Its JSON form is true, false, or absent.
type Change int8

const (
	// ChangeUnknown: the observation does not say; the aggregator decides
	// from the digest (a digest different from the object's previous one is
	// a change) or from Last-Modified.
	ChangeUnknown Change = 0
	// Changed: the content changed.
	Changed Change = 1
	// Unchanged: the content is the same as at the previous visit.
	Unchanged Change = 2
)

// MarshalJSON encodes Changed as true and Unchanged as false; ChangeUnknown
// is omitted by the omitempty tag of the field that holds it.
func (c Change) MarshalJSON() ([]byte, error) {
	switch c {
	case Changed:
		return []byte("true"), nil
	case Unchanged:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON accepts true, false and null.
func (c *Change) UnmarshalJSON(b []byte) error {
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
	// Site is the object's site (host), kept for per-site statistics.
	Site string `json:"site,omitempty"`
	// Time is when the access, visit or poll happened.
	Time time.Time `json:"time"`
	// Kind says what the observation tells; see the Kind constants.
	Kind Kind `json:"kind"`
	// Changed is the change status of a visit, when the source says it.
	Changed Change `json:"changed,omitempty"`
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
	// Format is the input format the observation came from ("squid", ...).
	Format string `json:"format,omitempty"`
	// Source identifies the input the observation was read from (for
	// example a log file's path) and Offset its position there (a byte
	// offset that grows along the input). Together they let the aggregator
	// drop an observation that ingest delivers again after a restart: for
	// each object it remembers the last (Source, Offset) applied and drops
	// any observation of the same source at or before it.
	Source string `json:"source,omitempty"`
	Offset int64  `json:"offset,omitempty"`
}

// Validate checks the fields every consumer relies on. Errors wrap ErrInvalid
// and name the field.
func (o *Observation) Validate() error {
	if o.Object == "" {
		return fmt.Errorf("%w: object is empty", ErrInvalid)
	}
	if o.Time.IsZero() {
		return fmt.Errorf("%w: time is missing", ErrInvalid)
	}
	if !o.Kind.Valid() {
		return fmt.Errorf("%w: kind %q is not access, visit, revalidation or snapshot", ErrInvalid, o.Kind)
	}
	if o.Changed < ChangeUnknown || o.Changed > Unchanged {
		return fmt.Errorf("%w: changed has no meaning %d", ErrInvalid, o.Changed)
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
func DecodeObservation(b []byte) (Observation, error) {
	var o Observation
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Observation{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Observation{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if err := o.Validate(); err != nil {
		return Observation{}, err
	}
	return o, nil
}

// Estimate kinds.
const (
	EstimateChange = "change"
	EstimateAccess = "access"
)

// Estimate is the value of the compacted "estimates" topic (key = object and
// kind): the current rate of the object's changes or accesses.
type Estimate struct {
	Object string    `json:"object"`
	Site   string    `json:"site,omitempty"`
	Kind   string    `json:"kind"` // EstimateChange or EstimateAccess
	AsOf   time.Time `json:"as_of"`
	// RatePerS is the best estimate, chosen by Estimator; absent when no
	// estimator is defined yet.
	RatePerS  *float64 `json:"rate_per_s,omitempty"`
	Estimator string   `json:"estimator,omitempty"`
	// CI95 is the 95% confidence interval of RatePerS, when its estimator
	// has one.
	CI95 *[2]float64 `json:"ci95,omitempty"`
	// Estimates holds every applicable estimator's rate, by key.
	Estimates map[string]float64 `json:"estimates,omitempty"`
	// Intervals holds the 95% confidence interval of every estimator that
	// has one, by key.
	Intervals    map[string][2]float64 `json:"intervals,omitempty"`
	Observations int64                 `json:"observations"`
	Changes      int64                 `json:"changes"`
	Window       *Window               `json:"window,omitempty"`
	// NextVisit is the recommended next visit (change estimates).
	NextVisit *time.Time `json:"next_visit,omitempty"`
	// TTLS is the recommended cache TTL in seconds (change estimates).
	TTLS *float64 `json:"ttl_s,omitempty"`
}

// Window describes the object's current consistent window (001 §4).
type Window struct {
	State  string    `json:"state"` // "constant", "increasing", "decreasing" or "forming"
	Start  time.Time `json:"start"`
	Points int64     `json:"points"`
	// WeibullBeta and WeibullEta are the unbiased Weibull fit (001 §3.2).
	WeibullBeta *float64 `json:"weibull_beta,omitempty"`
	WeibullEta  *float64 `json:"weibull_eta_s,omitempty"`
	// DuaneSlope is the least-squares slope of the Duane plot (001 §3.3).
	DuaneSlope *float64 `json:"duane_slope,omitempty"`
	// RatePerS is the window's best rate at AsOf.
	RatePerS *float64 `json:"rate_per_s,omitempty"`
	// Model names the fit RatePerS comes from ("intuitive", "weibull", "duane").
	Model string `json:"model,omitempty"`
	// NextUpdate is the predicted next update point (001 §5).
	NextUpdate *time.Time `json:"next_update,omitempty"`
}

// AccessReport is one record of the "access-reports" topic: the object's
// access rate over one reporting period, measured directly (the count) and
// estimated from indirect data (Matloff) where snapshots were seen.
type AccessReport struct {
	Object      string    `json:"object"`
	Site        string    `json:"site,omitempty"`
	PeriodStart time.Time `json:"period_start"`
	AsOf        time.Time `json:"as_of"` // end of the reporting period
	// Accesses is the number of accesses seen in the period.
	Accesses int64 `json:"accesses"`
	// RatePerS is Accesses divided by the period length.
	RatePerS float64 `json:"rate_per_s"`
	// CI95 is the exact Poisson (Garwood) interval of RatePerS.
	CI95 [2]float64 `json:"ci95"`
	// Estimates holds the long-run direct and indirect estimators, by key.
	Estimates map[string]float64    `json:"estimates,omitempty"`
	Intervals map[string][2]float64 `json:"intervals,omitempty"`
}

// Alert is one record of the "alerts" topic: a rate shift of one object.
type Alert struct {
	Object string    `json:"object"`
	Site   string    `json:"site,omitempty"`
	Kind   string    `json:"kind"` // EstimateChange or EstimateAccess
	AsOf   time.Time `json:"as_of"`
	// RateBefore and RateAfter are the rates of the closed window and of the
	// new one, per second.
	RateBefore float64 `json:"rate_before_per_s"`
	RateAfter  float64 `json:"rate_after_per_s"`
	// Before and After are the two windows.
	Before Window `json:"window_before"`
	After  Window `json:"window_after"`
	// PValue is the probability, under "no shift", of a discrepancy at least
	// this large; Test names the test that gave it.
	PValue float64 `json:"p_value"`
	Test   string  `json:"test"`
}

// DeadLetter is one record of the "dead-letter" topic: an input that could not
// be parsed or decoded, with the reason. Nothing else is dropped silently.
type DeadLetter struct {
	Time time.Time `json:"time"` // when it was rejected
	// Stage is "ingest" or "aggregator".
	Stage string `json:"stage"`
	// Format is the input format (ingest) or topic (aggregator).
	Format string `json:"format"`
	// Position locates the input: "file:line" or "topic/partition@offset".
	Position string `json:"position"`
	// Reason is a short stable code, also used as a metric label.
	Reason string `json:"reason"`
	// Error is the full error message.
	Error string `json:"error"`
	// Input is the rejected input, truncated to MaxDeadLetterInput bytes.
	Input string `json:"input"`
}

// MaxDeadLetterInput caps the input copied into a dead-letter record.
const MaxDeadLetterInput = 4096

// NewDeadLetter builds a dead-letter record, truncating input.
func NewDeadLetter(now time.Time, stage, format, position, reason string, err error, input []byte) DeadLetter {
	if len(input) > MaxDeadLetterInput {
		input = input[:MaxDeadLetterInput]
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return DeadLetter{Time: now.UTC(), Stage: stage, Format: format, Position: position,
		Reason: reason, Error: msg, Input: string(bytes.ToValidUTF8(input, []byte("\uFFFD")))}
}
