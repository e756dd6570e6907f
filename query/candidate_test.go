package query_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
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

// TestPlanPosteriorPlanned: a record's plan fields (plan_evidence,
// plan_prior, plan_omega) are what the index lists (AddEstimate of the
// record and IndexEstimates of the processor's values alike; every
// candidate of a site with the site's latest prior and ω), and the
// freshness policy plans each object on Gamma(α₀ + ωX, β₀ + ωE) with its
// site's latest prior and ω, from the index's candidates and from
// CandidateOf's alike (exact: the same operations); the published rate
// and interval stay the candidate's Rate and Hi; lambdacrawl plans on the
// published rate; a record without plan fields keeps the Gamma of its
// interval.
func TestPlanPosteriorPlanned(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	p2 := func(a, b float64) *[2]float64 { return &[2]float64{a, b} }
	recs := []records.Estimate{
		{Object: "http://a.example/quiet", Site: "a.example", Kind: records.EstimateChange, AsOf: at, Observations: 9, Changes: 0,
			Estimator: "pooled", RatePerS: f(2e-7), CI95: &[2]float64{1e-12, 9e-7}, PlanEvidence: p2(0, 8e5), PlanPrior: p2(0.5, 2e5), PlanOmega: f(1)},
		{Object: "http://a.example/some", Site: "a.example", Kind: records.EstimateChange, AsOf: at.Add(time.Hour), Observations: 9, Changes: 3,
			Estimator: "pooled", RatePerS: f(3e-6), CI95: &[2]float64{1e-6, 8e-6}, PlanEvidence: p2(3, 8e5), PlanPrior: p2(0.625, 2.5e5), PlanOmega: f(0.05)},
		{Object: "http://b.example/own", Site: "b.example", Kind: records.EstimateChange, AsOf: at, Observations: 9, Changes: 3,
			Estimator: "naive", RatePerS: f(3e-6), CI95: &[2]float64{1e-6, 8e-6}},
	}
	byRecord, byValues := query.NewIndex(query.IndexConfig{}), query.NewIndex(query.IndexConfig{})
	var pub []aggregate.PublishedEstimate
	var one []query.Candidate
	for i := range recs {
		r := &recs[i]
		byRecord.AddEstimate(r)
		pe := aggregate.PublishedEstimate{Object: r.Object, Site: r.Site, Kind: r.Kind, AsOf: r.AsOf, Rate: *r.RatePerS, HasRate: true,
			CI95: *r.CI95, HasCI: true, Changes: r.Changes, Estimator: r.Estimator, Observations: r.Observations}
		if r.PlanEvidence != nil {
			pe.PlanEvidence, pe.PlanPrior, pe.PlanOmega, pe.HasPlan = *r.PlanEvidence, *r.PlanPrior, *r.PlanOmega, true
		}
		pub = append(pub, pe)
		c, _ := query.CandidateOf(r)
		one = append(one, c)
	}
	byValues.IndexEstimates(pub)
	a, b := byRecord.Candidates("", 0), byValues.Candidates("", 0)
	if !reflect.DeepEqual(a, b) || len(a) != 3 {
		t.Fatalf("the two index paths differ:\n%+v\n%+v", a, b)
	}
	req := query.PlanRequest{Policy: query.PolicyFreshness}
	pages := query.PlanPages(a, req, query.PlanConfig{})
	pagesOne := query.PlanPages(one, req, query.PlanConfig{})
	lc := query.PlanPages(a, query.PlanRequest{Policy: query.PolicyLambdaCrawl}, query.PlanConfig{})
	for k, c := range a {
		var r *records.Estimate
		j := 0
		for i := range recs {
			if recs[i].Object == c.Object {
				r, j = &recs[i], i
			}
		}
		if pages[k] != pagesOne[j] {
			t.Errorf("%s: the index's candidate planned on %+v, CandidateOf's on %+v", c.Object, pages[k], pagesOne[j])
		}
		if c.Rate != *r.RatePerS || c.Hi != r.CI95[1] {
			t.Errorf("%s: candidate's published rate %v [%v, %v], record's %v %v", c.Object, c.Rate, c.Lo, c.Hi, *r.RatePerS, *r.CI95)
		}
		if lc[k].Rate != *r.RatePerS || lc[k].Shape != 0 {
			t.Errorf("%s: lambdacrawl plans on %+v, want the published rate", c.Object, lc[k])
		}
		if r.PlanEvidence == nil {
			if c.HasPlan || !(pages[k].Shape > 0) || pages[k].Rate == *r.RatePerS {
				t.Errorf("%s: without plan fields planned on %+v (candidate %+v), want its interval's Gamma", c.Object, pages[k], c)
			}
			continue
		}
		// site a's latest record (an hour later): prior (0.625, 2.5e5), ω 0.05
		sh, rt := 0.625+0.05*r.PlanEvidence[0], 2.5e5+0.05*r.PlanEvidence[1]
		if !c.HasPlan || c.Prior.Omega != 0.05 || pages[k].Shape != sh || pages[k].Rate != sh/rt {
			t.Errorf("%s: planned on %+v (candidate %+v), want Gamma(%v, %v)", c.Object, pages[k], c, sh, rt)
		}
	}
}
