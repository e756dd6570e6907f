// Package records defines every record that crosses a process boundary in
// changerate: the observation that ingest produces (topic "observations"),
// and the estimate, access-report, alert and dead-letter records that the
// aggregator publishes. It is the one place where the wire formats live; the
// docs/records.md documents them with one example each.
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

import "errors"

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
