package records

import (
	"errors"
	"testing"
	"time"
)

func TestChangeFreq(t *testing.T) {
	o := Observation{Object: "http://a.example/", Time: time.Unix(1e9, 0).UTC(), Kind: KindVisit, ChangeFreq: "weekly", Format: "sitemap",
		LastModified: time.Unix(1e9-3600, 0).UTC()}
	b := []byte(`{"object":"http://a.example/","time":"2001-09-09T01:46:40Z","kind":"visit","last_modified":"2001-09-09T00:46:40Z","changefreq":"weekly","format":"sitemap"}`)
	got, err := DecodeObservation(b)
	if err != nil || got != o {
		t.Fatalf("decode: %+v %v, want %+v", got, err, o)
	}
	if j, err := decodeObservationJSON(b); err != nil || j != o {
		t.Fatalf("encoding/json path: %+v %v", j, err)
	}
	o.ChangeFreq = "fortnightly"
	if err := o.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("changefreq fortnightly: %v, want ErrInvalid", err)
	}
	for _, c := range ChangeFreqs {
		if !ValidChangeFreq(c) {
			t.Errorf("%s not valid", c)
		}
	}
	if s, ok := ChangeFreqSeconds("weekly"); !ok || s != 604800 {
		t.Errorf("weekly = %g %v", s, ok)
	}
	if _, ok := ChangeFreqSeconds("always"); ok {
		t.Error("always has a period")
	}
}
