package aggregate

import (
	"bytes"
	"context"
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
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// hostlessLog is a git log of n files (changes-tsv paths, no host) as
// observations in time order: each file's first event falls in the first
// two years, its rate λ ~ Gamma(shape, shape·100 days) (mean one change in
// 100 days), and it changes as a Poisson process up to the end of the
// third year. It returns the log, each file's rate, its count in the
// following year (y ~ Poisson(λ·year)) and the log's latest event time.
func hostlessLog(seed uint64, n int, shape float64) ([]byte, map[string]float64, map[string]int, time.Time) {
	const day, year = 86400.0, 365 * 86400.0
	r := rand.New(rand.NewPCG(seed, 31))
	truth, next := map[string]float64{}, map[string]int{}
	type ev struct {
		t    float64
		name string
	}
	var evs []ev
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("en/reference/f%04d.xml", i)
		l := sim.Gamma(r, shape) / (shape * 100 * day)
		truth[name] = l
		s := r.Float64() * 2 * year
		evs = append(evs, ev{s, name})
		for t := s + r.ExpFloat64()/l; t <= 3*year; t += r.ExpFloat64() / l {
			evs = append(evs, ev{t, name})
		}
		for t := r.ExpFloat64() / l; t <= year; t += r.ExpFloat64() / l {
			next[name]++
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range evs {
		o := records.Observation{Object: e.name, Time: t0.Add(time.Duration(math.Round(e.t)) * time.Second),
			Kind: records.KindChange, Changed: records.Changed, Format: "changes-tsv"}
		if err := enc.Encode(o); err != nil {
			panic(err)
		}
	}
	last := evs[len(evs)-1].t
	return buf.Bytes(), truth, next, t0.Add(time.Duration(math.Round(last)) * time.Second)
}

// poissonDev is the Poisson deviance of a count y under the mean mu.
func poissonDev(y int, mu float64) float64 {
	d := mu - float64(y)
	if y > 0 {
		d += float64(y) * math.Log(float64(y)/mu)
	}
	return 2 * d
}

// TestHostlessPopulationPrior: complete histories without a host (a git
// log's paths) publish, with fewer than estimators.PooledMaxChanges
// changes, the pooled estimate under the prior of the partition's
// hostless objects (site "", stored under SiteKeyPrefix), whose evidence
// runs to the end of the log (PoolStats.PriorAt). Known truth (rates
// Gamma(0.6), 1500 files): on the next year, the files seen to change 0
// times have a lower mean Poisson deviance than one global rate (the
// files' total changes over their total exposure), and those seen 1–4
// times lower than naive (N/T); the stored prior's mean is the true mean
// within 3 of its standard errors. The stored object, site and as-of
// states rebuild every published record byte for byte (the query API's
// path, ChangeEstimateAsOf), and a second run of the input stores the same
// prior and publishes the same records. The log's 3,000 or so changes a
// year give the population a trend (estimators/trend.go): files with 5 or
// more changes publish pooled too, on it, apart from a few that follow
// their change window (below a tenth).
func TestHostlessPopulationPrior(t *testing.T) {
	const shape, year = 0.6, 365 * 86400.0
	in, truth, next, end := hostlessLog(9, 1500, shape)
	cfg := DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	run := runHostless(t, cfg, in)
	names, recs := run.names, run.recs
	type row struct{ pub, naive, global float64 }
	var dev [2]row
	var cnt [2]int
	covered, followed, many := 0, 0, 0
	var sumN, sumT float64
	for _, n := range names {
		sumN += float64(recs[n].Changes)
	}
	// One global rate: all files' changes over their exposures to the end
	// of the log (the naive rates' weighted mean).
	for _, n := range names {
		e := recs[n]
		if nv, ok := e.Estimates[estimators.KeyNaive]; ok && nv > 0 {
			sumT += float64(e.Changes) / nv
		}
	}
	global := sumN / sumT
	for _, n := range names {
		e := recs[n]
		if !e.AsOf.Equal(end) && e.Changes > 0 {
			t.Errorf("%s: as_of %s, want the end of the log %s", n, e.AsOf, end)
		}
		if e.Changes >= estimators.PooledMaxChanges {
			// The population has a trend (estimators/trend.go): files with
			// more changes publish pooled too (T7), unless their change
			// window follows a confirmed shift.
			many++
			if e.Estimator != estimators.KeyPooled {
				followed++
			}
			continue
		}
		if e.Estimator != estimators.KeyPooled || e.RatePerS == nil || e.CI95 == nil {
			t.Fatalf("%s: %d changes: published %q, want pooled with ci95", n, e.Changes, e.Estimator)
		}
		b := 0
		if e.Changes > 0 {
			b = 1
		}
		cnt[b]++
		if l := truth[n]; e.CI95[0] <= l && l <= e.CI95[1] {
			covered++
		}
		naive := e.Estimates[estimators.KeyNaive]
		y := next[n]
		dev[b].pub += poissonDev(y, *e.RatePerS*year)
		dev[b].naive += poissonDev(y, math.Max(naive, 1e-12)*year)
		dev[b].global += poissonDev(y, global*year)
	}
	t.Logf("bucket 0: %d files, pooled ÷ global %.3f; bucket 1–4: %d files, pooled ÷ naive %.3f; ci95 covers %d of %d true rates",
		cnt[0], dev[0].pub/dev[0].global, cnt[1], dev[1].pub/dev[1].naive, covered, cnt[0]+cnt[1])
	if cnt[0] < 30 || cnt[1] < 100 {
		t.Fatalf("too few sparse files: %v", cnt)
	}
	if many == 0 || float64(followed) > 0.1*float64(many) {
		t.Errorf("%d of %d files with ≥ 5 changes publish another estimate than pooled", followed, many)
	}
	if r := dev[0].pub / dev[0].global; !(r < 1) {
		t.Errorf("bucket 0: pooled deviance %.3f × one global rate's, want < 1", r)
	}
	if r := dev[1].pub / dev[1].naive; !(r < 1) {
		t.Errorf("bucket 1–4: pooled deviance %.3f × naive's, want < 1", r)
	}
	// The stored states rebuild the records (the query API's path).
	site, asOf := &run.site, run.asOf
	if !asOf.Equal(end) {
		t.Errorf("stored as-of %s, want %s", asOf, end)
	}
	g, ok := site.Pool.PriorAt(seconds(asOf.UnixMilli()))
	if !ok || site.Pool.ON != float64(len(names)) {
		t.Fatalf("stored prior %+v (ok %v), want %d open histories", site.Pool, ok, len(names))
	}
	// SE of the fitted mean ΣX/ΣE: √(Σ(μe + σ²e²))/Σe with the true μ, σ².
	mu, s2 := 1/(100*86400.0), 1/(100*86400.0)/(shape*100*86400)
	var v, se float64
	for _, n := range names {
		e := recs[n].Estimates[estimators.KeyNaive]
		var ex float64
		if e > 0 {
			ex = float64(recs[n].Changes) / e
		}
		v += mu*ex + s2*ex*ex
		se += ex
	}
	sdMean := math.Sqrt(v) / se
	if m := g.Shape / g.Rate; math.Abs(m-mu) > 3*sdMean {
		t.Errorf("stored prior mean %.3g /s, true %.3g ± %.2g (tolerance 3 SE)", m, mu, sdMean)
	}
	t.Logf("stored prior: shape %.3f (true %.1f), mean ÷ true %.3f ± %.3f", g.Shape, shape, g.Shape/g.Rate/mu, sdMean/mu)
	run.checkRebuilt(t, &cfg.Model)
	run.checkReplay(t, cfg, in)
}

// TestSitePriorSeasonalOff: with seasonal baselines off
// (Seasonal.LearningPeriod = 0) a site keeps its change-rate prior
// (PriorOnly: no profiles): its sparse objects publish pooled as with
// them, the same estimates (the prior's sums do not depend on the
// profiles), and the prior is stored under the site's key.
func TestSitePriorSeasonalOff(t *testing.T) {
	in, _ := slowSiteLog(6, 300, 40)
	run := func(seasonal bool) (map[string][]byte, *state.Memory) {
		cfg := DefaultConfig()
		cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
		if !seasonal {
			cfg.Model.Seasonal.LearningPeriod = 0
			if cfg.Model.Seasonal.Enabled() {
				t.Fatal("seasonal baselines still on")
			}
		}
		mem := newMemory(t)
		p, sink := newTestProcessor(t, cfg, mem)
		runReader(t, p, in)
		return sink.Latest(stream.TopicEstimates), mem
	}
	on, _ := run(true)
	off, mem := run(false)
	pooled := 0
	for k, v := range on {
		var a, b records.Estimate
		if err := json.Unmarshal(v, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(off[k], &b); err != nil {
			t.Fatal(err)
		}
		if a.Kind != records.EstimateChange {
			continue
		}
		if a.Estimator == estimators.KeyPooled {
			pooled++
		}
		if a.Estimator != b.Estimator || (a.RatePerS == nil) != (b.RatePerS == nil) || (a.RatePerS != nil && *a.RatePerS != *b.RatePerS) {
			t.Errorf("%s: seasonal on %s %v, off %s %v", k, a.Estimator, a.RatePerS, b.Estimator, b.RatePerS)
		}
	}
	if pooled < 100 {
		t.Fatalf("only %d pooled estimates", pooled)
	}
	vals, err := mem.Get(context.Background(), state.Partition{Topic: stream.TopicObservations}, []string{siteKey("slow.example")}, nil)
	if err != nil || vals[0] == nil {
		t.Fatalf("no stored site prior with seasonal baselines off: %v", err)
	}
	var s SiteState
	if err := s.DecodeBinary(vals[0]); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Pool.Prior(); !ok || s.Access.Started() || s.Change.Started() {
		t.Errorf("stored site: prior %+v, profiles started %v %v", s.Pool, s.Access.Started(), s.Change.Started())
	}
}

// hostlessRun is one run of a hostless log (or of one site's, runSite)
// through a Processor over a memory store: its published change records
// (names sorted) and what it stored: the site state of site "" (host),
// the as-of time and each object's state.
type hostlessRun struct {
	host      string
	published map[string][]byte
	recs      map[string]records.Estimate
	names     []string
	siteBytes []byte
	site      SiteState
	asOf      time.Time
	objects   [][]byte // the stored states of names
}

func runHostless(t *testing.T, cfg Config, in []byte) *hostlessRun {
	t.Helper()
	return runSite(t, cfg, in, "")
}

// runSite is runHostless for a log of the objects of one host.
func runSite(t *testing.T, cfg Config, in []byte, host string) *hostlessRun {
	t.Helper()
	mem := newMemory(t)
	p, sink := newTestProcessor(t, cfg, mem)
	runReader(t, p, in)
	r := &hostlessRun{host: host, published: map[string][]byte{}, recs: map[string]records.Estimate{}}
	for k, v := range sink.Latest(stream.TopicEstimates) {
		var e records.Estimate
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind != records.EstimateChange {
			continue
		}
		r.published[k] = v
		r.recs[e.Object] = e
		r.names = append(r.names, e.Object)
	}
	sort.Strings(r.names)
	keys := append([]string{siteKey(host), ReorderObject}, r.names...)
	vals, err := mem.Get(context.Background(), state.Partition{Topic: stream.TopicObservations}, keys, nil)
	if err != nil || vals[0] == nil {
		t.Fatalf("stored site state of %q: %v", host, err)
	}
	if err := r.site.DecodeBinary(vals[0]); err != nil {
		t.Fatal(err)
	}
	r.siteBytes, r.objects = vals[0], vals[2:]
	r.asOf, _ = ReorderLatest(vals[1])
	return r
}

// checkRebuilt rebuilds each record from its stored state and the stored
// site state, as the query API does, and wants it byte for byte as
// published.
func (r *hostlessRun) checkRebuilt(t *testing.T, m *Model) {
	t.Helper()
	for i, n := range r.names {
		var o Object
		if err := o.DecodeBinary(r.objects[i]); err != nil {
			t.Fatal(err)
		}
		var es estimators.Estimates
		var view SiteState
		rec, ok := o.ChangeEstimateAsOf(n, m, PriorView(r.host, m, &r.site, &view), r.asOf, &es)
		if !ok {
			t.Fatalf("%s: no estimate from the stored state", n)
		}
		got, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, r.published[n]) {
			t.Fatalf("%s: from the stored states\n%s\npublished\n%s", n, got, r.published[n])
		}
	}
}

// checkReplay replays in into a fresh store: the same stored site state
// and the same published records.
func (r *hostlessRun) checkReplay(t *testing.T, cfg Config, in []byte) {
	t.Helper()
	again := runSite(t, cfg, in, r.host)
	if !bytes.Equal(again.siteBytes, r.siteBytes) {
		t.Errorf("replay: stored site state differs")
	}
	for k, v := range r.published {
		if !bytes.Equal(v, again.published[k]) {
			t.Fatalf("%s: replay differs:\n%s\n%s", k, v, again.published[k])
		}
	}
}
