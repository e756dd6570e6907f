package query_test

import (
	"testing"
	"time"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// TestCandidateOfMatchesIndex: CandidateOf of a record is what the index
// lists for it (Candidates), field by field: a pooled estimate with no
// change seen ranks at a lower bound of 0, one with changes keeps its
// interval, one without an interval has [rate, rate], and a record
// without a rate is not listed.
func TestCandidateOfMatchesIndex(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	recs := []records.Estimate{
		{Object: "http://a.example/quiet", Site: "a.example", Kind: records.EstimateChange, AsOf: at, Observations: 9, Changes: 0,
			Estimator: "pooled", RatePerS: f(2e-7), CI95: &[2]float64{1e-12, 9e-7}},
		{Object: "http://a.example/some", Site: "a.example", Kind: records.EstimateChange, AsOf: at, Observations: 9, Changes: 3,
			Estimator: "pooled", RatePerS: f(3e-6), CI95: &[2]float64{1e-6, 8e-6}},
		{Object: "http://a.example/point", Site: "a.example", Kind: records.EstimateChange, AsOf: at, Observations: 9, Changes: 8,
			Estimator: "naive", RatePerS: f(5e-6)},
		{Object: "http://a.example/none", Site: "a.example", Kind: records.EstimateChange, AsOf: at, Observations: 1},
	}
	idx := query.NewIndex(query.IndexConfig{})
	want := map[string]query.Candidate{}
	for i := range recs {
		idx.AddEstimate(&recs[i])
		if c, ok := query.CandidateOf(&recs[i]); ok {
			want[c.Object] = c
		}
	}
	if len(want) != 3 {
		t.Fatalf("CandidateOf lists %d of the records, want 3 (not the one without a rate)", len(want))
	}
	got := idx.Candidates("", 0)
	if len(got) != len(want) {
		t.Fatalf("the index lists %d candidates, want %d", len(got), len(want))
	}
	for _, c := range got {
		if w, ok := want[c.Object]; !ok || w != c {
			t.Errorf("%s: index lists %+v, CandidateOf gives %+v", c.Object, c, w)
		}
	}
	if c := want["http://a.example/quiet"]; c.Lo != 0 || c.Hi != 9e-7 {
		t.Errorf("no change seen: candidate interval [%g, %g], want [0, 9e-7]", c.Lo, c.Hi)
	}
	if c := want["http://a.example/point"]; c.Lo != 0 || c.Hi != 5e-6 {
		t.Errorf("no interval: candidate interval [%g, %g], want [0, 5e-6]", c.Lo, c.Hi)
	}
}
