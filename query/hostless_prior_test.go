package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestHostlessPriorRebuilt: objects without a host (a git log's paths,
// changes-tsv) publish the pooled estimate under the prior of their
// partition's hostless population (aggregate.PriorOnly, stored under
// aggregate.SiteKeyPrefix); the query API's estimate path (load: the
// object's, its population's and the partition's stored states; estimates)
// rebuilds the aggregator's final records (--emit=final: every record
// with the prior as of the end of the input) byte for byte, for every
// object.
func TestHostlessPriorRebuilt(t *testing.T) {
	const day = 86400.0
	r := rand.New(rand.NewPCG(3, 31))
	type ev struct {
		t    float64
		name string
	}
	var evs []ev
	for i := 0; i < 60; i++ {
		name := fmt.Sprintf("en/reference/f%02d.xml", i)
		l := (0.2 + 2*r.Float64()) / (100 * day)
		s := r.Float64() * 300 * day
		evs = append(evs, ev{s, name})
		for x := s + r.ExpFloat64()/l; x <= 700*day; x += r.ExpFloat64() / l {
			evs = append(evs, ev{x, name})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		o := records.Observation{Object: e.name, Time: t0.Add(time.Duration(e.t) * time.Second), Kind: records.KindChange,
			Changed: records.Changed, Format: "changes-tsv"}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := aggregate.DefaultConfig()
	cfg.Emit, cfg.MaxFuture, cfg.CacheObjects, cfg.CacheBytes = aggregate.EmitFinal, 0, 0, 0
	s, _, mem := filterRun(t, cfg, buf.Bytes())
	pooled := 0
	for k, want := range mem.Latest(stream.TopicEstimates) {
		var pub records.Estimate
		if err := json.Unmarshal(want, &pub); err != nil {
			t.Fatal(err)
		}
		if pub.Kind != records.EstimateChange {
			continue
		}
		if pub.Estimator == estimators.KeyPooled {
			pooled++
		}
		change, site, err := s.RebuiltChange(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if !site {
			t.Fatalf("%s: the hostless population's prior was not loaded", k)
		}
		got, err := json.Marshal(change)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: rebuilt\n%s\npublished\n%s", k, got, want)
		}
	}
	// 60 files over up to 700 days at 0.2–2.2 changes in 100 days: about
	// a fifth have fewer than 5 changes (the test checks there are some).
	if pooled < 3 {
		t.Fatalf("only %d pooled estimates: the hostless prior is not published", pooled)
	}
	t.Logf("%d pooled estimates rebuilt", pooled)
}
