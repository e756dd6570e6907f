package query

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/records"
)

// TestIndexMatchesReference feeds the Index and the reference (the B-tree
// index it replaced, index_reference_test.go) the same random estimates
// and alerts, with bounds that evict, equal lower bounds (ranked by name),
// older estimates arriving late, estimates without a rate, sites absent,
// derived or not in the name, objects without a site, and alert kinds
// beyond the interned ones, and after every batch compares all they
// answer: every ranking globally and per site with several limits, the
// plan candidates, the sites, the counts and the latest as_of. The larger
// cases go through the table's growth and the compaction of the name
// arena and of the recency queue.
func TestIndexMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name                   string
		max, names, sites, ops int
		batch                  int
	}{
		{"tiny", 3, 10, 2, 400, 1},
		{"evicting", 50, 300, 7, 20_000, 13},
		{"growing", 3000, 5000, 40, 30_000, 97},
		{"unbounded", 0, 2000, 11, 8000, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.ops), 9))
			cfg := IndexConfig{MaxObjects: c.max, MaxAlerts: 5}
			got, want := NewIndex(cfg), newRefIndex(cfg)
			names := make([]string, c.names)
			for i := range names {
				switch i % 17 {
				case 0:
					names[i] = fmt.Sprintf("urn:object:%d", i) // no site
				default:
					names[i] = fmt.Sprintf("https://s%d.example.org/%s/%d", r.IntN(c.sites), string(make([]byte, r.IntN(30))), i)
				}
			}
			at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
			var batch []aggregate.PublishedEstimate
			checked := 0
			for op := range c.ops {
				name := names[r.IntN(len(names))]
				asOf := at.Add(time.Duration(op-r.IntN(40)) * time.Minute)
				if r.IntN(25) == 0 {
					rb, ra := float64(1+r.IntN(4))*1e-5, float64(1+r.IntN(4))*1e-5
					kind := []string{records.EstimateChange, records.EstimateAccess, "other", fmt.Sprint("k", r.IntN(100))}[r.IntN(4)]
					a := &records.Alert{Object: name, Site: aggregate.Site(name), Kind: kind, AsOf: asOf, RateBefore: rb, RateAfter: ra,
						Before: records.Window{Start: asOf.Add(-48 * time.Hour), Points: int64(r.IntN(30))},
						After:  records.Window{Start: asOf.Add(-time.Duration(1+r.IntN(5)) * time.Hour), Points: int64(r.IntN(30))}}
					got.AddAlert(a, []byte(`{}`))
					want.AddAlert(a, []byte(`{}`))
					continue
				}
				pe := aggregate.PublishedEstimate{Object: name, Kind: records.EstimateChange, AsOf: asOf}
				switch r.IntN(4) {
				case 0:
					pe.Site = aggregate.Site(name)
				case 1:
					pe.Site = "elsewhere.example" // not in the name: kept as it is
				}
				if r.IntN(3) == 0 {
					pe.Kind = records.EstimateAccess
				}
				if r.IntN(12) > 0 {
					pe.Rate, pe.HasRate = float64(1+r.IntN(6))*1e-5, true // few values: equal bounds
					if r.IntN(3) > 0 {
						pe.CI95, pe.HasCI = [2]float64{pe.Rate / float64(1+r.IntN(3)), pe.Rate * 2}, true
					}
				}
				if r.IntN(2) == 0 {
					pe.NextVisit, pe.HasNextVisit = asOf.Add(time.Duration(r.IntN(1e6))*time.Second), true
				}
				if r.IntN(5) == 0 { // as a TeeSink does, from the record
					got.AddEstimate(estimateRecord(&pe))
					want.AddEstimate(estimateRecord(&pe))
					continue
				}
				batch = append(batch, pe)
				if len(batch) < c.batch {
					continue
				}
				got.IndexEstimates(batch)
				want.IndexEstimates(batch)
				batch = batch[:0]
				if op%max(1, c.ops/200) < c.batch {
					compareIndexes(t, got, want, op)
					checked++
				}
				if t.Failed() {
					return
				}
			}
			compareIndexes(t, got, want, c.ops)
			if c.max > 0 && c.max < c.names && got.Evicted() == 0 {
				t.Error("nothing evicted: the bound is not exercised")
			}
			if checked < 20 {
				t.Errorf("compared %d times only", checked)
			}
		})
	}
}

// estimateRecord is the record of pe.
func estimateRecord(pe *aggregate.PublishedEstimate) *records.Estimate {
	rec := &records.Estimate{Object: pe.Object, Site: pe.Site, Kind: pe.Kind, AsOf: pe.AsOf}
	if pe.HasRate {
		rec.RatePerS = &pe.Rate
	}
	if pe.HasCI {
		rec.CI95 = &pe.CI95
	}
	if pe.HasNextVisit {
		rec.NextVisit = &pe.NextVisit
	}
	return rec
}

// compareIndexes fails t where got and want answer differently.
func compareIndexes(t *testing.T, got *Index, want *refIndex, op int) {
	t.Helper()
	if got.Len() != want.Len() || got.Evicted() != want.Evicted() || !got.Latest().Equal(want.Latest()) {
		t.Fatalf("op %d: %d objects, %d evicted, latest %v; reference %d, %d, %v", op, got.Len(), got.Evicted(), got.Latest(),
			want.Len(), want.Evicted(), want.Latest())
	}
	gs, ws := got.Sites(1<<20), want.Sites(1<<20)
	if !reflect.DeepEqual(gs, ws) {
		t.Fatalf("op %d: Sites %v, reference %v", op, gs, ws)
	}
	sites := []string{"", "unknown.example"}
	for _, s := range ws {
		sites = append(sites, s.Site)
	}
	for _, site := range sites {
		for _, by := range byNames {
			for _, limit := range []int{0, 1, 3, 1000} {
				if g, w := got.Top(by, site, limit), want.Top(by, site, limit); !reflect.DeepEqual(g, w) {
					t.Fatalf("op %d: Top(%s, %q, %d):\n%v\nreference:\n%v", op, by, site, limit, g, w)
				}
			}
		}
		for _, limit := range []int{0, 2} {
			if g, w := got.Candidates(site, limit), want.Candidates(site, limit); !reflect.DeepEqual(g, w) {
				t.Fatalf("op %d: Candidates(%q, %d):\n%v\nreference:\n%v", op, site, limit, g, w)
			}
		}
	}
}

// TestIndexConcurrent writes estimates and alerts from several goroutines
// while others query (run with -race): the bound holds and every ranking
// answered is in order.
func TestIndexConcurrent(t *testing.T) {
	x := NewIndex(IndexConfig{MaxObjects: 500})
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	done := make(chan struct{})
	errs := make(chan error, 8)
	for w := range 3 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			ests := make([]aggregate.PublishedEstimate, 300)
			for range 30 {
				for k := range ests {
					name := fmt.Sprintf("https://s%d.example.org/%d", r.IntN(5), r.IntN(2000))
					ests[k] = aggregate.PublishedEstimate{Object: name, Kind: records.EstimateChange, AsOf: at, Rate: r.Float64(), HasRate: true}
				}
				x.IndexEstimates(ests)
				x.AddAlert(&records.Alert{Object: ests[0].Object, Kind: records.EstimateAccess, AsOf: at, RateBefore: 1, RateAfter: 2}, []byte(`{}`))
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(done)
		for range 200 {
			for _, site := range []string{"", "s1.example.org"} {
				top := x.Top(ByChangeRate, site, 50)
				for i := 1; i < len(top); i++ {
					if top[i].Lower > top[i-1].Lower {
						errs <- fmt.Errorf("Top(%q) out of order at %d: %v", site, i, top)
						return
					}
				}
				x.Candidates(site, 0)
				x.Top(ByShift, site, 5)
			}
			if n := x.Len(); n > 500 {
				errs <- fmt.Errorf("%d objects indexed, bound 500", n)
				return
			}
		}
	}()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if x.Len() != 500 || x.Evicted() == 0 {
		t.Fatalf("%d objects, %d evicted; want 500 and some evicted", x.Len(), x.Evicted())
	}
}
