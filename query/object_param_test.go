package query_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestObjectParameter: an object whose name is not a URL (a git log's
// path, changes-tsv) is served by /v1/objects?object=NAME with the record
// the aggregator published for it, and its view by /v1/objects/view;
// url= refuses it (no host), and url with object is a 400.
func TestObjectParameter(t *testing.T) {
	const name = "en/reference/array/functions/array-map.xml"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, d := range []int{0, 30, 75, 140, 200, 260, 330} {
		o := records.Observation{Object: name, Time: t0.AddDate(0, 0, d), Kind: records.KindChange,
			Changed: records.Changed, Format: "changes-tsv"}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := aggregate.DefaultConfig()
	cfg.Emit, cfg.MaxFuture, cfg.CacheObjects, cfg.CacheBytes = aggregate.EmitFinal, 0, 0, 0
	_, e, mem := filterRun(t, cfg, buf.Bytes())

	var want []byte
	for _, v := range mem.Latest(stream.TopicEstimates) {
		var rec records.Estimate
		if err := json.Unmarshal(v, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Object == name && rec.Kind == records.EstimateChange {
			want = v
		}
	}
	if want == nil {
		t.Fatal("the aggregator published no change estimate for the path")
	}
	got := e.get(t, "/v1/objects?object="+url.QueryEscape(name), http.StatusOK)
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Errorf("/v1/objects?object= answered\n%s\nthe aggregator published\n%s", got, want)
	}
	var view query.ObjectView
	if err := json.Unmarshal(e.get(t, "/v1/objects/view?object="+url.QueryEscape(name), http.StatusOK), &view); err != nil {
		t.Fatal(err)
	}
	if view.Object != name || view.Change == nil {
		t.Errorf("view of %q: object %q, change estimate %v", name, view.Object, view.Change != nil)
	}
	e.get(t, "/v1/objects?url="+url.QueryEscape(name), http.StatusBadRequest)
	e.get(t, "/v1/objects?url=http%3A%2F%2Fexample.org%2F&object="+url.QueryEscape(name), http.StatusBadRequest)
	e.get(t, "/v1/objects?object="+url.QueryEscape("en/reference/nothing-here.xml"), http.StatusNotFound)
}
