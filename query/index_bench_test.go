package query_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cputime"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// liveNames returns n object names of 40 to 60 bytes on sites sites
// (object i on site i mod sites), as a crawl's canonical URLs.
func liveNames(n, sites int) []string {
	r := rand.New(rand.NewPCG(3, 4))
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789-"
	out := make([]string, n)
	for i := range out {
		prefix := fmt.Sprintf("https://www.site%d.example.com/", i%sites)
		// Pad the path so that the whole name is 40 to 60 bytes.
		want := 40 + r.IntN(21)
		suffix := fmt.Sprintf("/%d.html", i)
		b := []byte(prefix)
		for len(b)+len(suffix) < want {
			b = append(b, letters[r.IntN(len(letters))])
		}
		out[i] = string(append(b, suffix...))
	}
	return out
}

// liveFeed publishes estimates as the processor hands them over in the
// live crawl: each call fills ests with the next estimates of objects
// drawn at random from names, three change estimates (rate, interval,
// next visit) for one access estimate, every as_of newer than the last.
type liveFeed struct {
	names []string
	sites []string
	r     *rand.Rand
	at    time.Time
	n     int
}

func newLiveFeed(names []string) *liveFeed {
	f := &liveFeed{names: names, sites: make([]string, len(names)), r: rand.New(rand.NewPCG(5, 6)), at: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}
	for i, n := range names {
		f.sites[i] = aggregate.Site(n)
	}
	return f
}

func (f *liveFeed) fill(ests []aggregate.PublishedEstimate, next func() int) {
	for k := range ests {
		i := next()
		rate := f.r.ExpFloat64() * 1e-5
		at := f.at.Add(time.Duration(f.n) * time.Millisecond)
		pe := aggregate.PublishedEstimate{Object: f.names[i], Site: f.sites[i], Kind: records.EstimateChange, AsOf: at,
			Rate: rate, HasRate: true, CI95: [2]float64{rate * f.r.Float64(), rate * (1 + f.r.Float64())}, HasCI: true,
			NextVisit: at.Add(time.Duration(1+f.r.IntN(86400)) * time.Second), HasNextVisit: true}
		if f.n%4 == 3 {
			pe.Kind, pe.HasNextVisit, pe.NextVisit = records.EstimateAccess, false, time.Time{}
		}
		ests[k] = pe
		f.n++
	}
}

// reportCPU reports the process's CPU time per iteration since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIndexEstimatesLive is the index's cost per published estimate
// in the live crawl's shape: estimates of objects drawn at random among
// objects (40-60 byte names on 1,000 sites, held by the caller as the
// processor holds them), in batches of 1,000, three change estimates for
// one access estimate. With objects above max, a third of the estimates
// create an object and evict another; feed-only makes the estimates
// without indexing them (the part of ns/estimate that is the benchmark's
// own). Before the timed loop the index is
// filled (every object updated four times, on average); heap-B/object is
// the heap it then holds per indexed object (names excluded: the caller
// holds them), ns/estimate the wall clock per estimate of the loop and
// cpu-ns/estimate the process's CPU time per estimate (the collector's
// included).
func BenchmarkIndexEstimatesLive(b *testing.B) {
	for _, c := range []struct {
		objects, max int
		feedOnly     bool
	}{{200_000, 200_000, false}, {300_000, 200_000, false}, {200_000, 200_000, true}} {
		name := fmt.Sprintf("objects=%d/max=%d", c.objects, c.max)
		if c.feedOnly {
			name = "feed-only" // the estimates made, not indexed: the loop's own cost
		}
		b.Run(name, func(b *testing.B) {
			names := liveNames(c.objects, 1000)
			feed := newLiveFeed(names)
			ests := make([]aggregate.PublishedEstimate, 1000)
			before := heapAlloc()
			idx := query.NewIndex(query.IndexConfig{MaxObjects: c.max})
			// Fill: every object once in order, then three rounds at random.
			seq := 0
			for seq < c.objects {
				feed.fill(ests, func() int { seq++; return (seq - 1) % c.objects })
				idx.IndexEstimates(ests)
			}
			random := func() int { return feed.r.IntN(c.objects) }
			for range 3 * c.objects / len(ests) {
				feed.fill(ests, random)
				idx.IndexEstimates(ests)
			}
			after := heapAlloc()
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cputime.Process()
			for b.Loop() {
				feed.fill(ests, random)
				if !c.feedOnly {
					idx.IndexEstimates(ests)
				}
				n += len(ests)
			}
			b.StopTimer()
			cpu := cputime.Process() - cpu0
			runtime.KeepAlive(names)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/estimate")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/estimate")
			b.ReportMetric((float64(after)-float64(before))/float64(idx.Len()), "heap-B/object")
		})
	}
}

// liveIndex returns an index of 200,000 objects on 1,000 sites, each with
// a change and an access estimate, one in ten with a shift alert, and its
// sites.
func liveIndex(tb testing.TB) (*query.Index, []string) {
	const objects = 200_000
	names := liveNames(objects, 1000)
	feed := newLiveFeed(names)
	idx := query.NewIndex(query.IndexConfig{MaxObjects: objects})
	ests := make([]aggregate.PublishedEstimate, 1000)
	seq := 0
	for seq < 4*objects {
		feed.fill(ests, func() int { seq++; return (seq - 1) % objects })
		idx.IndexEstimates(ests)
	}
	for i := 0; i < objects; i += 10 {
		a := &records.Alert{Object: names[i], Site: feed.sites[i], Kind: records.EstimateAccess, AsOf: feed.at,
			RateBefore: 1e-5, RateAfter: float64(1+i%7) * 1e-5, Before: records.Window{Start: feed.at.Add(-48 * time.Hour), Points: 20},
			After: records.Window{Start: feed.at.Add(-2 * time.Hour), Points: int64(5 + i%30)}, PValue: 0.001, Test: "cusum"}
		idx.AddAlert(a, []byte(`{}`))
	}
	if idx.Len() != objects {
		tb.Fatalf("%d objects indexed, want %d", idx.Len(), objects)
	}
	return idx, feed.sites
}

// BenchmarkIndexQuery is the cost of the index's part of /v1/top and
// /v1/plan at 200,000 objects on 1,000 sites (Top and Candidates), and of
// the whole requests through the HTTP handler (the plan over every object
// or one site; /v1/top's records looked up in an empty store).
func BenchmarkIndexQuery(b *testing.B) {
	idx, sites := liveIndex(b)
	site := sites[17]
	b.Run("Top/all/limit=20", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			if len(idx.Top(query.ByChangeRate, "", 20)) != 20 {
				b.Fatal("short ranking")
			}
		}
	})
	b.Run("Top/all/limit=1000", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			idx.Top(query.ByAccessRate, "", 1000)
		}
	})
	b.Run("Top/shift/limit=20", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			idx.Top(query.ByShift, "", 20)
		}
	})
	b.Run("Top/site/limit=20", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			idx.Top(query.ByChangeRate, site, 20)
		}
	})
	b.Run("Candidates/site", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			if len(idx.Candidates(site, 0)) != 200 {
				b.Fatal("short site")
			}
		}
	})
	b.Run("Candidates/all", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cputime.Process())
		for b.Loop() {
			idx.Candidates("", 0)
		}
	})
	mux := memoryMux(b, idx)
	for _, target := range []string{"/v1/top?limit=20", "/v1/top?limit=20&site=" + site, "/v1/plan?site=" + site, "/v1/plan?budget=1000"} {
		b.Run("GET "+target, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cputime.Process())
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, target, nil)
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", target, w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkIndexGC is the cost of a garbage collection (runtime.GC) with
// an index of 200,000 objects on the heap (objects=200000) and without
// (objects=0, the names alone): the difference is what the index adds
// to every collection of the aggregator's heap (marking what it points
// to).
func BenchmarkIndexGC(b *testing.B) {
	for _, objects := range []int{0, 200_000} {
		b.Run(fmt.Sprintf("objects=%d", objects), func(b *testing.B) {
			names := liveNames(200_000, 1000)
			feed := newLiveFeed(names)
			idx := query.NewIndex(query.IndexConfig{MaxObjects: 200_000})
			ests := make([]aggregate.PublishedEstimate, 1000)
			seq := 0
			for seq < 2*objects {
				feed.fill(ests, func() int { seq++; return (seq - 1) % objects })
				idx.IndexEstimates(ests)
			}
			runtime.GC()
			b.ReportAllocs()
			defer reportCPU(b, cputime.Process())
			for b.Loop() {
				runtime.GC()
			}
			runtime.KeepAlive(idx)
			runtime.KeepAlive(names)
		})
	}
}
