package aggregate

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// TestChangeProfile: pages of one news site change 24–48 times a day,
// mostly in office hours (Last-Modified dates known), crawled every 5
// minutes. The site's change
// profile becomes active after the learning period, and with it the quiet
// pages' change alerts after the learning period are at most 5 % (the
// pre-issue-14 rule, every shift against a flat baseline, must do worse, or
// the scenario tests nothing).
func TestChangeProfile(t *testing.T) {
	r := runChangeScenario()
	if !r.active {
		t.Fatal("the site's change profile is not active after 21 days")
	}
	t.Logf("pages with change alerts after the learning period: seasonal %d/%d, before issue 14 (flat, every shift) %d/%d; learned hour factors 03h %.2f, 10h %.2f",
		r.seasonal, r.pages, r.flat, r.pages, r.f[3], r.f[10])
	if float64(r.seasonal) > 0.05*float64(r.pages) {
		t.Errorf("%d of %d quiet pages alerted with the seasonal change baseline (> 5 %%)", r.seasonal, r.pages)
	}
	if r.flat <= r.seasonal {
		t.Errorf("flat baseline alerted %d pages, seasonal %d: the scenario has no visible cycle", r.flat, r.seasonal)
	}
}

type changeScenarioResult struct {
	pages, seasonal, flat int
	active                bool
	f                     [24]float64
}

// runChangeScenario runs TestChangeProfile's simulation with the defaults
// and with the pre-issue-14 rule.
func runChangeScenario() changeScenarioResult {
	const pages, days = 30, 21
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	rng := sim.NewRand(77, 1)
	type ev struct {
		t   float64
		obs records.Observation
	}
	var evs []ev
	t0 := float64(start.Unix())
	at := func(s float64) time.Time { return time.UnixMilli(int64(math.Round(s * 1000))).UTC() }
	names := make([]string, pages)
	for i := range names {
		names[i] = fmt.Sprintf("http://news.example.org/story-%02d", i)
		rate := (24 + 24*rng.Float64()) / 86400 // 24–48 changes a day
		levels := sim.WeeklyLevels(start, rate, sim.OfficeHours(10, 0.9), [7]float64{1.2, 1.2, 1.2, 1.2, 1.2, 0.5, 0.5})
		changes := sim.Periodic{Period: 7 * 86400, Levels: levels}.Events(rng, days*86400, nil)
		visits := sim.Regular{Interval: 300}.Times(rng, rng.Float64()*300, days*86400, nil)
		for _, v := range sim.Observe(changes, visits, true, nil) {
			o := records.Observation{Object: names[i], Site: "news.example.org", Kind: records.KindVisit, Time: at(t0 + v.Time),
				Changed: records.Unchanged, LastModified: at(t0 + math.Floor(v.LastModified))}
			if v.Changed {
				o.Changed = records.Changed
			}
			evs = append(evs, ev{v.Time, o})
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].t < evs[b].t })
	learned := start.Add(7 * 24 * time.Hour)
	run := func(m Model) (alerted int, det *detector) {
		det = newDetector(&m)
		objs := map[string]*Object{}
		var eff Effects
		var out []records.Alert
		for i := range evs {
			o := objs[evs[i].obs.Object]
			if o == nil {
				o = &Object{}
				objs[evs[i].obs.Object] = o
			}
			eff.Reset()
			det.apply(evs[i].obs.Object, det.site(Site(evs[i].obs.Object)), o, &evs[i].obs, &eff)
			out = append(out, det.take()...)
		}
		det.flush()
		out = append(out, det.take()...)
		seen := map[string]bool{}
		for _, a := range out {
			if a.AsOf.Before(learned) {
				continue
			}
			if a.Scope == records.AlertScopeSite {
				for _, o := range a.TopObjects {
					seen[o.Object] = true
				}
			} else {
				seen[a.Object] = true
			}
		}
		return len(seen), det
	}
	seasonal, det := run(DefaultModel())
	st := det.sites["news.example.org"].st
	f, _ := st.Change.Factors()
	flat, _ := run(beforeModel())
	return changeScenarioResult{pages: pages, seasonal: seasonal, flat: flat, active: st.Change.Active(), f: f}
}

func FuzzSiteStateDecode(f *testing.F) {
	var st SiteState
	f.Add(st.AppendBinary(nil))
	r := runChangeScenarioState()
	f.Add(r.AppendBinary(nil))
	var tr SiteState // a trend of complete histories (estimators/trend.go)
	tr.Trend.Enter(1.5e9, 1.6e9)
	tr.Trend.Change(1.7e9, 3)
	f.Add(tr.AppendBinary(nil))
	tr.Flags = estimators.FlagPool{N: 12, U: 40, UR: 80, UR2: 200, U2: 150} // version 3: spacing sums
	f.Add(tr.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s SiteState
		if err := s.DecodeBinary(b); err != nil {
			return
		}
		var u SiteState
		if err := u.DecodeBinary(s.AppendBinary(nil)); err != nil || u != s {
			t.Fatalf("re-encoding differs: %v", err)
		}
	})
}

// runChangeScenarioState returns a site state with an active access
// profile, for the fuzz corpus.
func runChangeScenarioState() SiteState {
	var st SiteState
	cfg := DefaultModel().Seasonal
	for i := 0; i < 9*24*60; i++ {
		x := 1.7e9 + float64(i)*60
		st.Access.Operational(x, &cfg)
		st.Access.Observe(x, &cfg)
	}
	return st
}
