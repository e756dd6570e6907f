package main

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// TestPublishTimes: an alert is published at the first request at or after
// its testing period's end, and at the end of the input (+Inf) when none
// comes.
func TestPublishTimes(t *testing.T) {
	w := &world{evs: []sim.Event{{T: 100}, {T: 3599}, {T: 3600}, {T: 7300}}}
	ps := func(s int64) *time.Time { u := time.Unix(s, 0); return &u }
	as := make([]records.Alert, 4)
	for i, s := range []int64{0, 3600, 7200} {
		as[i].PeriodStart = ps(s)
	}
	got := w.publish(as, time.Hour)
	for i, want := range []float64{3600, 7300, math.Inf(1), math.Inf(1)} {
		if got[i].At != want {
			t.Errorf("alert %d published at %v, want %v", i, got[i].At, want)
		}
	}
}

// TestRunSmallWorld: a small world through the Processor: nothing dead-
// lettered, and its scores are consistent (every caught burst is a burst,
// every alerted quiet object a quiet one, the oracle's bursts among the
// bursts).
func TestRunSmallWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	sc := sim.AlertWorld{Seed: 3, Objects: 8, Sites: 2, Days: 10, RateLo: 30, RateHi: 60, BurstFactor: 4, LearnDays: 7}
	w := newWorld(sc)
	r, err := scoreWorld(context.Background(), w, aggregate.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Quiet+r.Bursts != sc.Objects || r.Caught > r.Bursts || r.QuietAlerted > r.Quiet || r.CaughtOracle > r.Detectable || r.Detectable > r.Bursts {
		t.Errorf("inconsistent scores: %+v", r)
	}
	if r.Caught == 0 {
		t.Errorf("no burst of %d caught: bursts of 4× at 30–60 requests an hour are far beyond the scan's threshold", r.Bursts)
	}
}
