package windows

import (
	"encoding/hex"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/sim"
)

// seasonalEvents returns the absolute event times of a weekly periodic NHPP
// (sim.WeeklyLevels) over days days from start.
func seasonalEvents(seed uint64, start time.Time, days, rate float64, hour [24]float64, day [7]float64) []float64 {
	p := sim.Periodic{Period: 7 * 86400, Levels: sim.WeeklyLevels(start, rate, hour, day)}
	ev := p.Events(sim.NewRand(seed, 1), days*86400, nil)
	t0 := float64(start.Unix())
	for i := range ev {
		ev[i] += t0
	}
	return ev
}

// TestProfileLearnsFactors checks (S2) against the factors of the
// simulation: after three weeks of a site's points (about 18,000; the
// discounted counts weigh about 9,000) every factor is within four
// Poisson standard errors (1/√count of its cell) plus 3 % (the pull of the
// prior pseudo-count) of the truth (normalised to mean 1), and the profile
// became active at the first day boundary after the learning period.
func TestProfileLearnsFactors(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	hour := sim.OfficeHours(14, 0.8)
	day := [7]float64{1.2, 1.2, 1.2, 1.2, 1.1, 0.55, 0.55}
	ev := seasonalEvents(3, start, 21, 0.01, hour, day)
	cfg := DefaultSeasonalConfig()
	var p Profile
	activeAt := 0.0
	for _, t := range ev {
		p.Operational(t, &cfg)
		p.Observe(t, &cfg)
		if p.Active() && activeAt == 0 {
			activeAt = t
		}
	}
	want := float64(start.Unix()) + 7*86400
	if activeAt < want || activeAt > want+3600 {
		t.Errorf("profile active at %v, want just after %v", time.Unix(int64(activeAt), 0).UTC(), time.Unix(int64(want), 0).UTC())
	}
	f, g := p.Factors()
	mh, md := 0.0, 0.0
	for _, v := range hour {
		mh += v / 24
	}
	for _, v := range day {
		md += v / 7
	}
	for h := range f {
		if w := hour[h] / mh; math.Abs(f[h]/w-1) > 4/math.Sqrt(float64(p.hour[h]))+0.03 {
			t.Errorf("hour %d factor %.3f, truth %.3f", h, f[h], w)
		}
	}
	for d := range g {
		if w := day[d] / md; math.Abs(g[d]/w-1) > 4/math.Sqrt(float64(p.dow[d]))+0.03 {
			t.Errorf("day %d factor %.3f, truth %.3f", d, g[d], w)
		}
	}
}

// TestOperationalTime checks (S3): Λ is non-decreasing and continuous
// across refits (a jump of at most 1 ms, the rounding), Real inverts it to
// the millisecond, and under the learned profile the points of the
// periodic process are homogeneous in operational time: the counts in the
// 24 hour-of-day bins of Λ-spacing have a chi-square (23 d.f.) below its
// 0.1 % quantile 49.7, while in real time they are far above it.
func TestOperationalTime(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	hour := sim.OfficeHours(14, 0.8)
	day := [7]float64{1.2, 1.2, 1.2, 1.2, 1.1, 0.55, 0.55}
	ev := seasonalEvents(4, start, 28, 0.01, hour, day)
	cfg := DefaultSeasonalConfig()
	var p Profile
	prevT, prevL := 0.0, 0.0
	var op, real []float64
	for _, tt := range ev {
		l := p.Operational(tt, &cfg)
		p.Observe(tt, &cfg)
		if prevT != 0 {
			if l < prevL {
				t.Fatalf("Λ decreased: Λ(%v)=%v < Λ(%v)=%v", tt, l, prevT, prevL)
			}
			if l-prevL > (tt-prevT)*30+0.002 { // factors are below 30
				t.Fatalf("Λ jumped by %v over %v s at %v", l-prevL, tt-prevT, tt)
			}
		}
		if p.Active() {
			// Λ is rounded to 1 ms; the slowest clock runs at f·g ≈ 0.1
			if r := p.Real(l); math.Abs(r-tt) > 0.01 {
				t.Fatalf("Real(Λ(%v)) = %v", tt, r)
			}
			if tt > float64(start.Unix())+14*86400 {
				op = append(op, l)
				real = append(real, tt)
			}
		}
		prevT, prevL = tt, l
	}
	chi := func(xs []float64) float64 {
		var c [24]float64
		for _, x := range xs {
			c[int(math.Mod(x, 86400)/3600)]++
		}
		e := float64(len(xs)) / 24
		s := 0.0
		for _, v := range c {
			s += (v - e) * (v - e) / e
		}
		return s
	}
	// operational time runs at rate f·g: a day of Λ is not a calendar day,
	// so bin by the equal-count spacing of a homogeneous process instead:
	// the gaps Λ_{i+1} − Λ_i must be Exp(ν); compare their coefficient of
	// variation (1 for Poisson) in both clocks.
	cv := func(xs []float64) float64 {
		var s, s2 float64
		n := float64(len(xs) - 1)
		for i := 1; i < len(xs); i++ {
			d := xs[i] - xs[i-1]
			s += d
			s2 += d * d
		}
		m := s / n
		return math.Sqrt(s2/n-m*m) / m
	}
	if c := cv(op); math.Abs(c-1) > 0.05 {
		t.Errorf("operational-time gaps: coefficient of variation %.3f, want 1 ± 0.05 (Poisson)", c)
	}
	if c := cv(real); c < 1.2 {
		t.Errorf("real-time gaps: coefficient of variation %.3f, want > 1.2 (overdispersed by the cycle)", c)
	}
	if c := chi(real); c < 49.7 {
		t.Errorf("real-time hour-of-day chi-square %.1f below 49.7: the simulation has no daily cycle?", c)
	}
}

func TestProfileEncoding(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ev := seasonalEvents(5, start, 10, 0.01, sim.OfficeHours(14, 0.8), [7]float64{1, 1, 1, 1, 1, 1, 1})
	cfg := DefaultSeasonalConfig()
	var p Profile
	for i, tt := range ev {
		p.Operational(tt, &cfg)
		p.Observe(tt, &cfg)
		if i%997 != 0 {
			continue
		}
		b := p.AppendBinary(nil)
		var q Profile
		if err := q.DecodeBinary(b); err != nil {
			t.Fatal(err)
		}
		if q != p {
			t.Fatalf("round trip differs at point %d", i)
		}
		if len(b) > 290 {
			t.Fatalf("encoding of %d bytes", len(b))
		}
	}
	if !p.Active() {
		t.Fatal("profile not active after 10 days")
	}
	if err := new(Profile).DecodeBinary([]byte{9}); err == nil {
		t.Error("bad version decoded")
	}
}

func FuzzProfileDecode(f *testing.F) {
	var p Profile
	cfg := DefaultSeasonalConfig()
	f.Add(p.AppendBinary(nil))
	for _, tt := range seasonalEvents(6, time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), 9, 0.01, sim.OfficeHours(14, 0.5), [7]float64{1, 1, 1, 1, 1, 1, 1}) {
		p.Operational(tt, &cfg)
		p.Observe(tt, &cfg)
	}
	f.Add(p.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Profile
		if err := q.DecodeBinary(b); err != nil {
			return
		}
		var r Profile
		if err := r.DecodeBinary(q.AppendBinary(nil)); err != nil || r != q {
			t.Fatalf("re-encoding differs: %v", err)
		}
		_ = q.Real(q.At(1.8e9))
	})
}

// TestProfileGolden pins the profile encoding: testdata/profile_v1.golden
// holds the hex encoding of the profile learned from a fixed simulation;
// it must still decode (older values stay readable) and re-encode to the
// same bytes. -update rewrites it.
func TestProfileGolden(t *testing.T) {
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ev := seasonalEvents(9, start, 9, 0.005, sim.OfficeHours(15, 0.6), [7]float64{1, 1, 1, 1, 1, 0.5, 0.5})
	cfg := DefaultSeasonalConfig()
	var p Profile
	for _, tt := range ev {
		p.Operational(tt, &cfg)
		p.Observe(tt, &cfg)
	}
	path := "testdata/profile_v1.golden"
	got := hex.EncodeToString(p.AppendBinary(nil)) + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(want)))
	if err != nil {
		t.Fatal(err)
	}
	var q Profile
	if err := q.DecodeBinary(b); err != nil {
		t.Fatalf("golden profile no longer decodes: %v", err)
	}
	if !q.Active() || q != p {
		t.Errorf("golden profile decodes to a different profile (active %v)", q.Active())
	}
	if string(want) != got {
		t.Errorf("encoding changed; if on purpose, keep decoding the old layout and run -update")
	}
}

// TestSeasonalConfigDefaults pins the defaults, that a zero LearningPeriod
// and MinEvents are kept (off, no minimum), and that Validate reports
// every problem at once.
func TestSeasonalConfigDefaults(t *testing.T) {
	want := SeasonalConfig{LearningPeriod: 7 * 24 * time.Hour, MinEvents: 200, PriorEvents: 5, Decay: 0.7}
	if got := DefaultSeasonalConfig().WithDefaults(); got != want {
		t.Errorf("WithDefaults changed the defaults: %+v; want %+v", got, want)
	}
	if got := DefaultSeasonalConfig(); got != want {
		t.Errorf("DefaultSeasonalConfig() = %+v; want %+v", got, want)
	}
	off := SeasonalConfig{}.WithDefaults()
	if off.Enabled() || off.LearningPeriod != 0 || off.MinEvents != 0 {
		t.Errorf("zero LearningPeriod and MinEvents not kept: %+v", off)
	}
	if err := off.Validate(); err != nil {
		t.Errorf("seasonal off: %v", err)
	}
	var zero SeasonalConfig
	if err := zero.Validate(); err != nil {
		t.Errorf("zero SeasonalConfig: %v", err)
	}
	bad := SeasonalConfig{LearningPeriod: -time.Hour, MinEvents: math.NaN(), PriorEvents: -1, Decay: 2}
	err := bad.Validate()
	for _, field := range []string{"LearningPeriod", "MinEvents", "PriorEvents", "Decay"} {
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "windows: invalid config: "+field) {
			t.Errorf("Validate = %v; want an error naming %s", err, field)
		}
	}
}

// TestSeasonalOffIsFlat: with a LearningPeriod of 0 a profile learns nothing and the
// operational time is the time itself.
func TestSeasonalOffIsFlat(t *testing.T) {
	cfg := SeasonalConfig{}.WithDefaults()
	var p Profile
	for i := 0; i < 1000; i++ {
		p.Observe(float64(1_700_000_000+i*60), &cfg)
	}
	if p.Active() || p.Learned(1_800_000_000, &cfg) {
		t.Error("profile active with a LearningPeriod of 0")
	}
	if got := p.Operational(1_700_012_345, &cfg); got != 1_700_012_345 {
		t.Errorf("Operational = %v; want t", got)
	}
}
