package aggregate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// trendLog is a git log of n files (changes-tsv paths) whose population
// was edited three times as much in 2019 and 2020 as in 2021 (estimators/
// trend.go T1: g = 3, 3, 1): each file's first event falls in 2019–2020,
// its current rate λ ~ Gamma(shape, shape·100 days) (mean one change in
// 100 days at g = 1), its changes a Poisson process of rate λ·g(t) up to
// the end of 2021, the training year. It returns the log, each file's
// count in 2021 and its exposure there, its count in 2022
// (y ~ Poisson(λ·year), g = 1) and the log's latest event time.
func trendLog(seed uint64, n int, shape float64) (in []byte, train map[string]int, exp, next map[string]float64, end time.Time) {
	const day = 86400.0
	y19 := float64(time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	y21 := float64(time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	y22 := float64(time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	r := rand.New(rand.NewPCG(seed, 33))
	train, exp, next = map[string]int{}, map[string]float64{}, map[string]float64{}
	type ev struct {
		t    float64
		name string
	}
	var evs []ev
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("en/reference/t%04d.xml", i)
		l := sim.Gamma(r, shape) / (shape * 100 * day)
		s := y19 + r.Float64()*(y21-y19)
		evs = append(evs, ev{s, name})
		for _, seg := range [][3]float64{{s, y21, 3}, {y21, y22, 1}} {
			for t := seg[0] + r.ExpFloat64()/(l*seg[2]); t < seg[1]; t += r.ExpFloat64() / (l * seg[2]) {
				evs = append(evs, ev{t, name})
				if seg[2] == 1 {
					train[name]++
				}
			}
		}
		exp[name] = y22 - y21
		for t := r.ExpFloat64() / l; t <= 365*day; t += r.ExpFloat64() / l {
			next[name]++
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		o := records.Observation{Object: e.name, Time: time.Unix(0, 0).Add(time.Duration(math.Round(e.t)) * time.Second).UTC(),
			Kind: records.KindChange, Changed: records.Changed, Format: "changes-tsv"}
		if err := enc.Encode(o); err != nil {
			panic(err)
		}
	}
	last := evs[len(evs)-1].t
	return buf.Bytes(), train, exp, next, time.Unix(int64(math.Round(last)), 0).UTC()
}

// TestHostlessPopulationTrend: known truth (2,000 files, g = 3, 3, 1 over
// 2019–2021, rates Gamma(0.6)), scored on 2022 by Poisson deviance in the
// buckets of changes seen in the training year 2021, as
// docs/eval/NEXTYEAR.md does: the published estimate of the files seen
// not to change is below one global rate's (the population's 2021 changes
// over its 2021 exposure), of those seen 1–4 times below naive's (their
// 2021 count over 2021), and for both below the same objects' estimate
// without the trend (the conjugate rules on the plain exposure T under the
// stored prior: (α + N)/(β + T) below 5 changes, (N + ½)/(T + τ₀) from
// 5); every file with a rate publishes pooled (T7), those with 5 or more
// changes too. The stored
// object and site states rebuild every record byte for byte (the query
// API's path), and a replay stores the same trend.
func TestHostlessPopulationTrend(t *testing.T) {
	const shape, year = 0.6, 365 * 86400.0
	in, train, exp, next, end := trendLog(5, 2000, shape)
	cfg := DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	run := runHostless(t, cfg, in)
	names, recs := run.names, run.recs
	site, asOf := &run.site, run.asOf
	if !asOf.Equal(end) {
		t.Errorf("stored as-of %s, want %s", asOf, end)
	}
	tv := site.Trend.At(seconds(asOf.UnixMilli()))
	prior, ok := site.Pool.PriorAt(seconds(asOf.UnixMilli()))
	if !tv.Ok || !ok {
		t.Fatalf("stored trend %v, prior %v", tv.Ok, ok)
	}
	var sumY, sumE float64
	for _, n := range names {
		sumY += float64(train[n])
		sumE += exp[n]
	}
	global := sumY / sumE
	type row struct{ pub, plain, ref float64 }
	var dev [2]row
	var cnt [2]int
	many, trended := 0, 0
	for _, n := range names {
		e := recs[n]
		if e.RatePerS == nil {
			continue
		}
		if e.Changes >= estimators.PooledMaxChanges {
			many++
			if e.Estimator == estimators.KeyPooled {
				trended++
			}
		}
		b := 1
		switch {
		case train[n] == 0:
			b = 0
		case train[n] >= 5:
			continue
		}
		// The plain exposure T from the naive rate N/T (N ≥ 1 for every
		// file here but those with a single event, which have no rate).
		naive := e.Estimates[estimators.KeyNaive]
		if e.Changes == 0 || !(naive > 0) {
			continue
		}
		T := float64(e.Changes) / naive
		var plain float64
		if e.Changes < estimators.PooledMaxChanges {
			plain = (prior.Shape + float64(e.Changes)) / (prior.Rate + T)
		} else {
			plain = (float64(e.Changes) + estimators.EventPriorShape) / (T + cfg.Model.Estimators.EventPriorExposure)
		}
		ref := global
		if b == 1 {
			ref = float64(train[n]) / exp[n]
		}
		y := int(next[n])
		cnt[b]++
		dev[b].pub += poissonDev(y, *e.RatePerS*year)
		dev[b].plain += poissonDev(y, plain*year)
		dev[b].ref += poissonDev(y, ref*year)
	}
	t.Logf("level %.2f changes a year (true mean %.2f), ρ %.3f; bucket 0: %d files, published ÷ global %.3f, without the trend %.3f; bucket 1–4: %d files, published ÷ naive %.3f, without the trend %.3f; %d of %d files with ≥ 5 changes publish pooled",
		tv.Level*year, 3.65, tv.Rho, cnt[0], dev[0].pub/dev[0].ref, dev[0].plain/dev[0].ref, cnt[1], dev[1].pub/dev[1].ref, dev[1].plain/dev[1].ref, trended, many)
	if cnt[0] < 100 || cnt[1] < 100 {
		t.Fatalf("too few files in the buckets: %v", cnt)
	}
	for b, name := range []string{"0 (÷ global)", "1–4 (÷ naive)"} {
		if r := dev[b].pub / dev[b].ref; !(r < 1) {
			t.Errorf("bucket %s: published deviance %.3f, want < 1", name, r)
		}
		if !(dev[b].pub < dev[b].plain) {
			t.Errorf("bucket %s: published deviance %.1f, without the trend %.1f: want lower", name, dev[b].pub, dev[b].plain)
		}
	}
	if many == 0 || float64(trended) < 0.8*float64(many) {
		t.Errorf("pooled published for %d of %d files with ≥ 5 changes", trended, many)
	}
	// The stored states rebuild the records (the query API's path).
	run.checkRebuilt(t, &cfg.Model)
	run.checkReplay(t, cfg, in)
}

// TestHostlessTrendOldStore: a store written before the trend existed
// decodes with an empty one, and the complete histories stored then never
// enter it (trendComplete). Replayed through a Detector, a log whose
// trend is wiped halfway (the upgrade) keeps the earlier rule — files with
// 5 or more changes publish poisson_events, not pooled — while the same
// log without the wipe publishes pooled on the trend.
func TestHostlessTrendOldStore(t *testing.T) {
	in, _, _, _, end := trendLog(7, 600, 0.6)
	var obs []records.Observation
	dec := json.NewDecoder(bytes.NewReader(in))
	for dec.More() {
		var o records.Observation
		if err := dec.Decode(&o); err != nil {
			t.Fatal(err)
		}
		obs = append(obs, o)
	}
	for _, wipe := range []bool{false, true} {
		m := DefaultModel()
		det := NewDetector(&m)
		objs := map[string]*Object{}
		var eff Effects
		for i := range obs {
			if wipe && i == len(obs)/2 {
				det.Site("").Trend = estimators.Trend{}
			}
			o := objs[obs[i].Object]
			if o == nil {
				o = &Object{}
				objs[obs[i].Object] = o
			}
			eff.Reset()
			det.Apply(obs[i].Object, o, &obs[i], &eff)
		}
		site := det.Site("")
		many, pooled := 0, 0
		for name, o := range objs {
			if o.Change.Changes() < estimators.PooledMaxChanges {
				continue
			}
			var es estimators.Estimates
			var view SiteState
			rec, ok := o.ChangeEstimateAsOf(name, &m, PriorView("", &m, site, &view), end, &es)
			if !ok {
				t.Fatalf("%s: no estimate", name)
			}
			many++
			if rec.Estimator == estimators.KeyPooled {
				pooled++
			}
		}
		t.Logf("wiped %v: trend objects %.0f of %.0f histories; %d of %d files with ≥ 5 changes publish pooled", wipe, site.Trend.Objects, site.Pool.ON, pooled, many)
		if many == 0 || wipe && pooled != 0 || !wipe && float64(pooled) < 0.8*float64(many) {
			t.Errorf("wiped %v: pooled for %d of %d files with ≥ 5 changes", wipe, pooled, many)
		}
	}
}
