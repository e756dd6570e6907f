package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

var updatePages = flag.Bool("update-pages", false, "rewrite testdata/*.golden.html")

// pageEnv is an aggregator that consumed a small fixed log, with the
// pages over its state:
//   - http://a.example/x: visited hourly for a day, changing every other
//     visit (a change rate, a TTL);
//   - http://b.example/x and /y: visited twice, unchanged (change estimates
//     without a best rate, as most objects of a crawl log seen once or
//     twice);
//   - http://c.example/z: accesses only.
func pageEnv(t *testing.T, extra ...records.Observation) *env {
	t.Helper()
	obs := append([]records.Observation(nil), extra...)
	visit := func(obj string, at time.Duration, digest string) {
		obs = append(obs, records.Observation{Object: obj, Time: t0.Add(at), Kind: records.KindVisit, Digest: digest, Format: "jsonl"})
	}
	for h := 0; h < 24; h++ {
		visit("http://a.example/x", time.Duration(h)*time.Hour, fmt.Sprintf("sha1:%d", h/2))
	}
	for _, p := range []string{"x", "y"} {
		visit("http://b.example/"+p, 10*time.Minute, "sha1:b")
		visit("http://b.example/"+p, 20*time.Minute, "sha1:b")
	}
	for i := 0; i < 5; i++ {
		obs = append(obs, records.Observation{Object: "http://c.example/z", Time: t0.Add(time.Duration(i) * 7 * time.Minute),
			Kind: records.KindAccess, Format: "jsonl"})
	}
	sortObs(obs)
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	for _, o := range obs {
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.DiscardHandler)
	cfg := aggregate.DefaultConfig()
	cfg.Model.EmitInterval = 0
	cfg.Model.Seasonal.LearningPeriod = 0
	cfg.ReorderWindow = time.Hour
	cfg.MaxFuture = 0
	store := newMemoryStore(t)
	idx := query.NewIndex(query.IndexConfig{})
	tee := query.NewTeeSink(stream.NewMemorySink(), idx, cfg.EstimatesTopic, cfg.AlertsTopic, logger)
	proc, err := aggregate.NewProcessor(cfg, store, tee, logger, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.NewReaderSource(stream.TopicObservations, &log, 0).Run(context.Background(), proc.Handle); err != nil {
		t.Fatal(err)
	}
	qs, err := query.NewServer(query.Config{}, store, query.SinglePartition{Topic: stream.TopicObservations}, cfg.Model, idx, logger)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, qs)
}

func sortObs(obs []records.Observation) {
	for i := 1; i < len(obs); i++ {
		for j := i; j > 0 && obs[j].Time.Before(obs[j-1].Time); j-- {
			obs[j], obs[j-1] = obs[j-1], obs[j]
		}
	}
}

// TestPages: what the overview and the object page say (and in what
// content type) for the cases the QA pass on real logs found unexplained:
// sites none of whose objects has a change rate (an empty list read
// "None."), more sites than listed (no note), an object without a TTL
// ("– s"), a URL typed without a scheme (object not found, no hint), and
// the lookup errors (HTML, as docs/api.md says). Golden files hold the
// whole pages (go test ./query -run TestPages -update-pages rewrites them).
func TestPages(t *testing.T) {
	e := pageEnv(t)
	for _, c := range []struct {
		name, path string
		status     int
		html       bool     // text/html, else text/plain
		want, not  []string // substrings of the body
		golden     string   // testdata file of the whole body
	}{
		{"overview", "/", 200, true,
			[]string{"<h3 class=\"site\">b.example <span class=\"muted\">(2 objects, 0 with a change rate)</span></h3>\n\n" +
				"<p class=\"muted no-rate\">None of its 2 objects has a change rate yet: too few visits or no change detected",
				"(1 objects, 0 with a change rate)", "(1 objects, 1 with a change rate)"},
			[]string{"Showing"}, "overview.golden.html"},
		{"overview, fewer sites than indexed", "/?sites=2", 200, true,
			[]string{`Showing 2 of 3 sites (most objects first). <a href="/?sites=3" id="more-sites">Show 3 sites</a>.`, "4 objects indexed"},
			[]string{`<h3 class="site">c.example`}, ""},
		{"overview, sites not a number", "/?sites=x", 400, false, []string{"sites must be an integer in [1, 1000]"}, nil, ""},
		{"overview, unknown parameter", "/?limit=3", 400, false, []string{`unknown parameter "limit"`}, nil, ""},
		{"object with a rate", "/objects?url=" + q("http://a.example/x"), 200, true,
			[]string{`<span id="ttl" data-seconds="`, `one change every <span id="change-rate" data-rate-per-s="`, `<svg id="duane-change"`},
			[]string{"–</span> s", "has no scheme", "rate /s", "No Duane plot"}, ""},
		{"object without a rate or TTL", "/objects?url=" + q("http://b.example/x"), 200, true,
			[]string{`<dd><span id="ttl">–</span></dd>`, `<span id="change-rate">–</span> <span class="muted">(none yet`},
			[]string{"–</span> s", "one change every )"}, "object-no-rate.golden.html"},
		{"object typed without a scheme", "/objects?url=" + q("b.example/x"), 200, true,
			[]string{`<h2 id="object">http://b.example/x</h2>`,
				`“b.example/x” has no scheme: showing <a href="/objects?url=http%3A%2F%2Fb.example%2Fx">http://b.example/x</a>.`},
			[]string{"Canonical form of"}, ""},
		{"unknown object typed without a scheme", "/objects?url=" + q("nowhere.example/"), 404, true,
			[]string{"object not found", `“nowhere.example/” has no scheme: looked up <a href="/objects?url=http%3A%2F%2Fnowhere.example%2F">http://nowhere.example/</a>.`},
			nil, ""},
		{"unknown object", "/objects?url=" + q("http://nowhere.example/x"), 404, true,
			[]string{`<p class="error" id="error">object not found`, `value="http://nowhere.example/x"`}, []string{"has no scheme"}, ""},
		{"no url", "/objects", 400, true, []string{`<p class="error" id="error">parameter url is required (or object, a name exactly as ingest recorded it)</p>`}, nil, ""},
		{"not a URL", "/objects?url=" + q("http://[bad"), 400, true, []string{`<p class="error" id="error">url &#34;http://[bad&#34; is not a URL`}, nil, ""},
		{"unknown page", "/nowhere", 404, false, []string{"404 page not found"}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := raw(t, e, http.MethodGet, c.path)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			ct, wantCT := resp.Header.Get("Content-Type"), "text/plain"
			if c.html {
				wantCT = "text/html"
			}
			if !strings.HasPrefix(ct, wantCT) {
				t.Errorf("Content-Type %q, want %s", ct, wantCT)
			}
			for _, w := range c.want {
				if !bytes.Contains(body, []byte(w)) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range c.not {
				if bytes.Contains(body, []byte(w)) {
					t.Errorf("the page has %q", w)
				}
			}
			if c.golden == "" {
				return
			}
			path := filepath.Join("testdata", c.golden)
			if *updatePages {
				if err := os.WriteFile(path, body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./query -run TestPages -update-pages writes it)", err)
			}
			if !bytes.Equal(body, want) {
				t.Errorf("the page differs from %s (-update-pages rewrites it):\n%s", path, body)
			}
		})
	}
}
