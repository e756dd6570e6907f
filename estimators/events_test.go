package estimators

import (
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// completeHistory returns a Change fed a complete history: a baseline
// event at t0 and one event at each of t0+ds[i].
func completeHistory(t0 float64, ds ...float64) Change {
	var c Change
	c.Visit(Visit{Time: t0, Complete: true})
	for _, d := range ds {
		c.Visit(Visit{Time: t0 + d, Complete: true})
	}
	return c
}

// TestPoissonEventsComplete: a complete history publishes (N+½)/(T+τ₀)
// (events.go E3) with the Gamma(N+½, T+τ₀) interval (E4), checked against
// gonum's Gamma quantiles; the existence-of-change estimators are absent
// (they saturate: cgm_improved would read every interval as changed).
func TestPoissonEventsComplete(t *testing.T) {
	cfg := DefaultConfig()
	const day = 86400.0
	// 24 changes, one every 313 days (php-doc's unlink.xml).
	var ds []float64
	for i := 1; i <= 24; i++ {
		ds = append(ds, float64(i)*313*day)
	}
	c := completeHistory(1e9, ds...)
	if !c.Complete() || c.Events() != 25 || c.Changes() != 24 {
		t.Fatalf("complete=%v events=%d changes=%d", c.Complete(), c.Events(), c.Changes())
	}
	var out Estimates
	best, ok := c.Estimate(c.latest(), &cfg, &out)
	if !ok || best.Key != KeyPoissonEvents {
		t.Fatalf("best = %+v, %v; want %s", best, ok, KeyPoissonEvents)
	}
	T := 24 * 313 * day
	a, b := 24.5, T+43200
	near(t, "rate", best.Rate, a/b, 1e-12)
	g := distuv.Gamma{Alpha: a, Beta: b}
	near(t, "lo", best.Lo/g.Quantile(0.025), 1, 1e-9)
	near(t, "hi", best.Hi/g.Quantile(0.975), 1, 1e-9)
	// Within 3 % of the true interval of 313 days (the bias ½/N − τ₀/T).
	if r := best.Rate * 313 * day; r < 1 || r > 1.03 {
		t.Errorf("rate × 313 days = %.4f, want within [1, 1.03]", r)
	}
	naive, ok := out.Get(KeyNaive)
	if !ok {
		t.Fatal("naive absent")
	}
	near(t, "naive", naive.Rate, 24/T, 1e-12)
	for _, k := range []string{KeyCGMImproved, KeyBayesBeta, KeyCGMIrregularMLE, KeyMalcolmNoLastMod} {
		if _, ok := out.Get(k); ok {
			t.Errorf("%s published for a complete history", k)
		}
	}
	// The nil-out path and the schedules' rate agree.
	if b2, ok := c.Estimate(c.latest(), &cfg, nil); !ok || b2 != best {
		t.Errorf("Estimate(nil) = %+v, want %+v", b2, best)
	}
	if r, ok := c.bestRate(&cfg); !ok || r != best.Rate {
		t.Errorf("bestRate = %v, want %v", r, best.Rate)
	}
}

// TestPoissonEventsNoChange: a complete history without a change after
// the baseline gets half a change over T + τ₀, not 0, with lower bound
// the Gamma(½) quantile.
func TestPoissonEventsNoChange(t *testing.T) {
	cfg := DefaultConfig()
	var c Change
	c.Visit(Visit{Time: 1e9, Complete: true})
	// A second event at the same millisecond is not accepted; span 0.
	c.Visit(Visit{Time: 1e9, Complete: true})
	if _, ok := c.poissonEventsEst(&cfg, c.latest(), true, nil); ok {
		t.Error("defined without a span")
	}
	c = completeHistory(1e9, 100*86400, 200*86400)
	// Make MinIntervals large: estimators published, no best estimate.
	cfg3 := Config{MinIntervals: 3}.WithDefaults()
	var out Estimates
	if _, ok := c.Estimate(c.latest(), &cfg3, &out); ok {
		t.Error("best estimate with fewer than MinIntervals intervals")
	}
	if _, ok := out.Get(KeyPoissonEvents); !ok {
		t.Error("poisson_events not published")
	}
}

// TestPoissonEventsMixed: a crawler visit of an object whose history was
// complete makes it a visit-observed object again (the visit estimators
// apply, poisson_events is absent).
func TestPoissonEventsMixed(t *testing.T) {
	cfg := DefaultConfig()
	c := completeHistory(1e9, 86400, 2*86400, 3*86400)
	c.Visit(Visit{Time: 1e9 + 4*86400, Changed: false})
	if c.Complete() {
		t.Fatal("complete after a sampling visit")
	}
	var out Estimates
	best, ok := c.Estimate(c.latest(), &cfg, &out)
	if !ok || best.Key == KeyPoissonEvents {
		t.Fatalf("best = %+v", best)
	}
	if _, ok := out.Get(KeyPoissonEvents); ok {
		t.Error("poisson_events published for a sampled object")
	}
}

// TestEventsEncoding: the events count round-trips; states without it
// (every state written before it, the golden file) decode with none; a
// count above the visits is corrupt.
func TestEventsEncoding(t *testing.T) {
	c := completeHistory(1.7e9, 86400, 3*86400)
	ref := c.latest()
	b := c.AppendBinaryAt(nil, ref)
	var d Change
	if _, err := d.DecodeBinaryAt(b, ref); err != nil || d != c || !d.Complete() {
		t.Fatalf("round trip: %v, %+v", err, d)
	}
	// The last two bytes are the events count (3) and the gone count (0);
	// 4 events > visits is corrupt.
	bad := append([]byte(nil), b...)
	bad[len(bad)-2] = 4
	if _, err := d.DecodeBinaryAt(bad, ref); !errors.Is(err, ErrCorrupt) {
		t.Errorf("events > visits: err = %v", err)
	}
	// The same state without the events section is a sampled history.
	old := append([]byte(nil), b[:len(b)-2]...)
	old[0] &^= secExtra
	if _, err := d.DecodeBinaryAt(old, ref); err != nil || d.Complete() || d.Events() != 0 {
		t.Errorf("old state: err %v, complete %v (%s)", err, d.Complete(), hex.EncodeToString(old))
	}
}

// TestGone: "gone" answers mark the object gone until a later visit sees
// content; the mark round-trips through the encoding, also for an object
// that never answered with content.
func TestGone(t *testing.T) {
	var c Change
	c.MarkGone()
	c.MarkGone()
	if !c.Gone() || c.Visits() != 0 {
		t.Fatalf("gone %v visits %d", c.Gone(), c.Visits())
	}
	var d Change
	if _, err := d.DecodeBinaryAt(c.AppendBinaryAt(nil, 0), 0); err != nil || d != c {
		t.Fatalf("round trip: %v %+v", err, d)
	}
	c.Visit(Visit{Time: 1e9})
	c.Visit(Visit{Time: 1e9 + 86400, Changed: true})
	c.MarkGone()
	if !c.Gone() {
		t.Fatal("not gone after a 404")
	}
	if _, err := d.DecodeBinaryAt(c.AppendBinaryAt(nil, 1e9+86400), 1e9+86400); err != nil || d != c {
		t.Fatalf("round trip: %v %+v", err, d)
	}
	c.Visit(Visit{Time: 1e9 + 2*86400})
	if c.Gone() {
		t.Fatal("gone after content was seen again")
	}
}

// TestPoissonEventsExposureToAsOf: N changes in [t₀, t_last] of a complete
// history observed up to t_end publish (N+½)/((t_end − t₀) + τ₀) (events.go
// E1, E3) with the Gamma(N+½, (t_end − t₀) + τ₀) interval (E4), and naive
// N/(t_end − t₀): the quiet time after the last change is exposure. An
// as-of at or before t_last (or +Inf) is t_last.
func TestPoissonEventsExposureToAsOf(t *testing.T) {
	cfg := DefaultConfig()
	const day, year = 86400.0, 365 * 86400.0
	// 5 changes in the first week after the baseline, a log of one year.
	t0 := 1.5e9
	c := completeHistory(t0, 1*day, 2*day, 3*day, 5*day, 7*day)
	tEnd := t0 + year
	var out Estimates
	best, ok := c.Estimate(tEnd, &cfg, &out)
	if !ok || best.Key != KeyPoissonEvents {
		t.Fatalf("best = %+v, %v; want %s", best, ok, KeyPoissonEvents)
	}
	a, b := 5.5, year+43200
	near(t, "rate", best.Rate, a/b, 1e-12)
	g := distuv.Gamma{Alpha: a, Beta: b}
	near(t, "lo", best.Lo/g.Quantile(0.025), 1, 1e-9)
	near(t, "hi", best.Hi/g.Quantile(0.975), 1, 1e-9)
	naive, ok := out.Get(KeyNaive)
	if !ok {
		t.Fatal("naive absent")
	}
	near(t, "naive", naive.Rate, 5/year, 1e-12)
	near(t, "naive hi", naive.Hi*year/distuv.ChiSquared{K: 12}.Quantile(0.975)*2, 1, 1e-9)
	if b2, ok := c.Estimate(tEnd, &cfg, nil); !ok || b2 != best {
		t.Errorf("Estimate(nil) = %+v, want %+v", b2, best)
	}
	// One week's exposure would be 52 times the rate.
	for _, asOf := range []float64{t0 + 7*day, t0, math.Inf(1), math.NaN()} {
		e, ok := c.Estimate(asOf, &cfg, nil)
		if !ok {
			t.Fatalf("as of %v: no estimate", asOf)
		}
		near(t, "rate to the last change", e.Rate, 5.5/(7*day+43200), 1e-12)
	}
}
