package parse

import (
	"errors"
	"fmt"
	"strings"
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

// TestFastPathEscapesExhaustive compares the fast path with the library for
// every single escape %00..%FF in a path, a query name and a query value.
func TestFastPathEscapesExhaustive(t *testing.T) {
	c := NewCanonicalizer(ProfileChangerate, -1)
	accepted := 0
	for b := 0; b < 256; b++ {
		for _, f := range []string{"http://a.example/x%%%02Xy", "http://a.example/x?q%%%02X=1", "http://a.example/x?q=1%%%02X&r=2", "http://a.example/x%%%02X%%%02X"} {
			raw := strings.ReplaceAll(f, "%%%02X", fmt.Sprintf("%%%02X", b))
			if _, _, ok := fastCanonical([]byte(raw), nil); !ok {
				continue
			}
			accepted++
			obj, _, err := c.canonicalStable(raw)
			if err != nil || obj != raw {
				t.Errorf("fast path keeps %q; library gives %q (%v)", raw, obj, err)
			}
		}
	}
	if accepted < 3*160 {
		t.Errorf("fast path accepted only %d escapes", accepted)
	} else {
		t.Logf("fast path accepted %d of 1024 escaped URLs, all equal to the library's result", accepted)
	}
}

func TestObjectTooLong(t *testing.T) {
	long := "http://a.example/" + strings.Repeat("x", MaxObjectBytes)
	for format, line := range map[string]string{
		"squid":    "1157689320.327 1 1.2.3.4 TCP_MISS/200 1 GET " + long + " - - -",
		"jsonl":    `{"object":"` + long + `","time":"2024-01-02T03:04:05Z","kind":"access"}`,
		"snapshot": long + " 1704153600 60 - access",
	} {
		p, _ := New(format, Config{})
		var obs records.Observation
		if err := p.Parse([]byte(line), &obs); Reason(err) != ReasonObjectTooLong {
			t.Errorf("%s: %v", format, err)
		}
	}
}
