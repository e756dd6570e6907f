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
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every validation error of this package, so callers
// can tell a bad record (dead-letter it) from an I/O failure (retry it).
var ErrInvalid = errors.New("records: invalid record")

// ErrObjectTooLong and ErrFieldTooLong are wrapped, beside ErrInvalid, by
// the errors of an object longer than MaxObjectBytes and of another text
// field longer than MaxStringBytes.
var (
	ErrObjectTooLong = errors.New("object too long")
	ErrFieldTooLong  = errors.New("field too long")
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
	AlertDetail
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

// Fields of an observation, as bits for duplicate detection in decodeFast.
const (
	fObject = 1 << iota
	fSite
	fTime
	fKind
	fChanged
	fDigest
	fLastModified
	fStatus
	fPeriodS
	fLastEvent
	fEvent
	fFormat
	fSource
	fOffset
)

// decodeFast decodes the usual form of a JSON observation into o without
// reflection and reports whether it did. It accepts only input that
// encoding/json (as used by decodeObservationJSON) accepts with the same
// result: one object, exact field names, each at most once, strings
// without escapes or control characters and with valid UTF-8, integers
// without fraction or exponent, changed true or false, times parsed by
// time.Time.UnmarshalJSON, optional whitespace around tokens, nothing after
// the object. It returns false for anything else (which may or may not be
// valid) and leaves o unspecified then.
func decodeFast(b []byte, o *Observation) bool {
	d := fastDecoder{b: b}
	d.ws()
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.byte('}') {
		d.ws()
		return d.i == len(d.b)
	}
	var seen uint32
	// Site, digest and source share one allocation (made at the end); the
	// object name has its own, since it outlives the observation in caches.
	var spans [3][2]int
	for {
		d.ws()
		// A key is compared with the known names only, so it needs no
		// validation: one with an escape or a control character matches
		// none of them.
		key, ok := d.rawStr()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		var bit uint32
		switch string(key) {
		case "object":
			bit = fObject
			o.Object, ok = d.strValue()
		case "site":
			bit = fSite
			ok = d.span(&spans[0])
		case "time":
			bit = fTime
			ok = d.timeValue(&o.Time)
		case "kind":
			bit = fKind
			var s []byte
			s, ok = d.str()
			o.Kind = Kind(intern(s))
		case "changed":
			bit = fChanged
			switch {
			case d.literal("true"):
				o.Changed = Changed
			case d.literal("false"):
				o.Changed = Unchanged
			default:
				ok = false
			}
		case "digest":
			bit = fDigest
			ok = d.span(&spans[1])
		case "last_modified":
			bit = fLastModified
			ok = d.timeValue(&o.LastModified)
		case "status":
			bit = fStatus
			var v int64
			v, ok = d.intValue()
			o.Status = int(v)
			ok = ok && int64(o.Status) == v
		case "period_s":
			bit = fPeriodS
			o.PeriodS, ok = d.floatValue()
		case "last_event":
			bit = fLastEvent
			ok = d.timeValue(&o.LastEvent)
		case "event":
			bit = fEvent
			var s []byte
			s, ok = d.str()
			o.Event = Event(intern(s))
		case "format":
			bit = fFormat
			var s []byte
			s, ok = d.str()
			o.Format = intern(s)
		case "source":
			bit = fSource
			ok = d.span(&spans[2])
		case "offset":
			bit = fOffset
			o.Offset, ok = d.intValue()
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		d.ws()
		if d.byte(',') {
			continue
		}
		if !d.byte('}') {
			return false
		}
		d.ws()
		if d.i != len(d.b) {
			return false
		}
		var n int
		for _, sp := range spans {
			n += sp[1] - sp[0]
		}
		if n == 0 {
			return true
		}
		var sb strings.Builder
		sb.Grow(n)
		for _, sp := range spans {
			sb.Write(d.b[sp[0]:sp[1]])
		}
		all, at := sb.String(), 0
		for k, dst := range [3]*string{&o.Site, &o.Digest, &o.Source} {
			l := spans[k][1] - spans[k][0]
			*dst = all[at : at+l]
			at += l
		}
		return true
	}
}

type fastDecoder struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// rawStr returns the bytes up to the next quote, unvalidated.
func (d *fastDecoder) rawStr() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	n := bytes.IndexByte(d.b[d.i:], '"')
	if n < 0 {
		return nil, false
	}
	s := d.b[d.i : d.i+n]
	d.i += n + 1
	return s, true
}

// str returns the contents of a string without escapes or control
// characters and with valid UTF-8.
func (d *fastDecoder) str() ([]byte, bool) {
	s, ok := d.rawStr()
	if !ok || !plainASCII(s) && !plainUTF8(s) {
		return nil, false
	}
	return s, true
}

// plainASCII reports whether s has only printable ASCII other than '\\'
// (and '"', which ends a string), checking 8 bytes at a time.
func plainASCII(s []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		y := x ^ (ones * '\\')
		// A high bit in any term flags a byte >= 0x80, < 0x20 or == '\\'
		// (the subtraction tricks can flag more bytes only when one of
		// them is such a byte; plainUTF8 then decides).
		if (x|(x-ones*0x20)&^x|(y-ones)&^y)&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// plainUTF8 reports whether s has no control characters or backslashes
// and is valid UTF-8.
func plainUTF8(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(s)
}

// intern returns s as a string, without allocating for the usual kinds,
// events and input formats.
func intern(s []byte) string {
	switch string(s) {
	case "access":
		return "access"
	case "visit":
		return "visit"
	case "revalidation":
		return "revalidation"
	case "snapshot":
		return "snapshot"
	case "modification":
		return "modification"
	case "squid":
		return "squid"
	case "heritrix":
		return "heritrix"
	case "heritrix-json":
		return "heritrix-json"
	case "clf":
		return "clf"
	case "storelog":
		return "storelog"
	case "warc":
		return "warc"
	case "jsonl":
		return "jsonl"
	}
	return string(s)
}

// span records where a string's contents are.
func (d *fastDecoder) span(sp *[2]int) bool {
	s, ok := d.str()
	if !ok {
		return false
	}
	sp[0] = d.i - 1 - len(s)
	sp[1] = d.i - 1
	return true
}

func (d *fastDecoder) strValue() (string, bool) {
	s, ok := d.str()
	if !ok {
		return "", false
	}
	return string(s), true
}

// timeValue decodes a string with time.Time's own UnmarshalJSON, as
// encoding/json does.
func (d *fastDecoder) timeValue(t *time.Time) bool {
	start := d.i
	if _, ok := d.str(); !ok {
		return false
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

// number returns a JSON number literal; integer reports that it has no
// fraction or exponent.
func (d *fastDecoder) number() (lit []byte, integer, ok bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false, false
	}
	integer = true
	if d.byte('.') {
		integer = false
		if !d.digits() {
			return nil, false, false
		}
	}
	if d.byte('e') || d.byte('E') {
		integer = false
		if !d.byte('+') {
			d.byte('-')
		}
		if !d.digits() {
			return nil, false, false
		}
	}
	return d.b[start:d.i], integer, true
}

// digits skips one or more decimal digits.
func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

func (d *fastDecoder) intValue() (int64, bool) {
	lit, integer, ok := d.number()
	if !ok || !integer {
		return 0, false
	}
	digits, neg := lit, false
	if digits[0] == '-' {
		digits, neg = digits[1:], true
	}
	if len(digits) > 18 { // may overflow: let strconv decide
		v, err := strconv.ParseInt(string(lit), 10, 64)
		return v, err == nil
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (d *fastDecoder) floatValue() (float64, bool) {
	lit, _, ok := d.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	return v, err == nil
}

// AppendEstimateJSON appends the JSON encoding of e to dst: the bytes
// json.Marshal(e) produces (checked by FuzzAppendEstimateJSON), without
// reflection. ok is false, and dst is returned unchanged, when e holds a
// value json.Marshal cannot encode (a NaN or infinite float, a time outside
// years 0–9999); use json.Marshal then.
func AppendEstimateJSON(dst []byte, e *Estimate) (_ []byte, ok bool) {
	n := len(dst)
	a := jsonAppender{b: dst, ok: true}
	a.raw(`{"object":`)
	a.str(e.Object)
	if e.Site != "" {
		a.raw(`,"site":`)
		a.str(e.Site)
	}
	a.raw(`,"kind":`)
	a.str(e.Kind)
	a.raw(`,"as_of":`)
	a.time(e.AsOf)
	if e.RatePerS != nil {
		a.raw(`,"rate_per_s":`)
		a.float(*e.RatePerS)
	}
	if e.Estimator != "" {
		a.raw(`,"estimator":`)
		a.str(e.Estimator)
	}
	if e.CI95 != nil {
		a.raw(`,"ci95":`)
		a.pair(*e.CI95)
	}
	if len(e.Estimates) > 0 {
		a.raw(`,"estimates":{`)
		for i, k := range sortedKeys(e.Estimates) {
			if i > 0 {
				a.raw(",")
			}
			a.str(k)
			a.raw(":")
			a.float(e.Estimates[k])
		}
		a.raw("}")
	}
	if len(e.Intervals) > 0 {
		a.raw(`,"intervals":{`)
		for i, k := range sortedKeys(e.Intervals) {
			if i > 0 {
				a.raw(",")
			}
			a.str(k)
			a.raw(":")
			a.pair(e.Intervals[k])
		}
		a.raw("}")
	}
	a.raw(`,"observations":`)
	a.b = strconv.AppendInt(a.b, e.Observations, 10)
	a.raw(`,"changes":`)
	a.b = strconv.AppendInt(a.b, e.Changes, 10)
	if w := e.Window; w != nil {
		a.raw(`,"window":{"state":`)
		a.str(w.State)
		a.raw(`,"start":`)
		a.time(w.Start)
		a.raw(`,"points":`)
		a.b = strconv.AppendInt(a.b, w.Points, 10)
		a.optFloat(`,"weibull_beta":`, w.WeibullBeta)
		a.optFloat(`,"weibull_eta_s":`, w.WeibullEta)
		a.optFloat(`,"duane_slope":`, w.DuaneSlope)
		a.optFloat(`,"rate_per_s":`, w.RatePerS)
		if w.Model != "" {
			a.raw(`,"model":`)
			a.str(w.Model)
		}
		if w.NextUpdate != nil {
			a.raw(`,"next_update":`)
			a.time(*w.NextUpdate)
		}
		a.raw("}")
	}
	if e.NextVisit != nil {
		a.raw(`,"next_visit":`)
		a.time(*e.NextVisit)
	}
	a.optFloat(`,"ttl_s":`, e.TTLS)
	a.raw("}")
	if !a.ok {
		return dst[:n], false
	}
	return a.b, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: a dozen keys at most.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// jsonAppender writes JSON the way encoding/json does; ok turns false on a
// value encoding/json rejects.
type jsonAppender struct {
	b  []byte
	ok bool
}

func (a *jsonAppender) raw(s string) { a.b = append(a.b, s...) }

func (a *jsonAppender) optFloat(key string, f *float64) {
	if f != nil {
		a.raw(key)
		a.float(*f)
	}
}

func (a *jsonAppender) pair(p [2]float64) {
	a.raw("[")
	a.float(p[0])
	a.raw(",")
	a.float(p[1])
	a.raw("]")
}

// float follows encoding/json's float64 encoding.
func (a *jsonAppender) float(f float64) {
	if f != f || f > math.MaxFloat64 || f < -math.MaxFloat64 {
		a.ok = false
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	a.b = strconv.AppendFloat(a.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(a.b)
		if n >= 4 && a.b[n-4] == 'e' && a.b[n-3] == '-' && a.b[n-2] == '0' {
			a.b[n-2] = a.b[n-1]
			a.b = a.b[:n-1]
		}
	}
}

// time follows time.Time.MarshalJSON (RFC 3339 with nanoseconds; a year
// outside 0–9999 or a zone offset of 24 hours or more is an error).
func (a *jsonAppender) time(t time.Time) {
	a.b = append(a.b, '"')
	n0 := len(a.b)
	a.b = t.AppendFormat(a.b, time.RFC3339Nano)
	b := a.b
	switch {
	case len(b) < n0+5 || b[n0+4] != '-':
		a.ok = false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := 10*(b[len(b)-5]-'0') + (b[len(b)-4] - '0')
		if ('0' <= c && c <= '9') || h >= 24 {
			a.ok = false
		}
	}
	a.b = append(a.b, '"')
}

const hexDigits = "0123456789abcdef"

// str follows encoding/json's string encoding with HTML escaping.
func (a *jsonAppender) str(s string) { a.b = AppendJSONString(a.b, s) }

// jsonSafe[c] says that the ASCII byte c is written as is in a JSON string
// (not a control character, quote, backslash or one of the HTML
// characters that encoding/json escapes). Read-only.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it (HTML-safe escaping, invalid UTF-8 replaced by
// U+FFFD, U+2028 and U+2029 escaped). Ingest's observation encoder and the
// estimate encoder share it.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
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
