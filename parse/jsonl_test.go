package parse

import (
	"testing"

	"github.com/changerate/changerate/records"
)

func TestJSONL(t *testing.T) {
	p, err := New("jsonl", Config{})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, p, []lineCase{
		{name: "visit", line: `{"object":"HTTP://Example.com:80/a#x","time":"2024-01-02T03:04:05+01:00","kind":"visit","changed":true,"last_modified":"2024-01-01T00:00:00Z"}`,
			want: &records.Observation{Object: "http://example.com/a", Site: "example.com", Time: mustTime(t, "2024-01-02T02:04:05Z"), Kind: records.KindVisit,
				Changed: records.Changed, LastModified: mustTime(t, "2024-01-01T00:00:00Z"), Format: "jsonl"}},
		{name: "other identity kept", line: `{"object":"acct:42","time":"2024-01-02T03:04:05Z","kind":"access","format":"bank"}`,
			want: &records.Observation{Object: "acct:42", Time: mustTime(t, "2024-01-02T03:04:05Z"), Kind: records.KindAccess, Format: "bank"}},
		{name: "snapshot", line: `{"object":"/srv/a","time":"2024-01-02T00:00:00Z","kind":"snapshot","period_s":86400,"last_event":"2024-01-01T12:00:00Z","event":"access"}`,
			want: &records.Observation{Object: "/srv/a", Time: mustTime(t, "2024-01-02T00:00:00Z"), Kind: records.KindSnapshot, PeriodS: 86400,
				LastEvent: mustTime(t, "2024-01-01T12:00:00Z"), Event: records.EventAccess, Format: "jsonl"}},
		{name: "comment", line: "# x", reason: ReasonComment, skip: true},
		{name: "blank", line: "   ", reason: ReasonEmpty, skip: true},
		{name: "not json", line: "hello", reason: ReasonJSON},
		{name: "broken json", line: `{"object":"a"`, reason: ReasonJSON},
		{name: "unknown field", line: `{"object":"a","time":"2024-01-02T03:04:05Z","kind":"access","colour":"red"}`, reason: ReasonJSON},
		{name: "trailing", line: `{"object":"a","time":"2024-01-02T03:04:05Z","kind":"access"} {}`, reason: ReasonJSON},
		{name: "bad kind", line: `{"object":"a","time":"2024-01-02T03:04:05Z","kind":"look"}`, reason: ReasonInvalid},
		{name: "no time", line: `{"object":"a","kind":"access"}`, reason: ReasonInvalid},
		{name: "bad url", line: `{"object":"http://","time":"2024-01-02T03:04:05Z","kind":"access"}`, reason: ReasonURL},
	})
}
