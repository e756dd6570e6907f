package parse

import (
	"errors"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UTC()
}

// lineCase is one table row: a line, and either the observation or the
// reason of the error (and whether it is a skip).
type lineCase struct {
	name   string
	line   string
	want   *records.Observation
	reason string
	skip   bool
}

func runCases(t *testing.T, p Parser, cases []lineCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var obs records.Observation
			err := p.Parse([]byte(c.line), &obs)
			if c.want != nil {
				if err != nil {
					t.Fatalf("Parse(%q): %v", c.line, err)
				}
				if obs != *c.want {
					t.Fatalf("Parse(%q)\n got %+v\nwant %+v", c.line, obs, *c.want)
				}
				if verr := obs.Validate(); verr != nil {
					t.Fatalf("observation does not validate: %v", verr)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", c.line, obs, c.reason)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parse.Error", err)
			}
			if pe.Reason != c.reason || IsSkip(err) != c.skip {
				t.Fatalf("Parse(%q) error %v: reason %q skip %v, want %q skip %v", c.line, err, pe.Reason, IsSkip(err), c.reason, c.skip)
			}
		})
	}
}

func TestNewUnknownFormat(t *testing.T) {
	if _, err := New("nope", Config{}); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("New(nope) = %v, want ErrUnknownFormat", err)
	}
	if _, err := New("warc", Config{}); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("New(warc) = %v, want ErrUnknownFormat (a record format)", err)
	}
	if _, err := New("squid", Config{Profile: "bogus"}); err == nil {
		t.Fatal("bad profile accepted")
	}
}
