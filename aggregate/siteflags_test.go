package aggregate

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/changerate/changerate/estimators"
)

// burstySiteLog is one site of n pages crawled daily for days days whose
// changes come in bursts: Weibull renewal intervals of shape ½ (squared
// coefficient of variation 5) with a mean of 3 days, so that most pages
// show 5 or more changed days (and publish their own estimator, not the
// pooled one) and their change flags are overdispersed (R1: D > 1).
func burstySiteLog(seed uint64, n, days int) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	const shape, mean = 0.5, 3 * 86400.0
	scale := mean / math.Gamma(1+1/shape)
	draw := func() float64 { return scale * math.Pow(r.ExpFloat64(), 1/shape) }
	var evs []timedObs
	for i := 0; i < n; i++ {
		next := -50 * mean // the renewal process run in before the first visit
		for next <= 0 {
			next += draw()
		}
		evs = appendVisits(evs, fmt.Sprintf("http://bursty.example/p/%d", i), dailyVisits(days, 60*float64(i)), next, draw)
	}
	return encodeLog(evs)
}

// TestSiteSpacingFactor: the site's spacing sums (estimators/
// dependence_pool.go R7) are stored with its state: equal to the sums of
// the stored objects' terms (the count exactly; the float sums, built by
// adding and removing each object's term at every visit, to 1e-9
// relative), and the site's factor D̄ (R8) of these bursty pages is
// above 1 by more than four of its null standard errors 1/√U. Each
// published interval of an object's own estimator is (D4) on the factor
// of (R11–R19) from the stored site state, its spacing sums with the
// between-object excess of its prior's sums (R19; 1e-12 relative), for some wider
// than with the object's own factor (R6) alone, and each published
// pooled interval (R12) on the same factor, for some wider than the
// pooled posterior's own; the query API's path
// rebuilds every record byte for byte, and a replay stores the same site
// state and publishes the same records.
func TestSiteSpacingFactor(t *testing.T) {
	in := burstySiteLog(3, 120, 60)
	cfg := DefaultConfig()
	cfg.Emit, cfg.CacheObjects, cfg.CacheBytes = EmitFinal, 0, 0
	run := runSite(t, cfg, in, "bursty.example")
	m := &cfg.Model
	var sum estimators.FlagPool
	objs := make([]Object, len(run.names))
	for i := range run.names {
		if err := objs[i].DecodeBinary(run.objects[i]); err != nil {
			t.Fatal(err)
		}
		if tm, ok := objs[i].Change.FlagTerm(&m.Estimators); ok {
			sum.Add(tm, 1)
		}
	}
	got := run.site.Flags
	if got.N != sum.N || sum.N < estimators.MinPoolObjects {
		t.Fatalf("stored %v objects in the spacing sums, the stored objects give %v", got.N, sum.N)
	}
	for i, pair := range [][2]float64{{got.U, sum.U}, {got.UR, sum.UR}, {got.UR2, sum.UR2}, {got.U2, sum.U2}} {
		if math.Abs(pair[0]-pair[1]) > 1e-9*math.Abs(pair[1]) {
			t.Errorf("stored sum %d = %g, the stored objects give %g", i, pair[0], pair[1])
		}
	}
	s, ok := got.Site()
	if !ok || !(s.D > 1+4/math.Sqrt(got.U)) {
		t.Fatalf("site factor %+v %v (U = %g): want above 1 beyond its noise", s, ok, got.U)
	}
	t.Logf("site: %v objects, D̄ = %.3f, τ̂² = %.3f", got.N, s.D, s.Tau2)
	prior, priorOK := run.site.Pool.Prior()
	// The published factor carries the site's between-object excess of
	// its prior's sums (R19), which the encoded spacing sums do not hold.
	pub := got.WithExcess(&run.site.Pool, 0)
	wider, own, pooled, between := 0, 0, 0, 0
	for i, n := range run.names {
		rec := run.recs[n]
		c := &objs[i].Change
		if rec.CI95 == nil || !c.Regular(&m.Estimators) {
			continue
		}
		if c.SiteFlagDependence(&pub, &m.Estimators) > c.SiteFlagDependence(&got, &m.Estimators) {
			between++
		}
		switch rec.Estimator {
		case estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta:
		case estimators.KeyPooled:
			// (R12): the pooled interval on the same factor.
			e, ok := c.PooledEstimateIn(prior, 0, &m.Estimators, nil)
			if !priorOK || !ok {
				t.Fatalf("%s: published pooled, no prior (%v) or estimate", n, priorOK)
			}
			want := c.PooledDependentIn(e, prior, c.SiteFlagDependence(&pub, &m.Estimators), &m.Estimators, nil)
			if *rec.RatePerS != e.Rate || math.Abs(rec.CI95[0]-want.Lo) > 1e-12*want.Lo || math.Abs(rec.CI95[1]-want.Hi) > 1e-12*want.Hi {
				t.Errorf("%s: published pooled %v %v, (R12) %g [%g, %g]", n, *rec.RatePerS, rec.CI95, e.Rate, want.Lo, want.Hi)
			}
			if want.Hi-want.Lo > (e.Hi-e.Lo)*(1+1e-9) {
				pooled++
			}
			continue
		default:
			continue
		}
		own++
		var es estimators.Estimates
		if _, ok := c.Estimate(seconds(objs[i].lastTime), &m.Estimators, &es); !ok {
			t.Fatalf("%s: no estimate", n)
		}
		e, _ := es.Get(rec.Estimator)
		want := c.EffectiveInterval(e, c.SiteFlagDependence(&pub, &m.Estimators), &m.Estimators)
		if math.Abs(rec.CI95[0]-want.Lo) > 1e-12*want.Lo || math.Abs(rec.CI95[1]-want.Hi) > 1e-12*want.Hi {
			t.Errorf("%s: published %s ci95 %v, (D4) on the site's factor [%g, %g]", n, rec.Estimator, rec.CI95, want.Lo, want.Hi)
		}
		alone := c.EffectiveInterval(e, c.FlagDependence(&m.Estimators), &m.Estimators)
		if want.Hi-want.Lo > (alone.Hi-alone.Lo)*(1+1e-9) {
			wider++
		}
	}
	t.Logf("%d objects publish their own estimator (%d wider with the site's factor), %d pooled with a wider interval, %d widened by R19", own, wider, pooled, between)
	if own < 20 || wider == 0 || pooled == 0 {
		t.Errorf("%d objects publish their own estimator, %d wider with the site's factor; %d pooled wider", own, wider, pooled)
	}
	run.checkRebuilt(t, m)
	run.checkReplay(t, cfg, in)
}

// goldenSites are the states of aggregate/testdata/site_v1.golden …
// site_v5.golden, by version (index 0 unused): prior sums (1); sitemap
// checks, prior and open sums, trend (2); and the five spacing sums of a
// legacy pool (3), the end-spacing sums (4), the tempering scores (5).
func goldenSites() [siteVersionTemper + 1]SiteState {
	var g [siteVersionTemper + 1]SiteState
	g[1] = SiteState{Pool: estimators.PoolStats{N: 12, X: 3, E: 1e7, X2E: 2e-6, F: 1}}
	g[2] = SiteState{Sitemap: SitemapTrust{Agree: 7, Disagree: 2},
		Pool: estimators.PoolStats{N: 3, X: 1, E: 5e6, X2E: 1e-7, ON: 40, OX: 130, OX2: 900, OS: 6.4e10, OXS: 2e11, OS2: 1e20, Latest: 1.7e9}}
	base := yearStartTest(2020)
	for i := 0; i < 3; i++ {
		g[2].Trend.Enter(base-float64(i)*3e7, base)
	}
	for i := 0; i < 5; i++ {
		g[2].Trend.Change(base+float64(i)*2e5, 1)
	}
	g[3] = g[2]
	g[3].Flags = estimators.FlagPool{N: 57, U: 310.5, UR: 612.25, UR2: 1500.125, U2: 2400.0625, Legacy: true}
	g[4] = g[2]
	g[4].Flags = estimators.FlagPool{N: 57, U: 310.5, UR: 612.25, UR2: 1500.125, U2: 2400.0625, B: -3.25, BD: 120.5, BV: 980.75}
	g[5] = g[4]
	for k := range g[5].Temper {
		g[5].Temper[k] = -1000.5 - float64(k)*0.25
	}
	return g
}

// checkGoldenSites: testdata/site_v<v>.golden of each version decodes to
// goldenSites' state (with spacing sums exactly from version 3 on) and
// encodes again byte for byte.
func checkGoldenSites(t *testing.T, versions ...byte) {
	t.Helper()
	want := goldenSites()
	for _, v := range versions {
		file := fmt.Sprintf("testdata/site_v%d.golden", v)
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		var d SiteState
		if err := d.DecodeBinary(b); err != nil || b[0] != v || d != want[v] || d.Flags.Empty() != (v < siteVersionFlags) {
			t.Errorf("%s: %v, version %d, decoded %+v", file, err, b[0], d)
		}
		if re := d.AppendBinary(nil); !bytes.Equal(re, b) {
			t.Errorf("%s: encodes again in %d bytes, differently", file, len(re))
		}
	}
}

// TestSiteStateFlagsEncoding: the spacing sums round-trip in version 4
// (after the sitemap checks, with the backward-recurrence sums); the
// golden states of versions 1 (prior sums) and 2 (sitemap checks, prior
// and open sums, trend), written before the sums existed, decode with
// none and the rest as written; version 3's (the five sums of R7 without
// R15's) decodes as a legacy pool and encodes again byte for byte, as does
// version 4's (written before the tempering scores existed); sums
// that are not finite, or negative but B, are corrupt; the sums cost 64
// bytes and one of version 1's sitemap counts.
func TestSiteStateFlagsEncoding(t *testing.T) {
	checkGoldenSites(t, siteVersion, siteVersionSitemap, siteVersionFlags, siteVersionBack)
	v2 := goldenSites()[siteVersionSitemap]
	s := v2
	s.Flags = estimators.FlagPool{N: 57, U: 310.5, UR: 612.25, UR2: 1500.125, U2: 2400.0625, B: -3.25, BD: 120.5, BV: 980.75}
	b := s.AppendBinary(nil)
	var d SiteState
	if err := d.DecodeBinary(b); err != nil || d != s || b[0] != siteVersionBack {
		t.Fatalf("round trip: %v, version %d\n%+v\n%+v", err, b[0], d.Flags, s.Flags)
	}
	if n := len(b) - len(v2.AppendBinary(nil)); n != 8*(flagSums+backSums) {
		t.Errorf("the sums cost %d bytes, want %d", n, 8*(flagSums+backSums))
	}
	noSitemap := SiteState{Flags: s.Flags}
	if n := len(noSitemap.AppendBinary(nil)) - len((&SiteState{}).AppendBinary(nil)); n != 8*(flagSums+backSums)+2 {
		t.Errorf("the sums cost a site without sitemap checks %d bytes, want %d", n, 8*(flagSums+backSums)+2)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), -5} {
		for _, field := range []*float64{&s.Flags.UR, &s.Flags.BV, &s.Flags.B} {
			if v == -5 && field == &s.Flags.B {
				continue // B is signed
			}
			keep := *field
			*field = v
			bad := s.AppendBinary(nil)
			*field = keep
			if err := d.DecodeBinary(bad); err == nil {
				t.Errorf("sum %v decoded", v)
			}
		}
	}
	// The sums are read before the prior's: a state cut inside them is
	// corrupt.
	at := len((&SiteState{Sitemap: v2.Sitemap}).AppendBinary(nil))
	if err := d.DecodeBinary(b[:at+8*flagSums-3]); err == nil {
		t.Error("cut sums decoded")
	}
}
