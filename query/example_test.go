package query_test

import (
	"fmt"
	"time"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// An Index ranks objects by the lower bound of their 95 % interval: an
// object estimated from two observations (wide interval) ranks below one
// with a slightly lower rate known precisely.
func ExampleIndex_Top() {
	idx := query.NewIndex(query.IndexConfig{})
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	add := func(object string, changes int64, rate, lo, hi float64) {
		e := &records.Estimate{Object: object, Site: "news.example", Kind: records.EstimateChange, AsOf: at,
			RatePerS: &rate, Changes: changes}
		if hi > 0 {
			e.CI95 = &[2]float64{lo, hi}
		}
		idx.AddEstimate(e)
	}
	add("http://news.example/seen-twice", 1, 2e-4, 1e-6, 9e-4)
	add("http://news.example/well-known", 120, 1.5e-4, 1.3e-4, 1.7e-4)
	// Three unchanged revalidations minutes apart: bayes_beta's prior alone
	// gives an interval above 0, but nothing was seen to change.
	add("http://news.example/never-changed", 0, 1.1e-4, 3.3e-6, 4.8e-4)
	// Four visits, two changes: a point estimate without an interval.
	add("http://news.example/four-visits", 2, 5e-3, 0, 0)
	for _, r := range idx.Top(query.ByChangeRate, "news.example", 10) {
		fmt.Printf("%s lower %.1e\n", r.Object, r.Lower)
	}
	// Output:
	// http://news.example/well-known lower 1.3e-04
	// http://news.example/seen-twice lower 1.0e-06
	// http://news.example/four-visits lower 0.0e+00
	// http://news.example/never-changed lower 0.0e+00
}
