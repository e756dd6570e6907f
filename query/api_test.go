package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/api"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

var t0 = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// workload generates JSON observations: objects on three sites visited every
// hour for days days, whose content changes as Poisson processes with
// known rates, and, for the first object of each site, accesses whose rate
// rises tenfold halfway (which raises access-shift alerts).
func workload(seed uint64, perSite, days int) ([]byte, map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	truth := map[string]float64{}
	type ev struct {
		t   float64
		obs records.Observation
	}
	var evs []ev
	span := float64(days) * 86400
	for s := 0; s < 3; s++ {
		for i := 0; i < perSite; i++ {
			name := fmt.Sprintf("http://site%d.example/page/%d", s, i)
			mean := 3 * 3600 * math.Exp(r.Float64()*math.Log(40))
			truth[name] = 1 / mean
			version, next := 0, r.ExpFloat64()*mean
			for t := r.Float64() * 3600; t < span; t += 3600 {
				for next <= t {
					version++
					next += r.ExpFloat64() * mean
				}
				evs = append(evs, ev{t, records.Observation{Object: name, Time: t0.Add(time.Duration(t * 1e9)), Kind: records.KindVisit,
					Digest: fmt.Sprintf("sha1:%d", version), Format: "jsonl"}})
			}
			if i == 0 {
				for t := r.ExpFloat64() * 1800; t < span; {
					evs = append(evs, ev{t, records.Observation{Object: name, Time: t0.Add(time.Duration(t * 1e9)), Kind: records.KindAccess, Format: "jsonl"}})
					gap := 1800.0
					if t > span/2 {
						gap = 180
					}
					t += r.ExpFloat64() * gap
				}
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		if err := enc.Encode(e.obs); err != nil {
			panic(err)
		}
	}
	return buf.Bytes(), truth
}

// env is an aggregator that consumed the workload into store, with the
// query API over the same store.
type env struct {
	srv    *httptest.Server
	sink   *stream.MemorySink
	router routers.Router
	truth  map[string]float64
	idx    *query.Index
}

func newEnv(t *testing.T, store state.Store, qcfg query.Config) *env {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	cfg := aggregate.DefaultConfig()
	cfg.Model.EmitInterval = 0 // publish after every batch: the last record is the current estimate
	cfg.BatchSize = 2000
	// The workload has no daily cycle: a flat baseline (no seasonal
	// learning) keeps the detector to the one tenfold rise that the
	// by=shift check below looks for.
	cfg.Model.Seasonal.LearningPeriod = 0
	// A reorder window of an hour releases every object's last hour of
	// observations in the final batch, so each object's last published
	// change and access records both describe its final state, which is
	// what /v1/objects rebuilds. (With a shorter window, an object whose
	// last observations were accesses keeps a change record as of its last
	// visit batch, and the API answers the newer state.)
	cfg.ReorderWindow = time.Hour
	// The clock stands at t0, before the workload's later days.
	cfg.MaxFuture = 0
	idx := query.NewIndex(query.IndexConfig{})
	mem := stream.NewMemorySink()
	tee := query.NewTeeSink(mem, idx, cfg.EstimatesTopic, cfg.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(cfg, store, tee, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	log, truth := workload(1, 6, 20)
	if err := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(log), 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	qs, err := query.NewServer(qcfg, store, query.SinglePartition{Topic: stream.TopicObservations}, cfg.Model, idx, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, qs)
	e.sink, e.truth, e.idx = mem, truth, idx
	return e
}

// serve serves qs's routes, with the router of api/openapi.yaml that get
// validates requests and responses with.
func serve(t *testing.T, qs *query.Server) *env {
	t.Helper()
	mux := http.NewServeMux()
	qs.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("api/openapi.yaml is not valid OpenAPI 3: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: srv.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, router: router}
}

// get requests path (with its query), validates the request and the
// response against api/openapi.yaml, checks the status and returns the body.
func (e *env) get(t *testing.T, path string, status int, header ...string) []byte {
	t.Helper()
	_, body := e.fetch(t, path, status, header...)
	return body
}

// fetch is get, also returning the response's header.
func (e *env) fetch(t *testing.T, path string, status int, header ...string) (http.Header, []byte) {
	t.Helper()
	req, resp, body := e.do(t, http.MethodGet, path, header...)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: status %d, want %d: %s", path, resp.StatusCode, status, body)
	}
	route, params, err := e.router.FindRoute(req)
	if err != nil {
		t.Fatalf("GET %s: not in api/openapi.yaml: %v", path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Fatalf("GET %s: response does not conform to api/openapi.yaml: %v\n%s", path, err, body)
	}
	if status == http.StatusOK {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Fatalf("GET %s: a request the server accepted does not conform to api/openapi.yaml: %v", path, err)
		}
	}
	return resp.Header, body
}

// do sends method path with the header's name/value pairs and returns
// the request, the response and its body.
func (e *env) do(t *testing.T, method, path string, header ...string) (*http.Request, *http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return req, resp, body
}

func q(u string) string { return url.QueryEscape(u) }

// latest decodes the last published estimate of every key.
func (e *env) latest(t *testing.T) map[string]records.Estimate {
	t.Helper()
	out := map[string]records.Estimate{}
	for k, v := range e.sink.Latest(stream.TopicEstimates) {
		var rec records.Estimate
		if err := json.Unmarshal(v, &rec); err != nil {
			t.Fatal(err)
		}
		out[k] = rec
	}
	return out
}

// checkAPI runs the API checks shared by the memory and Redis stores.
func checkAPI(t *testing.T, e *env) {
	published := e.sink.Latest(stream.TopicEstimates)
	if len(published) < len(e.truth) {
		t.Fatalf("%d estimates published for %d objects", len(published), len(e.truth))
	}
	// /v1/objects answers, for every object, the bytes the aggregator
	// published last (EmitInterval 0: the current state's estimate).
	for name := range e.truth {
		body := e.get(t, "/v1/objects?url="+q(name), 200)
		if want := published[name]; !bytes.Equal(bytes.TrimSpace(body), want) {
			t.Fatalf("/v1/objects %s:\n got %s\nwant %s", name, body, want)
		}
	}
	name := "http://site1.example/page/0"
	body := e.get(t, "/v1/objects?url="+q(name)+"&kind=access", 200)
	if want := published[name+aggregate.AccessKeySuffix]; !bytes.Equal(bytes.TrimSpace(body), want) {
		t.Fatalf("access estimate:\n got %s\nwant %s", body, want)
	}
	// A pasted URL is canonicalised like ingest does.
	if got := e.get(t, "/v1/objects?url="+q("HTTP://Site1.EXAMPLE:80/page/0#top"), 200); !bytes.Equal(bytes.TrimSpace(got), published[name]) {
		t.Fatalf("non-canonical URL: got %s", got)
	}

	// /v1/top: the published estimates ranked by their lower bound,
	// checked against a sort of everything the aggregator published.
	est := e.latest(t)
	for _, c := range []struct{ by, site, kind string }{
		{"change_rate", "", records.EstimateChange}, {"change_rate", "site2.example", records.EstimateChange},
		{"access_rate", "", records.EstimateAccess},
	} {
		var want []records.Estimate
		for _, r := range est {
			if r.Kind == c.kind && r.RatePerS != nil && (c.site == "" || r.Site == c.site) {
				want = append(want, r)
			}
		}
		// The lower bound of the 95 % interval, 0 for a change estimate
		// without a detected change (no evidence of change) or without an
		// interval.
		lo := func(r records.Estimate) float64 {
			if r.Kind == records.EstimateChange && r.Changes == 0 || r.CI95 == nil {
				return 0
			}
			return r.CI95[0]
		}
		sort.Slice(want, func(i, j int) bool {
			if lo(want[i]) != lo(want[j]) {
				return lo(want[i]) > lo(want[j])
			}
			return want[i].Object < want[j].Object
		})
		limit := min(5, len(want))
		var got query.TopResult
		if err := json.Unmarshal(e.get(t, fmt.Sprintf("/v1/top?by=%s&site=%s&limit=%d", c.by, c.site, limit), 200), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Objects) != limit || len(got.Ranking) != limit {
			t.Fatalf("top %s %s: %d objects, want %d", c.by, c.site, len(got.Objects), limit)
		}
		for i := range limit {
			if got.Objects[i].Object != want[i].Object || got.Ranking[i].Lower != lo(want[i]) {
				t.Fatalf("top %s %s #%d: %s (lower %g), want %s (lower %g)", c.by, c.site, i, got.Objects[i].Object,
					got.Ranking[i].Lower, want[i].Object, lo(want[i]))
			}
			// The index's record is the published one without its
			// estimators' maps and window (Index.TopRecords).
			w := want[i]
			w.Estimates, w.Intervals, w.Window = nil, nil, nil
			gb, _ := json.Marshal(got.Objects[i])
			wb, _ := json.Marshal(w)
			if !bytes.Equal(gb, wb) {
				t.Fatalf("top %s %s #%d record\n got %s\nwant %s", c.by, c.site, i, gb, wb)
			}
		}
	}

	// /v1/alerts: the published alerts, newest first.
	alerts := e.sink.Messages(stream.TopicAlerts)
	if len(alerts) == 0 {
		t.Fatal("the workload raised no alert")
	}
	var ar struct{ Alerts []json.RawMessage }
	if err := json.Unmarshal(e.get(t, "/v1/alerts?limit=1000", 200), &ar); err != nil {
		t.Fatal(err)
	}
	if len(ar.Alerts) != len(alerts) {
		t.Fatalf("%d alerts served, %d published", len(ar.Alerts), len(alerts))
	}
	for i, a := range ar.Alerts {
		if want := alerts[len(alerts)-1-i].Value; !bytes.Equal(a, want) {
			t.Fatalf("alert %d: got %s, want %s", i, a, want)
		}
	}
	var shift query.TopResult
	if err := json.Unmarshal(e.get(t, "/v1/top?by=shift&limit=3", 200), &shift); err != nil {
		t.Fatal(err)
	}
	if len(shift.Ranking) == 0 || shift.Ranking[0].Lower <= 0 {
		t.Fatalf("by=shift: %+v, want the tenfold access shift with a positive lower bound of ln(ratio)", shift.Ranking)
	}
	// The tenfold rise: ln 10 = 2.30 must be inside the interval of the
	// best-ranked shift (the detector cuts near the change point; a wide
	// tolerance of the interval itself is the check).
	if r := shift.Ranking[0]; !(r.Lower < math.Log(10) && math.Log(10) < r.Upper) {
		t.Errorf("by=shift: interval of ln ratio [%g, %g] does not contain ln 10", r.Lower, r.Upper)
	}
}

func checkPlan(t *testing.T, e *env) {
	est := e.latest(t)
	for _, policy := range query.Policies {
		const budget = 40
		var p query.PlanResult
		if err := json.Unmarshal(e.get(t, "/v1/plan?budget=40&period=24h&policy="+policy, 200), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Visits) == 0 || len(p.Visits) > budget {
			t.Fatalf("%s: %d visits for a budget of %d", policy, len(p.Visits), budget)
		}
		sum := 0.0
		end := p.Start.Add(24 * time.Hour)
		count := map[string]int{}
		for i, v := range p.Visits {
			if v.Due.Before(p.Start) || v.Due.After(end) || !(v.Priority >= 0 && v.Priority <= 1) {
				t.Fatalf("%s: visit %+v outside [%s, %s] or priority outside [0,1]", policy, v, p.Start, end)
			}
			if i > 0 && v.Due.Before(p.Visits[i-1].Due) {
				t.Fatalf("%s: visits not in due order", policy)
			}
			sum += v.Priority
			count[v.Object]++
		}
		if math.Abs(sum-p.ExpectedChangesDetected) > 1e-9*math.Max(1, sum) {
			t.Fatalf("%s: expected_changes_detected %g, sum of priorities %g", policy, p.ExpectedChangesDetected, sum)
		}
		if policy != query.PolicyCGM {
			continue
		}
		// CGM §6.4: visits ∝ √λ; whole visits by largest remainder are
		// within 1 of the exact share (no object is near the bounds:
		// 40 visits a day over 18 objects, MinRevisit 10m).
		if len(p.Visits) != budget {
			t.Fatalf("cgm: %d visits, want the whole budget %d", len(p.Visits), budget)
		}
		sumSqrt := 0.0
		for _, r := range est {
			if r.Kind == records.EstimateChange && r.RatePerS != nil {
				sumSqrt += math.Sqrt(*r.RatePerS)
			}
		}
		for _, r := range est {
			if r.Kind != records.EstimateChange || r.RatePerS == nil {
				continue
			}
			share := budget * math.Sqrt(*r.RatePerS) / sumSqrt
			if d := math.Abs(float64(count[r.Object]) - share); d >= 1 {
				t.Errorf("cgm: %s gets %d visits, √λ share %.2f", r.Object, count[r.Object], share)
			}
		}
	}
	// Malcolm & Armitage: the first visit of each object is its published
	// next_visit (when inside the period).
	var p query.PlanResult
	if err := json.Unmarshal(e.get(t, "/v1/plan?budget=1000&period=48h&policy=malcolm&site=site0.example", 200), &p); err != nil {
		t.Fatal(err)
	}
	first := map[string]time.Time{}
	for _, v := range p.Visits {
		if _, ok := first[v.Object]; !ok {
			first[v.Object] = v.Due
		}
		if !strings.HasPrefix(v.Object, "http://site0.example/") {
			t.Fatalf("site filter: %s", v.Object)
		}
	}
	for name, due := range first {
		if nv := est[name].NextVisit; nv != nil && nv.After(p.Start) && !due.Equal(*nv) {
			t.Errorf("malcolm: %s first due %s, next_visit %s", name, due, nv)
		}
	}
	if len(first) == 0 {
		t.Fatal("malcolm: no visit in 48h")
	}
}

func checkErrors(t *testing.T, e *env) {
	for _, c := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/v1/objects", 400, "url is required"},
		{"/v1/objects?url=" + q("http://nowhere.example/x"), 404, "not found"},
		{"/v1/objects?url=" + q("http://site0.example/page/1") + "&kind=access", 404, "no access estimate"},
		{"/v1/objects?url=" + q("http://site0.example/page/1") + "&kind=both", 400, "kind"},
		{"/v1/objects?url=x&url=y", 400, "given 2 times"},
		{"/v1/objects?url=x&colour=red", 400, "unknown parameter"},
		{"/v1/objects?url=" + q("http://[bad"), 400, "not a URL"},
		{"/v1/top?by=popularity", 400, "by must be"},
		{"/v1/top?limit=0", 400, "limit"},
		{"/v1/top?limit=1001", 400, "limit"},
		{"/v1/plan?budget=-3", 400, "budget"},
		{"/v1/plan?budget=1000000", 400, "budget"},
		{"/v1/plan?period=soon", 400, "period"},
		{"/v1/plan?period=10s", 400, "period"},
		{"/v1/plan?policy=random", 400, "policy"},
		{"/v1/plan?weights=pagerank", 400, "weights"},
		{"/v1/plan?host_cap=-1", 400, "host_cap"},
		{"/v1/plan?start=yesterday", 400, "start"},
		{"/v1/alerts?since=last-week", 400, "since"},
		{"/v1/objects/view", 400, "url"},
		{"/v1/objects?url=" + strings.Repeat("a", 9000), 414, "longer than"},
	} {
		var eb query.ErrorBody
		if err := json.Unmarshal(e.get(t, c.path, c.status), &eb); err != nil {
			t.Fatal(err)
		}
		if eb.Status != c.status || !strings.Contains(eb.Error, c.msg) {
			t.Errorf("%s: %+v, want status %d and %q", c.path[:min(len(c.path), 60)], eb, c.status, c.msg)
		}
	}
}

func newMemoryStore(t *testing.T) *state.Memory {
	m, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAPIMemory: filter/demo mode's store.
func TestAPIMemory(t *testing.T) {
	e := newEnv(t, newMemoryStore(t), query.Config{})
	t.Run("api", func(t *testing.T) { checkAPI(t, e) })
	t.Run("plan", func(t *testing.T) { checkPlan(t, e) })
	t.Run("errors", func(t *testing.T) { checkErrors(t, e) })
	t.Run("view", func(t *testing.T) {
		var v query.ObjectView
		name := "http://site1.example/page/0"
		if err := json.Unmarshal(e.get(t, "/v1/objects/view?url="+q(name), 200), &v); err != nil {
			t.Fatal(err)
		}
		if v.Change == nil || v.Access == nil || v.ChangePlot == nil || v.AccessPlot == nil || len(v.Timeline) < 3 {
			t.Fatalf("view incomplete: %+v", v)
		}
		// The Duane line passes through the centroid, and its slope is
		// the published window's duane_slope.
		p := v.ChangePlot
		if p.Slope == nil || v.Change.Window.DuaneSlope == nil || *p.Slope != *v.Change.Window.DuaneSlope {
			t.Fatalf("plot slope %v, window %v", p.Slope, v.Change.Window.DuaneSlope)
		}
		if y := *p.LogAlpha + *p.Slope*p.Centroid[0]; math.Abs(y-p.Centroid[1]) > 1e-4 {
			t.Errorf("centroid (%g, %g) off the fitted line (y %g)", p.Centroid[0], p.Centroid[1], y)
		}
		if p.Points != v.Change.Window.Points {
			t.Errorf("plot has %d points, window %d", p.Points, v.Change.Window.Points)
		}
	})
}

// TestAPIRedis: service mode's store, a real redis-server.
func TestAPIRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("redis-server test")
	}
	rs := redistest.Start(t)
	store, err := state.NewRedis(state.RedisConfig{Addrs: []string{rs.Addr}, KeyPrefix: "q:"}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := newEnv(t, store, query.Config{})
	t.Run("api", func(t *testing.T) { checkAPI(t, e) })
	t.Run("errors", func(t *testing.T) { checkErrors(t, e) })
	// Redis down: /v1/objects is 503 with a generic reason and
	// Retry-After, not the client's dial error (TestAPIDependencyUnavailable
	// checks the log); /v1/top answers from the index as before (issue 32).
	t.Run("redis down", func(t *testing.T) {
		before := e.get(t, "/v1/top?limit=3", http.StatusOK)
		rs.Kill()
		if after := e.get(t, "/v1/top?limit=3", http.StatusOK); !bytes.Equal(after, before) {
			t.Errorf("/v1/top with Redis down:\n%s\nwith Redis up:\n%s", after, before)
		}
		for _, path := range []string{"/v1/objects?url=" + q("http://site0.example/page/1")} {
			header, body := e.fetch(t, path, http.StatusServiceUnavailable)
			var eb query.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatal(err)
			}
			if eb.Error != "state store unavailable, retry later" || header.Get("Retry-After") == "" {
				t.Errorf("%s: %s (Retry-After %q), want the generic reason and Retry-After", path, body, header.Get("Retry-After"))
			}
		}
	})
}

func TestIndexBounded(t *testing.T) {
	idx := query.NewIndex(query.IndexConfig{MaxObjects: 10})
	for i := range 25 {
		r := float64(i + 1)
		idx.AddEstimate(&records.Estimate{Object: fmt.Sprintf("http://a.example/%d", i), Site: "a.example", Kind: "change",
			AsOf: t0, RatePerS: &r, CI95: &[2]float64{r / 2, r * 2}, Changes: 3})
	}
	if idx.Len() != 10 || idx.Evicted() != 15 {
		t.Fatalf("len %d evicted %d, want 10 and 15", idx.Len(), idx.Evicted())
	}
	top := idx.Top(query.ByChangeRate, "a.example", 3)
	if len(top) != 3 || top[0].Object != "http://a.example/24" || top[2].Object != "http://a.example/22" {
		t.Fatalf("top after eviction: %+v", top)
	}
	if s := idx.Sites(5); len(s) != 1 || s[0].Objects != 10 {
		t.Fatalf("sites %+v", s)
	}
}

// TestIndexEvictsLeastRecentlyUpdated: an update makes an object the most
// recent, so the one updated longest ago is evicted first.
func TestIndexEvictsLeastRecentlyUpdated(t *testing.T) {
	idx := query.NewIndex(query.IndexConfig{MaxObjects: 3})
	add := func(name string, r float64) {
		idx.AddEstimate(&records.Estimate{Object: "http://a.example/" + name, Site: "a.example", Kind: "change",
			AsOf: t0, RatePerS: &r, CI95: &[2]float64{r / 2, 2 * r}, Changes: 1})
	}
	add("a", 1)
	add("b", 2)
	add("c", 3)
	add("a", 4) // a is now the most recent; b the least
	add("d", 5)
	add("e", 6) // evicts c
	var got []string
	for _, r := range idx.Top(query.ByChangeRate, "a.example", 10) {
		got = append(got, strings.TrimPrefix(r.Object, "http://a.example/"))
	}
	if strings.Join(got, ",") != "e,d,a" || idx.Evicted() != 2 {
		t.Fatalf("objects after eviction %v (evicted %d), want e,d,a (2)", got, idx.Evicted())
	}
}
