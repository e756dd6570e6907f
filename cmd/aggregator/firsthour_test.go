package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// visitsJSONL returns visits of object whose digests are given (a new
// digest is a change), as observation JSON lines: the i-th at hours[i]
// hours after t0, or after i days when hours is nil.
func visitsJSONL(object string, hours []int, digests ...string) string {
	var b strings.Builder
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range digests {
		h := 24 * i
		if hours != nil {
			h = hours[i]
		}
		fmt.Fprintf(&b, `{"object":%q,"time":%q,"kind":"visit","digest":"sha1:%s","status":200}`+"\n", object, t0.Add(time.Duration(h)*time.Hour).Format(time.RFC3339), d)
	}
	return b.String()
}

// The summary's "objects with a rate" counts the objects whose estimates
// carry rate_per_s > 0; an object never seen changed (rate_per_s 0) and one
// with too few visits for a best estimate (2 visits, 1 change: kb.dk in the
// Heritrix logs) are counted on their own lines, which add up to the
// objects (issue 32 item 8: the rate-0 object counted as "with a rate").
func TestSummaryObjectsWithARate(t *testing.T) {
	// Irregular visits without a change: the best estimator
	// (cgm_irregular_mle) says 0, as for raeder.dk:83/robots.txt.
	irregular := []int{0, 1, 5, 30}
	in := visitsJSONL("http://changing.example/", nil, "A", "B", "C", "C", "D") +
		visitsJSONL("http://static.example/", irregular, "S", "S", "S", "S") +
		visitsJSONL("http://www.kb.dk/", nil, "K1", "K2")
	out, stderr, err := filter(t, []byte(in))
	if err != nil {
		t.Fatal(err, stderr)
	}
	rate := map[string]*float64{}
	for _, e := range estimates(t, out) {
		rate[e.Object] = e.RatePerS
	}
	if r := rate["http://changing.example/"]; r == nil || *r <= 0 {
		t.Fatalf("changing: rate %v", r)
	}
	if r := rate["http://static.example/"]; r == nil || *r != 0 {
		t.Fatalf("static: rate %v", r)
	}
	if r := rate["http://www.kb.dk/"]; r != nil {
		t.Fatalf("kb.dk: rate %v", *r)
	}
	for label, want := range map[string]int64{"objects": 3, "objects with a rate": 1, "objects rated 0": 1, "objects without a rate": 1} {
		if got := summaryCount(t, stderr, label); got != want {
			t.Errorf("%s: %d, want %d:\n%s", label, got, want, stderr)
		}
	}
	if !strings.Contains(stderr, "rate_per_s > 0") || !strings.Contains(stderr, "fewer than 2 intervals") {
		t.Errorf("the summary does not say what it counts:\n%s", stderr)
	}
	// Every object rated 0 still used something: exit 0.
	if _, stderr, err := filter(t, []byte(visitsJSONL("http://static.example/", irregular, "S", "S", "S", "S"))); err != nil {
		t.Errorf("rated 0 only: %v\n%s", err, stderr)
	}
}
