package records

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := func() Observation {
		return Observation{Object: "http://a.example/", Time: t0, Kind: KindVisit, Digest: "sha1:X"}
	}
	cases := []struct {
		name string
		mod  func(*Observation)
		want string // "" = valid
	}{
		{"valid visit", func(*Observation) {}, ""},
		{"no object", func(o *Observation) { o.Object = "" }, "object is empty"},
		{"object at the cap", func(o *Observation) { o.Object = "http://a/" + strings.Repeat("x", MaxObjectBytes-9) }, ""},
		{"object over the cap", func(o *Observation) { o.Object = "http://a/" + strings.Repeat("x", MaxObjectBytes-8) }, "longer than"},
		{"huge digest", func(o *Observation) { o.Digest = strings.Repeat("d", MaxStringBytes+1) }, "longer than"},
		{"no time", func(o *Observation) { o.Time = time.Time{} }, "time is missing"},
		{"unknown kind", func(o *Observation) { o.Kind = "teleport" }, "kind"},
		{"bad change value", func(o *Observation) { o.Changed = 7 }, "changed"},
		{"change event", func(o *Observation) { o.Kind, o.Changed = KindChange, Changed }, ""},
		{"change event, flag absent", func(o *Observation) { o.Kind = KindChange }, ""},
		{"change event that did not change", func(o *Observation) { o.Kind, o.Changed = KindChange, Unchanged }, "changed=false"},
		{"snapshot without period", func(o *Observation) { o.Kind, o.Event = KindSnapshot, EventAccess }, "period_s"},
		{"snapshot without event kind", func(o *Observation) { o.Kind, o.PeriodS = KindSnapshot, 60 }, "event"},
		{"snapshot event outside its period", func(o *Observation) {
			o.Kind, o.PeriodS, o.Event, o.LastEvent = KindSnapshot, 60, EventModification, t0.Add(-2*time.Minute)
		}, "outside its period"},
		{"snapshot with an event in its period", func(o *Observation) {
			o.Kind, o.PeriodS, o.Event, o.LastEvent = KindSnapshot, 60, EventModification, t0.Add(-30*time.Second)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ok()
			c.mod(&o)
			err := o.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

// TestKindChangeDecodes: a change event decodes (fast and encoding/json
// paths alike) and counts as a visit; an old changes-tsv record (kind
// visit) still decodes as it did.
func TestKindChangeDecodes(t *testing.T) {
	for _, line := range []string{
		`{"object":"a.xml","time":"2026-01-01T00:00:00Z","kind":"change","changed":true,"format":"changes-tsv"}`,
		`{"object": "a.xml", "time": "2026-01-01T00:00:00Z", "kind": "change"}`,
		`{"object":"a.xml","time":"2026-01-01T00:00:00Z","kind":"visit","changed":true,"format":"changes-tsv"}`,
	} {
		o, err := DecodeObservation([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		j, err := decodeObservationJSON([]byte(line))
		if err != nil || j != o {
			t.Errorf("%s: json path %+v, %v; fast %+v", line, j, err, o)
		}
		if !o.Kind.IsVisit() || o.Kind.IsAccess() {
			t.Errorf("%s: IsVisit %v IsAccess %v", line, o.Kind.IsVisit(), o.Kind.IsAccess())
		}
	}
}
