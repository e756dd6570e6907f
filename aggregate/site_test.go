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
		o := records.Observation{Object: names[e.Obj], Site: sites[e.Obj], Kind: records.KindAccess,
			Time: time.UnixMilli(int64(math.Round(e.T * 1000))).UTC(), Format: "jsonl"}
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
	evs, _, names, sites := sc.Generate(start)
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
		want = append(want, pa.Alert)
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

	// restart just after the first alert's shift was confirmed, so that
	// its candidate is held in the open period at the restart
	st2 := newMemory(t)
	var det time.Time
	for _, a := range got {
		if a.WindowEnd != nil && (det.IsZero() || a.WindowEnd.Before(det)) {
			det = *a.WindowEnd
		}
	}
	cut := 0
	for i, e := range evs {
		// (+1 s: WindowEnd is Λ⁻¹(Λ(t)), within milliseconds of the
		// confirming point's t)
		if float64(det.UnixMilli())/1e3+1 < e.T {
			cut = bytes.Index(in, seasonalLog(t, evs[i:i+1], names, sites))
			break
		}
	}
	if cut <= 0 {
		t.Fatal("no restart point")
	}
	p1, sink1 := newTestProcessor(t, cfg, st2)
	runReader(t, p1, in[:cut])
	p2, sink2 := newTestProcessor(t, cfg, st2)
	src := stream.NewReaderSource(stream.TopicObservations, bytes.NewReader(in), 0)
	if err := src.Run(context.Background(), p2.Handle); err != nil { // resumes at the stored offset
		t.Fatal(err)
	}
	// The alerts of the two runs are those of the single run: the open
	// period's candidates were committed in the alert book (the first run's
	// end of input also published them early, at least once).
	ident := func(msgs ...[]stream.Message) map[string]bool {
		m := map[string]bool{}
		for _, ms := range msgs {
			for _, msg := range ms {
				var a records.Alert
				if err := json.Unmarshal(msg.Value, &a); err != nil {
					t.Fatal(err)
				}
				ws := ""
				if a.WindowStart != nil {
					ws = a.WindowStart.String()
				}
				m[AlertKey(&a)+" "+a.Test+" "+ws] = true
			}
		}
		return m
	}
	one := ident(sink.Messages(cfg.AlertsTopic))
	two := ident(sink1.Messages(cfg.AlertsTopic), sink2.Messages(cfg.AlertsTopic))
	if !reflect.DeepEqual(one, two) {
		t.Errorf("alerts with a restart differ from the single run's: %d vs %d distinct", len(two), len(one))
	}
	// and the second run alone publishes the held candidate (read from
	// the stored alert book) when its period closes
	after := ident(sink2.Messages(cfg.AlertsTopic))
	held := 0
	for k := range one {
		if !after[k] {
			continue
		}
		held++
	}
	first := ident(sink1.Messages(cfg.AlertsTopic))
	for k := range first {
		if !after[k] && len(first) > 0 && !one[k] {
			t.Errorf("alert %s of the first run is not the single run's", k)
		}
	}
	if held == 0 || !containsAll(after, first) {
		t.Errorf("the second run did not publish the candidates held at the restart: %d of the first run's %d", held, len(first))
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

// containsAll reports whether every key of b is in a.
func containsAll(a, b map[string]bool) bool {
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}
