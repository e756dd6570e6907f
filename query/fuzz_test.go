package query_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// FuzzRequest: whatever the path and query, the API answers with JSON and
// never with a server error.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"/v1/objects?url=http://a.example/", "/v1/objects?url=%zz", "/v1/top?by=shift&limit=3&site=a.example",
		"/v1/plan?budget=5&period=1h&policy=ntoulas-greedy", "/v1/plan?start=2026-10-01T00:00:00Z&policy=malcolm",
		"/v1/alerts?since=1h", "/v1/objects/view?url=http://a.example/", "/v1/sites?limit=1000",
	} {
		f.Add(s)
	}
	idx := query.NewIndex(query.IndexConfig{MaxObjects: 100})
	r, t0 := 1e-4, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	nv := t0.Add(time.Hour)
	idx.AddEstimate(&records.Estimate{Object: "http://a.example/", Site: "a.example", Kind: "change", AsOf: t0, RatePerS: &r,
		CI95: &[2]float64{r / 2, 2 * r}, NextVisit: &nv})
	mux := memoryMux(f, idx)
	f.Fuzz(func(t *testing.T, target string) {
		req, err := http.NewRequest(http.MethodGet, "http://x"+target, nil)
		if err != nil || len(target) == 0 || target[0] != '/' || len(target) < 4 || target[:4] != "/v1/" {
			return
		}
		req.RequestURI = target
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", target, w.Code, w.Body)
		}
		if w.Code != http.StatusNotFound && w.Code != http.StatusMethodNotAllowed && w.Header().Get("Content-Type") == "application/json" && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%q: invalid JSON %s", target, w.Body)
		}
	})
}

// memoryMux is the query API over idx and an empty in-memory store, with
// the default configuration and a discarded log: what FuzzRequest and
// BenchmarkIndexQuery serve from.
func memoryMux(tb testing.TB, idx *query.Index) *http.ServeMux {
	store, err := state.NewMemory(state.MemoryConfig{}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, aggregate.DefaultModel(), idx,
		slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	qs.Register(mux)
	return mux
}
