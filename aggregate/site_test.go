package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// seasonalLog encodes the scenario's events as JSON observation lines.
func seasonalLog(t *testing.T, evs []simEvent, names, sites []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		o := records.Observation{Object: names[e.obj], Site: sites[e.obj], Kind: records.KindAccess,
			Time: time.UnixMilli(int64(math.Round(e.t * 1000))).UTC(), Format: "jsonl"}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestProcessorSeasonalAlerts runs a seasonal scenario through the
// Processor (memory store, small batches): its alerts are those of the
// detector run in process (batching changes nothing), they use the seasonal
// baseline, and the sites' profiles are stored beside the objects. A
// second run split in two Processors over the same store (a restart at an
// arbitrary offset) stores the same profiles as the single run.
func TestProcessorSeasonalAlerts(t *testing.T) {
	sc := seasonalScenario{Seed: 3, Objects: 8, Sites: 2, Days: 10, RateLo: 30, RateHi: 60, BurstFactor: 4, LearnDays: 7}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	evs, _, names, sites := sc.generate(start)
	in := seasonalLog(t, evs, names, sites)
	cfg := DefaultConfig()
	cfg.BatchSize = 997
	st := newMemory(t)
	p, sink := newTestProcessor(t, cfg, st)
	runReader(t, p, in)

	var got []records.Alert
	for _, m := range sink.Messages(cfg.AlertsTopic) {
		var a records.Alert
		if err := json.Unmarshal(m.Value, &a); err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != AlertKey(&a) {
			t.Errorf("alert key %q, want %q", m.Key, AlertKey(&a))
		}
		got = append(got, a)
	}
	model := cfg.Model
	var want []records.Alert
	for _, pa := range runDetector(evs, names, sites, &model) {
		want = append(want, pa.a)
	}
	if len(want) == 0 {
		t.Fatal("the in-process detector raised no alert: the scenario tests nothing")
	}
	// JSON round trip of want, to compare like with like
	var wantJ []records.Alert
	for _, a := range want {
		b, _ := json.Marshal(a)
		var x records.Alert
		_ = json.Unmarshal(b, &x)
		wantJ = append(wantJ, x)
	}
	if !reflect.DeepEqual(got, wantJ) {
		t.Errorf("processor alerts differ from the detector's: %d vs %d records", len(got), len(wantJ))
	}
	for _, a := range got {
		if a.Baseline != "seasonal" || a.PAdjusted == nil || a.Severity == "" {
			t.Errorf("alert without seasonal baseline, adjusted p-value or severity: %+v", a.AlertDetail)
		}
	}

	snap, err := st.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: 0})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < sc.Sites; s++ {
		v, ok := snap.Objects[SiteKeyPrefix+sites[s]]
		if !ok {
			t.Fatalf("no stored profile of %s", sites[s])
		}
		var st SiteState
		if err := st.DecodeBinary(v); err != nil || !st.Access.Active() {
			t.Fatalf("stored profile of %s: active %v, %v", sites[s], st.Access.Active(), err)
		}
	}

	// restart half way through
	st2 := newMemory(t)
	cut := bytes.Index(in[len(in)/2:], []byte("\n")) + len(in)/2 + 1
	p1, _ := newTestProcessor(t, cfg, st2)
	runReader(t, p1, in[:cut])
	p2, _ := newTestProcessor(t, cfg, st2)
	src := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0)
	if err := src.Run(context.Background(), p2.Handle); err != nil { // resumes at the stored offset
		t.Fatal(err)
	}
	snap2, err := st2.Snapshot(context.Background(), state.Partition{Topic: stream.TopicObservations, ID: 0})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < sc.Sites; s++ {
		k := SiteKeyPrefix + sites[s]
		if !bytes.Equal(snap.Objects[k], snap2.Objects[k]) {
			t.Errorf("profile of %s after a restart differs from the single run's", sites[s])
		}
	}
}
