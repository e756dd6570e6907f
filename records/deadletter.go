package records

import (
	"bytes"
	"fmt"
	"time"
)

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

// ReasonOutputRejected is the dead-letter reason of an output record that
// the sink refused permanently (stream.ErrRejected), written by the
// aggregator and by ingest in the record's place.
const ReasonOutputRejected = "output_rejected"

// MaxRejectedShown caps the bytes of a rejected output's key and value
// copied into its dead letter, so that the dead letter stays small.
const MaxRejectedShown = 1024

// NewRejectedOutput builds the dead letter (reason ReasonOutputRejected)
// that replaces an output record refused permanently by the sink: Format is
// the record's topic, Position locates what produced it, Error names the
// topic, the key and the size of the value and the sink's reason (prefixed
// by pkg, the writer's package, e.g. "aggregate"), and Input holds the
// first MaxRejectedShown bytes of the value (the key is cut likewise).
func NewRejectedOutput(now time.Time, stage, pkg, topic string, key, value []byte, position, reason string, err error) DeadLetter {
	k := key
	if len(k) > MaxRejectedShown {
		k = k[:MaxRejectedShown]
	}
	v := value
	if len(v) > MaxRejectedShown {
		v = v[:MaxRejectedShown]
	}
	cause := fmt.Errorf("%s: output to topic %s with key %q (value of %d bytes) rejected by the sink (%s): %w", pkg, topic, k, len(value), reason, err)
	return NewDeadLetter(now, stage, topic, position, ReasonOutputRejected, cause, v)
}
