package records

import (
	"strings"
	"testing"
)

// TestDecodeErrorsSpeakJSON: decoding errors name the JSON problem, never
// Go types.
func TestDecodeErrorsSpeakJSON(t *testing.T) {
	for _, in := range []string{
		"2006-02-23T10:33:28.285Z     1         56 dns:www.example.org P http://www.example.org/ text/dns",
		`"a string"`,
		`{"object":"http://a/","time":"2026-01-01T00:00:00Z","kind":"visit","status":"200"}`,
		`{"object":`,
	} {
		_, err := DecodeObservation([]byte(in))
		if err == nil {
			t.Fatalf("%q decoded", in)
		}
		if strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "records.") && strings.Contains(err.Error(), "type") {
			t.Errorf("%q: error names Go types: %v", in, err)
		}
	}
}
