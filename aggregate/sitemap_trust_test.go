package aggregate

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// sitemapSite is a synthetic site: pages whose true change times are
// known, half of them also crawled daily (digest = content version), and
// a sitemap fetched daily whose lastmod follows the site's policy.
type sitemapSite struct {
	host   string
	policy string // honest, honest-date, now (the fetch time), stale (never moves)
}

func simulateSitemaps(sites []sitemapSite, days int, seed uint64) []records.Observation {
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Duration(days) * 24 * time.Hour)
	var out []records.Observation
	for _, s := range sites {
		for p := 0; p < 20; p++ {
			url := fmt.Sprintf("https://%s/page%d", s.host, p)
			// Poisson changes, one every 3 days on average.
			var changes []time.Time
			for t := start; ; {
				t = t.Add(time.Duration(rng.ExpFloat64() * 3 * 24 * float64(time.Hour)))
				if t.After(end) {
					break
				}
				changes = append(changes, t)
			}
			version := func(at time.Time) int {
				return sort.Search(len(changes), func(i int) bool { return changes[i].After(at) })
			}
			crawled := p < 10
			for d := 0; d < days; d++ {
				day := start.Add(time.Duration(d) * 24 * time.Hour)
				if crawled {
					at := day.Add(6*time.Hour + time.Duration(p)*time.Minute)
					out = append(out, records.Observation{Object: url, Site: s.host, Time: at, Kind: records.KindVisit,
						Digest: fmt.Sprintf("sha1:V%d", version(at)), Status: 200, Format: "cdx"})
				}
				f := day.Add(12 * time.Hour)
				var lm time.Time
				switch s.policy {
				case "honest", "honest-date":
					v := version(f)
					if v == 0 {
						lm = start.Add(-30 * 24 * time.Hour)
					} else {
						lm = changes[v-1]
					}
					if s.policy == "honest-date" {
						lm = lm.Truncate(24 * time.Hour)
					}
				case "now":
					lm = f
				case "stale":
					lm = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
				}
				out = append(out, records.Observation{Object: url, Site: s.host, Time: f, Kind: records.KindVisit,
					LastModified: lm, ChangeFreq: "daily", Format: "sitemap"})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// TestSitemapTrust: on synthetic sites whose true change times are known,
// the honest sites' lastmods (timestamps or dates alone) are never
// contradicted and keep counting as evidence; a site whose lastmod is the
// fetch time, and one whose lastmod never moves, lose trust, and their
// sitemap-only pages' lastmods stop counting.
func TestSitemapTrust(t *testing.T) {
	m := DefaultModel()
	if !m.Seasonal.Enabled() {
		t.Fatal("the default model has no site state")
	}
	sites := []sitemapSite{{"honest.example", "honest"}, {"dates.example", "honest-date"}, {"now.example", "now"}, {"stale.example", "stale"}}
	det := NewDetector(&m)
	objs := map[string]*Object{}
	type count struct{ evidence, untrusted, crawled, applied, noInfo int }
	counts := map[string]*count{}
	for _, s := range sites {
		counts[s.host] = &count{}
	}
	firstUntrusted := map[string]time.Time{}
	var eff Effects
	for _, obs := range simulateSitemaps(sites, 60, 1) {
		o := objs[obs.Object]
		if o == nil {
			o = &Object{}
			objs[obs.Object] = o
		}
		eff.Reset()
		oc := det.Apply(obs.Object, o, &obs, &eff)
		if obs.Format != "sitemap" {
			continue
		}
		c := counts[obs.Site]
		switch eff.SitemapUse {
		case SitemapEvidence:
			c.evidence++
		case SitemapUntrusted:
			c.untrusted++
			if firstUntrusted[obs.Site].IsZero() {
				firstUntrusted[obs.Site] = obs.Time
			}
		case SitemapCrawled:
			c.crawled++
		default:
			t.Fatalf("sitemap observation without a use: %+v", obs)
		}
		if oc == Applied {
			c.applied++
		} else {
			c.noInfo++
		}
	}
	for _, s := range sites {
		st := det.Site(s.host)
		if st == nil {
			t.Fatalf("%s: no site state", s.host)
		}
		tr, c := st.Sitemap, counts[s.host]
		t.Logf("%-15s %-11s agree %4d disagree %4d trust %.3f trusted %-5v | lastmods: evidence %d untrusted %d crawled %d (first untrusted %s)",
			s.host, s.policy, tr.Agree, tr.Disagree, tr.Trust(), tr.Trusted(), c.evidence, c.untrusted, c.crawled, firstUntrusted[s.host].Format("01-02"))
		// 10 crawled pages × 60 fetches are checks only.
		if c.crawled != 600 {
			t.Errorf("%s: %d crawled pages' lastmods, want 600", s.host, c.crawled)
		}
		switch s.policy {
		case "honest", "honest-date":
			if tr.Disagree != 0 || tr.Agree < 50 || !tr.Trusted() || c.untrusted != 0 || c.evidence != 600 {
				t.Errorf("%s: an honest site: %+v, %+v", s.host, tr, *c)
			}
		default:
			// Lost within the first week; every later lastmod of its
			// sitemap-only pages is no evidence.
			if tr.Trusted() || firstUntrusted[s.host].IsZero() || firstUntrusted[s.host].After(time.Date(2024, 1, 8, 0, 0, 0, 0, time.UTC)) || c.untrusted < 500 {
				t.Errorf("%s: a lying site: %+v, %+v, untrusted from %s", s.host, tr, *c, firstUntrusted[s.host])
			}
		}
		share := float64(tr.Agree) / float64(tr.Checks())
		switch s.policy {
		case "now":
			// A claim "changed at the fetch time" agrees exactly when the
			// page changed in the day between the visits around it:
			// probability 1 − e^{−1/3} = 0.283 (one change per 3 days);
			// tolerance 3 standard errors of the share.
			p := 1 - math.Exp(-1.0/3)
			if se := math.Sqrt(p * (1 - p) / float64(tr.Checks())); math.Abs(share-p) > 3*se {
				t.Errorf("%s: agreement %.3f, want %.3f ± %.3f", s.host, share, p, 3*se)
			}
		case "stale":
			// Never moves: only a page that never changed could agree.
			if tr.Agree != 0 {
				t.Errorf("%s: %d agreements", s.host, tr.Agree)
			}
		}
	}
}

func TestSitemapStateEncoding(t *testing.T) {
	var o Object
	m := DefaultModel()
	var eff Effects
	at := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	o.Apply(&records.Observation{Object: "https://a.example/", Time: at, Kind: records.KindVisit, Format: "sitemap", LastModified: at.Add(-time.Hour)}, &m, &eff)
	o.Apply(&records.Observation{Object: "https://a.example/", Time: at.Add(time.Hour), Kind: records.KindVisit, Digest: "sha1:A", Status: 200}, &m, &eff)
	b := o.AppendBinary(nil)
	if b[0] != encodingVersionSitemap {
		t.Fatalf("version %d", b[0])
	}
	var back Object
	if err := back.DecodeBinary(b); err != nil || back.sm != o.sm || string(back.AppendBinary(nil)) != string(b) {
		t.Fatalf("round trip: %v %+v %+v", err, back.sm, o.sm)
	}
	if err := back.DecodeBinary(append(b[:len(b)-5:len(b)-5], 0x40, 0, 0, 0, 0)); err == nil {
		t.Error("bad sitemap flags decoded")
	}
	st := SiteState{Sitemap: SitemapTrust{Agree: 3, Disagree: 9}}
	sb := st.AppendBinary(nil)
	var sback SiteState
	if err := sback.DecodeBinary(sb); err != nil || sback.Sitemap != st.Sitemap || sb[0] != siteVersionSitemap {
		t.Fatalf("site round trip: %v %+v", err, sback.Sitemap)
	}
	if (&SiteState{}).AppendBinary(nil)[0] != siteVersion {
		t.Error("a site without checks changed its encoding version")
	}
}

func TestSitemapMetricsStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewProcessor(DefaultConfig(), newMemory(t), stream.NewMemorySink(), slog.New(slog.DiscardHandler), reg, time.Now); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"changerate_aggregator_sitemap_lastmods_total": {"use=evidence", "use=crawled", "use=untrusted"},
		"changerate_aggregator_sitemap_checks_total":   {"verdict=agree", "verdict=disagree", "verdict=undecided"},
	} {
		got := series(t, reg, name)
		for _, w := range want {
			if v, ok := got[w]; !ok || v != 0 {
				t.Errorf("%s{%s}: %v %v, want present at 0", name, w, v, ok)
			}
		}
	}
}
