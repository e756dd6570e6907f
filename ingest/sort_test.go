package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TestSortingSink: observations written in any order, over a memory budget
// that forces spills, come out sorted by event time (ties by object, then
// source offset), keyed by object; dead letters pass through at once.
func TestSortingSink(t *testing.T) {
	mem := stream.NewMemorySink()
	s := NewSortingSink(mem, "obs", 2048, t.TempDir(), 7)
	defer s.Close()
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 500
	for _, i := range r.Perm(n) {
		o := records.Observation{Object: fmt.Sprintf("http://a.example/%d", i%7), Time: t0.Add(time.Duration(i/3) * time.Second),
			Kind: records.KindAccess, Source: "/log@1", Offset: int64(i + 1)}
		v, _ := records.AppendObservationJSON(nil, &o)
		if err := s.Write(context.Background(), stream.Message{Topic: "obs", Key: []byte(o.Object), Value: v},
			stream.Message{Topic: "dl", Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(mem.Messages("dl")); got != n {
		t.Fatalf("%d dead letters passed through before Flush, want %d", got, n)
	}
	if len(mem.Messages("obs")) != 0 || s.Runs() == 0 {
		t.Fatalf("observations written before Flush (%d), or no spill (%d runs)", len(mem.Messages("obs")), s.Runs())
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := mem.Messages("obs")
	if len(out) != n {
		t.Fatalf("%d observations out, want %d", len(out), n)
	}
	var prev records.Observation
	for i, m := range out {
		var o records.Observation
		if err := json.Unmarshal(m.Value, &o); err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != o.Object {
			t.Fatalf("message %d: key %q, object %q", i, m.Key, o.Object)
		}
		if i > 0 {
			c := o.Time.Compare(prev.Time)
			if c < 0 || c == 0 && (o.Object < prev.Object || o.Object == prev.Object && o.Offset < prev.Offset) {
				t.Fatalf("message %d out of order: %+v after %+v", i, o, prev)
			}
		}
		prev = o
	}
}
