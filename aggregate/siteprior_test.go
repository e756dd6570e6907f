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
	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// slowSiteLog is one site of n pages crawled daily for days days; page
// rates are log-normal around one change in 30 days (σ = 0.5), so most
// pages show fewer than 5 changes: the regime of the pooled estimate.
func slowSiteLog(seed uint64, n, days int) ([]byte, map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	truth := map[string]float64{}
	var evs []timedObs
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("http://slow.example/p/%d", i)
		rate := math.Exp(0.5*r.NormFloat64()) / (30 * 86400)
		truth[name] = rate
		evs = appendVisits(evs, name, dailyVisits(days, 60*float64(i)), r.ExpFloat64()/rate,
			func() float64 { return r.ExpFloat64() / rate })
	}
	return encodeLog(evs), truth
}

// TestSitePriorStored: an object with fewer than estimators.PooledMaxChanges changes
// publishes the pooled estimate under its site's stored prior
// (siteprior.go), with ci95 and TTL; on them it is closer to the truth
// than naive and bayes_beta in the same records, and its intervals cover.
// The stored object and site states give the query API the same record,
// and a second run of the input the same outputs.
func TestSitePriorStored(t *testing.T) {
	in, truth := slowSiteLog(6, 300, 40)
	cfg := DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	mem := newMemory(t)
	p, sink := newTestProcessor(t, cfg, mem)
	runReader(t, p, in)
	errs := map[string][]float64{}
	covered, few := 0, 0
	var names []string
	published := map[string]records.Estimate{}
	for _, v := range sink.Latest(stream.TopicEstimates) {
		var e records.Estimate
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Object)
		published[e.Object] = e
		if e.Changes >= estimators.PooledMaxChanges {
			if e.Estimator == estimators.KeyPooled {
				t.Errorf("%s: %d changes but pooled published", e.Object, e.Changes)
			}
			continue
		}
		few++
		if e.Estimator != estimators.KeyPooled || e.CI95 == nil || e.TTLS == nil {
			t.Fatalf("%s: %d changes: published %s, want pooled with ci95 and ttl", e.Object, e.Changes, e.Estimator)
		}
		rate := truth[e.Object]
		if e.CI95[0] <= rate && rate <= e.CI95[1] {
			covered++
		}
		for _, k := range []string{estimators.KeyPooled, estimators.KeyNaive, estimators.KeyBayesBeta} {
			x, ok := e.Estimates[k]
			l := math.Inf(1)
			if ok && x > 0 {
				l = math.Abs(math.Log(x / rate))
			}
			errs[k] = append(errs[k], l)
		}
	}
	med := func(k string) float64 {
		s := errs[k]
		sort.Float64s(s)
		return s[len(s)/2]
	}
	t.Logf("%d objects with < %d changes: median |log| pooled %.3f naive %.3f bayes_beta %.3f; coverage %d", few,
		estimators.PooledMaxChanges, med(estimators.KeyPooled), med(estimators.KeyNaive), med(estimators.KeyBayesBeta), covered)
	if few < 100 {
		t.Fatalf("only %d objects with few changes", few)
	}
	for _, k := range []string{estimators.KeyNaive, estimators.KeyBayesBeta} {
		if !(med(estimators.KeyPooled) < med(k)) {
			t.Errorf("pooled median |log| %.3f not below %s's %.3f", med(estimators.KeyPooled), k, med(k))
		}
	}
	// ≥ 100 objects: binomial 2·SE of a 95 % coverage is ≤ 4.4 %.
	if c := float64(covered) / float64(few); c < 0.9 {
		t.Errorf("coverage %.3f of the pooled intervals, want ≈ 0.95", c)
	}
	// The query API's path: the stored object and site, decoded.
	part := state.Partition{Topic: stream.TopicObservations}
	keys := append([]string{siteKey("slow.example")}, names[:20]...)
	vals, err := mem.Get(context.Background(), part, keys, nil)
	if err != nil || vals[0] == nil {
		t.Fatalf("stored site: %v", err)
	}
	var site SiteState
	if err := site.DecodeBinary(vals[0]); err != nil {
		t.Fatal(err)
	}
	if _, ok := site.Pool.Prior(); !ok {
		t.Fatalf("stored site has no prior: %+v", site.Pool)
	}
	for i, name := range names[:20] {
		var o Object
		if err := o.DecodeBinary(vals[i+1]); err != nil {
			t.Fatal(err)
		}
		var es estimators.Estimates
		rec, _ := o.ChangeEstimateAt(name, &cfg.Model, &site, &es)
		want := published[name]
		if rec.Estimator != want.Estimator || *rec.RatePerS != *want.RatePerS {
			t.Errorf("%s: from the stored states %s %v, published %s %v", name, rec.Estimator, *rec.RatePerS, want.Estimator, *want.RatePerS)
		}
	}
	// A second run gives the same estimates.
	p2, sink2 := newTestProcessor(t, cfg, newMemory(t))
	runReader(t, p2, in)
	a, b := sink.Latest(stream.TopicEstimates), sink2.Latest(stream.TopicEstimates)
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			t.Fatalf("%s: second run differs:\n%s\n%s", k, v, b[k])
		}
	}
}

// TestSiteStatePoolEncoding: the prior's sums round-trip; a site state
// without them (written before) decodes with none; bad sums are corrupt.
func TestSiteStatePoolEncoding(t *testing.T) {
	var s SiteState
	s.Pool = estimators.PoolStats{N: 12, X: 3, E: 1e7, X2E: 2e-6, F: 1}
	b := s.AppendBinary(nil)
	var d SiteState
	if err := d.DecodeBinary(b); err != nil || d.Pool != s.Pool {
		t.Fatalf("round trip: %v %+v", err, d.Pool)
	}
	var empty SiteState
	old := empty.AppendBinary(nil)
	if err := d.DecodeBinary(old); err != nil || d.Pool != (estimators.PoolStats{}) {
		t.Fatalf("old: %v %+v", err, d.Pool)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -5} {
		bad := append([]byte(nil), old...)
		for i := 0; i < 5; i++ {
			bad = wire.AppendFloat64(bad, v)
		}
		if err := d.DecodeBinary(bad); err == nil {
			t.Errorf("sums %v decoded", v)
		}
	}
}

// TestSiteStateTrendEncoding: a site's trend (estimators/trend.go)
// round-trips after its prior's sums; states written before it (five or
// twelve sums, no trend) decode with an empty trend; a trend block that
// is cut short, has more than MaxTrendPeriods periods, years out of
// order or sums that are not finite or negative is corrupt.
func TestSiteStateTrendEncoding(t *testing.T) {
	var s SiteState
	s.Pool = estimators.PoolStats{N: 0, ON: 40, OX: 130, OX2: 900, OS: 6.4e10, OXS: 2e11, OS2: 1e20, Latest: 1.7e9}
	base := yearStartTest(2020)
	for i := 0; i < 40; i++ {
		s.Trend.Enter(base-float64(i)*3e6, base)
	}
	for i := 0; i < 300; i++ {
		s.Trend.Change(base+float64(i)*2e5, 1)
	}
	if s.Trend.NClosed == 0 || s.Trend.Empty() {
		t.Fatalf("trend with no closed period: %+v", s.Trend)
	}
	b := s.AppendBinary(nil)
	var d SiteState
	if err := d.DecodeBinary(b); err != nil || d != s {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, d.Trend, s.Trend)
	}
	// The bound of SiteState's comment: 35 + 18·K bytes for K closed years.
	var full estimators.Trend
	full.Enter(yearStartTest(1990), yearStartTest(1990))
	for y := 1991; y <= 2030; y++ {
		full.Change(yearStartTest(y), 1)
	}
	if full.NClosed != estimators.MaxTrendPeriods {
		t.Fatalf("%d closed periods, want %d", full.NClosed, estimators.MaxTrendPeriods)
	}
	if n := len(appendTrend(nil, &full)); n != 35+18*estimators.MaxTrendPeriods {
		t.Errorf("a full trend encodes in %d bytes, want %d", n, 35+18*estimators.MaxTrendPeriods)
	}
	for _, old := range []SiteState{{Pool: estimators.PoolStats{N: 12, X: 3, E: 1e7, X2E: 2e-6}}, {Pool: s.Pool}} {
		if err := d.DecodeBinary(old.AppendBinary(nil)); err != nil || d != old || !d.Trend.Empty() {
			t.Errorf("state without a trend: %v %+v", err, d.Trend)
		}
	}
	// The trend starts after the twelve sums: its first byte is NClosed.
	at := len(b) - len(appendTrend(nil, &s.Trend))
	bad := map[string][]byte{
		"cut":   b[:len(b)-3],
		"extra": append(append([]byte(nil), b...), 0),
		"K+1":   append(append(append([]byte(nil), b[:at]...), estimators.MaxTrendPeriods+1), b[at+1:]...),
	}
	neg := s
	neg.Trend.Periods[0].D = -1e9
	bad["negative"] = neg.AppendBinary(nil)
	nan := s
	nan.Trend.C = math.NaN()
	bad["NaN"] = nan.AppendBinary(nil)
	order := s
	order.Trend.Periods[0].Year = order.Trend.Year
	bad["order"] = order.AppendBinary(nil)
	for name, v := range bad {
		if err := d.DecodeBinary(v); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// yearStartTest is the start of UTC year y in Unix seconds.
func yearStartTest(y int) float64 {
	return float64(time.Date(y, time.January, 1, 0, 0, 0, 0, time.UTC).Unix())
}
