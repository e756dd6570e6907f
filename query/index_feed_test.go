package query_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestIndexEstimatesMatchesRecords feeds one index the estimates as a
// processor hands them over (IndexEstimates) and another the same
// estimates as encoded records through a TeeSink, with bounds that evict,
// repeated lower bounds and older records arriving late, and compares
// every ranking, globally and per site, and the plan candidates.
func TestIndexEstimatesMatchesRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	cfg := query.IndexConfig{MaxObjects: 150}
	direct, viaRecords := query.NewIndex(cfg), query.NewIndex(cfg)
	tee := query.NewTeeSink(stream.NewMemorySink(), viaRecords, "estimates", "alerts", slog.New(slog.DiscardHandler))
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var batch []aggregate.PublishedEstimate
	var msgs []stream.Message
	flush := func() {
		direct.IndexEstimates(batch)
		tee.Observe(msgs, nil)
		batch, msgs = batch[:0], msgs[:0]
	}
	for i := range 2000 {
		obj := fmt.Sprintf("https://s%d.example.org/p/%d", r.IntN(9), r.IntN(200))
		rec := records.Estimate{Object: obj, Site: aggregate.Site(obj), Kind: records.EstimateChange,
			AsOf: at.Add(time.Duration(i-r.IntN(50)) * time.Minute).Truncate(time.Microsecond)}
		if r.IntN(4) == 0 {
			rec.Kind = records.EstimateAccess
		}
		if r.IntN(10) > 0 {
			rate := float64(1+r.IntN(5)) * 1e-5 // few distinct values: equal lower bounds
			rec.RatePerS = &rate
			if r.IntN(3) > 0 {
				rec.CI95 = &[2]float64{rate / float64(1+r.IntN(3)), rate * 2}
			}
		}
		if r.IntN(2) == 0 {
			nv := rec.AsOf.Add(time.Duration(r.IntN(1e6)) * time.Second)
			rec.NextVisit = &nv
		}
		pe := aggregate.PublishedEstimate{Object: rec.Object, Site: rec.Site, Kind: rec.Kind, AsOf: rec.AsOf}
		if rec.RatePerS != nil {
			pe.Rate, pe.HasRate = *rec.RatePerS, true
		}
		if rec.CI95 != nil {
			pe.CI95, pe.HasCI = *rec.CI95, true
		}
		if rec.NextVisit != nil {
			pe.NextVisit, pe.HasNextVisit = *rec.NextVisit, true
		}
		val, ok := records.AppendEstimateJSON(nil, &rec)
		if !ok {
			t.Fatal("cannot encode")
		}
		batch = append(batch, pe)
		msgs = append(msgs, stream.Message{Topic: "estimates", Key: []byte(obj), Value: val})
		if len(batch) == 37 {
			flush()
		}
	}
	flush()
	if direct.Len() != viaRecords.Len() || direct.Evicted() != viaRecords.Evicted() || !direct.Latest().Equal(viaRecords.Latest()) {
		t.Fatalf("direct: %d objects, %d evicted, latest %v; via records: %d, %d, %v", direct.Len(), direct.Evicted(), direct.Latest(),
			viaRecords.Len(), viaRecords.Evicted(), viaRecords.Latest())
	}
	if direct.Evicted() == 0 {
		t.Fatal("nothing evicted: the bound is not exercised")
	}
	sites := []string{""}
	for _, sc := range direct.Sites(100) {
		sites = append(sites, sc.Site)
	}
	for _, site := range sites {
		for _, by := range []string{query.ByChangeRate, query.ByAccessRate} {
			a, b := direct.Top(by, site, 1000), viaRecords.Top(by, site, 1000)
			if (site == "" && len(a) == 0) || !reflect.DeepEqual(a, b) {
				t.Errorf("Top(%s, %q): direct %v, via records %v", by, site, a, b)
			}
		}
		if a, b := direct.Candidates(site, 0), viaRecords.Candidates(site, 0); (site == "" && len(a) == 0) || !reflect.DeepEqual(a, b) {
			t.Errorf("Candidates(%q): direct %v, via records %v", site, a, b)
		}
	}
	if a, b := direct.Sites(100), viaRecords.Sites(100); !reflect.DeepEqual(a, b) {
		t.Errorf("Sites: direct %v, via records %v", a, b)
	}
}
