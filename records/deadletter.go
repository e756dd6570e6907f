package records

import (
	"bytes"
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
