package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/changerate/changerate/records"
)

// TestDeviance: (N1) at known points: 0 at y = μ; 2μ at y = 0; the
// floor μ_min for a rate of 0.
func TestDeviance(t *testing.T) {
	for _, c := range []struct {
		y    int64
		mu   float64
		want float64
	}{
		{3, 3, 0},
		{0, 2.5, 5},
		{2, 1, 2 * (2*math.Log(2) - 1)},
		{1, 0, 2 * (math.Log(1/nyMuMin) - 1 + nyMuMin)},
	} {
		if got := deviance(c.y, c.mu); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("d(%d, %g) = %g, want %g", c.y, c.mu, got, c.want)
		}
	}
}

// TestPoissonQuantile: the 97.5 % quantile of Poisson(1) is 3 (P(Y ≤ 2)
// = 0.920, P(Y ≤ 3) = 0.981); of Poisson(0) 0.
func TestPoissonQuantile(t *testing.T) {
	if q := poissonQuantile(1, 0.975); q != 3 {
		t.Errorf("q = %d, want 3", q)
	}
	if q := poissonQuantile(0, 0.975); q != 0 {
		t.Errorf("q = %d, want 0", q)
	}
}

// TestNutchRate: with no change the interval grows ×1.4 per visit up to
// the 365-day cap; with a change at every weekly visit it shrinks ×0.8
// down to 1 day (but a change per visit needs one per shrinking interval:
// events every hour).
func TestNutchRate(t *testing.T) {
	const day = 86400.0
	// Visits at 7, 16.8, 30.5, 49.7, 76.6, 114.3, 167.0, 240.8 and 344.1
	// days, nine unchanged visits: the interval is 7·1.4⁹ = 144.6 days.
	if r := nutchRate(nil, 0, 365*day, 7*day); math.Abs(1/r/day-7*math.Pow(1.4, 9)) > 1e-6 {
		t.Errorf("quiet page: interval %.3f days, want %.3f", 1/r/day, 7*math.Pow(1.4, 9))
	}
	var ev []float64
	for h := 1.0; h < 365*24; h++ {
		ev = append(ev, h*3600)
	}
	if r := nutchRate(ev, 0, 365*day, 7*day); math.Abs(1/r-day) > 1e-6 {
		t.Errorf("busy page: interval %.3f days, want 1", 1/r/day)
	}
	if r := nutchRate(nil, 0, 10*365*day, 7*day); math.Abs(1/r-365*day) > 1e-6 {
		t.Errorf("quiet page over 10 years: interval %.1f days, want 365", 1/r/day)
	}
}

// TestNYDesignExact: the exact design is (E3) over the year.
func TestNYDesignExact(t *testing.T) {
	cfg := newEstConfig()
	const year = 365 * 86400.0
	ev := []float64{-5, 10, 20, 30, year + 1}
	pub, ok, naive, seen, evd, evOK := nyDesign(cfg, ev, 0, year, 0)
	if !evOK || evd.X != 3 || evd.E != year {
		t.Errorf("evidence %+v %v", evd, evOK)
	}
	if !ok || seen != 3 || math.Abs(naive-3/year) > 1e-20 || math.Abs(pub.Rate-3.5/(year+43200)) > 1e-20 || !(pub.Lo < pub.Rate && pub.Rate < pub.Hi) {
		t.Fatalf("%+v %v %g %d", pub, ok, naive, seen)
	}
}

// TestHeldOutWorlds: the held-out generator's change process has rate λ
// whatever its Weibull shape (mean interval 1/λ), checked on a complete
// count: with visits far more frequent than changes (r = 0.02) nearly
// every change is seen, so X/T ≈ λ (5,000 expected changes per shape:
// a standard error of 1.4 %).
func TestHeldOutWorlds(t *testing.T) {
	// (Shape 0.5 puts 18 % of its intervals below one visit interval at
	// this rate, P = 1 − exp(−(1/25)^½), so its seen rate is lower by
	// design: not checked here.)
	for _, k := range []float64{1, 3} {
		rng := rand.New(rand.NewPCG(1, uint64(k*10)))
		w := hoWorld{r: 0.02, n: 5000, shape: k}
		var X, T float64
		for i := 0; i < 50; i++ {
			c := hoObserve(rng, w)
			X += float64(c.Changes())
			T += c.Span()
		}
		// Changes within one visit interval are seen once: at r = 0.02
		// the loss is below 1 % for k ≥ 1.
		if got := X / T / 0.02; got < 0.95 || got > 1.04 {
			t.Errorf("shape %g: seen rate / λ = %.3f", k, got)
		}
	}
}

// TestNYInputs: the generated inputs of the programs' path — the git log
// up to t1 (changes-tsv) and a crawler's visits (observation JSON lines,
// changed when a commit fell since the previous visit; the first visit is
// the baseline).
func TestNYInputs(t *testing.T) {
	pages := map[string][]float64{"a.xml": {100, 250, 260, 900}, "b.xml": {500}}
	names := []string{"a.xml", "b.xml"}
	var tsv strings.Builder
	if err := writeChangesTSV(&tsv, names, pages, 800); err != nil {
		t.Fatal(err)
	}
	if want := "a.xml\t100\na.xml\t250\na.xml\t260\nb.xml\t500\n"; tsv.String() != want {
		t.Errorf("changes-tsv:\n%s\nwant\n%s", tsv.String(), want)
	}
	var js strings.Builder
	if err := writeVisits(&js, names, pages, 200, 500, 100); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	// b.xml starts after t0 = 200: not visited. a.xml at 200, 300, 400, 500.
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), js.String())
	}
	var changed []bool
	for _, l := range lines {
		var o records.Observation
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if o.Object != nyURL("a.xml") || o.Kind != records.KindVisit || o.Site != "doc.php.net" {
			t.Errorf("observation %+v", o)
		}
		changed = append(changed, o.Changed == records.Changed)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
}
