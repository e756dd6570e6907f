package aggregate

import (
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// TestReorderedVisitKeepsDigest (review bug): A@0h, B@2h, then A@1h
// arriving late (applied at 2h), then B@3h: the content changed once
// (A→B between 0h and 2h). The late visit must neither count a change nor
// replace the digest, or B@3h would count a second one.
func TestReorderedVisitKeepsDigest(t *testing.T) {
	m := DefaultModel()
	m.LateTolerance = 2 * time.Hour
	var o Object
	var eff Effects
	want := []Outcome{Applied, Applied, NoInformation, Applied}
	for i, v := range []records.Observation{visit(0, "A"), visit(2, "B"), visit(1, "A"), visit(3, "B")} {
		eff.Reset()
		if got := o.Apply(&v, &m, &eff); got != want[i] {
			t.Errorf("visit %d: outcome %v, want %v", i, got, want[i])
		}
	}
	if c := o.Change.Changes(); c != 1 {
		t.Fatalf("%d changes counted, want 1", c)
	}
	if n := o.Change.Visits(); n != 3 {
		t.Fatalf("%d visits counted, want 3 (the reordered one carries no information)", n)
	}
}

// TestFailedFetchDoesNotTakePublicationSlot (review bug): a failed fetch
// (status < 0) carries no information, so it must not set the object's
// publication time: the retry one minute later, which sees a change, is
// due for publication.
func TestFailedFetchDoesNotTakePublicationSlot(t *testing.T) {
	m := DefaultModel() // EmitInterval 10m
	var o Object
	var eff Effects
	first := visit(0, "A")
	o.Apply(&first, &m, &eff)
	if !eff.Due {
		t.Fatal("first visit not due")
	}
	failed := visit(1, "")
	failed.Status = -1
	eff.Reset()
	if oc := o.Apply(&failed, &m, &eff); oc != NoInformation || eff.Due {
		t.Fatalf("failed fetch: outcome %v, due %v; want no_information, not due", oc, eff.Due)
	}
	retry := visit(1+1.0/60, "B")
	eff.Reset()
	if oc := o.Apply(&retry, &m, &eff); oc != Applied || !eff.Due {
		t.Fatalf("retry after the failed fetch: outcome %v, due %v; want applied and due", oc, eff.Due)
	}
}

// TestTimeOrderedSourceIsNotDuplicate: input sorted by event time visits
// a source's lines out of offset order (a log written at request
// completion). A later line at a later time is new even with a smaller
// offset; a delivery again of an applied line (same offset, same time) is
// a duplicate.
func TestTimeOrderedSourceIsNotDuplicate(t *testing.T) {
	m := DefaultModel()
	var o Object
	var eff Effects
	acc := func(h float64, off int64) records.Observation {
		return records.Observation{Object: "http://a.example/x", Time: at(h), Kind: records.KindAccess, Source: "/log@1", Offset: off}
	}
	for i, c := range []struct {
		obs  records.Observation
		want Outcome
	}{
		{acc(0, 200), Applied},
		{acc(0.1, 100), Applied},   // earlier in the file, later in time: new
		{acc(0.1, 100), Duplicate}, // the same line again
		{acc(0.05, 90), Duplicate}, // an older line delivered again
	} {
		eff.Reset()
		if got := o.Apply(&c.obs, &m, &eff); got != c.want {
			t.Errorf("observation %d: %v, want %v", i, got, c.want)
		}
	}
}
