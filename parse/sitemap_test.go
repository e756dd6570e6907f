package parse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

type sitemapResult struct {
	obs    records.Observation
	reason string
	skip   bool
}

func readSitemap(t testing.TB, doc string, cfg Config, fetched time.Time) []sitemapResult {
	t.Helper()
	rr, err := NewSitemapReader(strings.NewReader(doc), cfg, fetched)
	if err != nil {
		t.Fatal(err)
	}
	var out []sitemapResult
	for i := 0; i < 10000; i++ {
		var obs records.Observation
		_, err := rr.Next(&obs)
		if err == io.EOF {
			return out
		}
		var pe *Error
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("read error: %v", err)
		}
		r := sitemapResult{obs: obs}
		if err != nil {
			r.reason, r.skip = pe.Reason, IsSkip(err)
			if obs != (records.Observation{}) {
				t.Fatalf("error %v left %+v", err, obs)
			}
		}
		out = append(out, r)
	}
	t.Fatal("reader does not end")
	return nil
}

func TestSitemap(t *testing.T) {
	fetched := mustTime(t, "2024-01-15T09:30:00Z")
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc> https://www.example.com/ </loc><lastmod>2024-01-14</lastmod><changefreq>Daily</changefreq><priority>0.8</priority></url>
  <url><loc>https://www.example.com/a?x=1&amp;y=2</loc><lastmod>2024-01-10T08:00+01:00</lastmod>
     <image:image><image:loc>https://www.example.com/i.png</image:loc></image:image></url>
  <url><loc>https://www.example.com/b</loc><changefreq>weekly</changefreq></url>
  <url><loc>https://www.example.com/c</loc><lastmod>2024-01-17</lastmod></url>
  <url><loc>https://www.example.com/d</loc><lastmod>2024-01-16</lastmod></url>
  <url><lastmod>2024-01-10</lastmod></url>
  <url><loc>https://www.example.com/e</loc><lastmod>2024-01-10</lastmod><changefreq>fortnightly</changefreq></url>
  <url><loc>https://www.example.com/f</loc><lastmod>2024-01-10T08:00:00</lastmod></url>
  <url><loc>https://www.example.com/g</loc><lastmod>yesterday</lastmod></url>
  <url><loc>https://www.example.com/h</loc><lastmod>2023</lastmod></url>
</urlset>`
	v := func(obj, lm, cf string) records.Observation {
		return records.Observation{Object: obj, Site: "www.example.com", Time: fetched, Kind: records.KindVisit, Format: "sitemap",
			LastModified: mustTime(t, lm), ChangeFreq: cf}
	}
	want := []sitemapResult{
		{obs: v("https://www.example.com/", "2024-01-14T00:00:00Z", "daily")},
		{obs: v("https://www.example.com/a?x=1&y=2", "2024-01-10T07:00:00Z", "")},
		{reason: ReasonNoLastMod, skip: true},
		{reason: ReasonTime},                                              // more than a day after the fetch
		{obs: v("https://www.example.com/d", "2024-01-16T00:00:00Z", "")}, // within the day
		{reason: ReasonFields},                                            // no loc
		{reason: ReasonFields},                                            // changefreq
		{reason: ReasonNoZone},                                            // no zone, none configured
		{reason: ReasonTime},                                              // not a date
		{obs: v("https://www.example.com/h", "2023-01-01T00:00:00Z", "")},
	}
	got := readSitemap(t, doc, Config{}, fetched)
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	// With a zone, the zone-less time is read in it.
	got = readSitemap(t, doc, Config{Zone: time.FixedZone("X", 3600)}, fetched)
	if o := got[7].obs; got[7].reason != "" || !o.LastModified.Equal(mustTime(t, "2024-01-10T07:00:00Z")) {
		t.Errorf("zone-less lastmod with Config.Zone: %+v", got[7])
	}
}

func TestSitemapIndexAndBrokenXML(t *testing.T) {
	fetched := mustTime(t, "2024-01-15T09:30:00Z")
	idx := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://www.example.com/s1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
<sitemap><loc>https://www.example.com/s2.xml.gz</loc></sitemap></sitemapindex>`
	got := readSitemap(t, idx, Config{}, fetched)
	if len(got) != 2 || got[0].reason != ReasonSitemapIndex || !got[0].skip || got[1].reason != ReasonSitemapIndex {
		t.Errorf("index: %+v", got)
	}
	broken := `<urlset><url><loc>https://a.example/</loc><lastmod>2024-01-01</lastmod></url><url><loc>https://a.example/b</loc></urlset>`
	got = readSitemap(t, broken, Config{}, fetched)
	if len(got) != 2 || got[0].reason != "" || got[1].reason != ReasonXML || got[1].skip {
		t.Errorf("broken: %+v", got)
	}
	if _, err := NewSitemapReader(strings.NewReader(""), Config{}, time.Time{}); !errors.Is(err, ErrNoFetchTime) {
		t.Errorf("no fetch time: %v", err)
	}
	if _, err := NewRecordReader("sitemap", strings.NewReader(""), Config{}, 0); !errors.Is(err, ErrNoFetchTime) {
		t.Errorf("NewRecordReader(sitemap): %v", err)
	}
}

func TestDetectSitemap(t *testing.T) {
	c := Detect([][]byte{[]byte(`<?xml version="1.0" encoding="UTF-8"?>`), []byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)}, Config{})
	if len(c) != 1 || c[0].Format != "sitemap" {
		t.Errorf("urlset: %+v", c)
	}
	c = Detect([][]byte{[]byte(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)}, Config{})
	if len(c) != 1 || c[0].Format != "sitemap" {
		t.Errorf("sitemapindex: %+v", c)
	}
}

// FuzzSitemap: the reader ends on any input without panicking, every
// error is a *Error with a reason or the end, and every observation is
// valid, at the fetch time, with a Last-Modified no later than a day
// after it.
func FuzzSitemap(f *testing.F) {
	for _, s := range []string{
		`<urlset><url><loc>https://a.example/</loc><lastmod>2024-01-01</lastmod><changefreq>daily</changefreq></url></urlset>`,
		`<sitemapindex><sitemap><loc>https://a.example/s.xml</loc></sitemap></sitemapindex>`,
		`<urlset><url><loc>https://a.example/</loc><lastmod>2024-01-10T08:00:00.5+01:00</lastmod><x><loc>y</loc></x></url>`,
		`<urlset><url><loc><![CDATA[https://a.example/?a=1&b=2]]></loc><lastmod>2024</lastmod></url></urlset>`,
	} {
		f.Add([]byte(s))
	}
	fetched := time.Date(2024, 1, 15, 9, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<16 {
			return
		}
		rr, err := NewSitemapReader(strings.NewReader(string(doc)), Config{}, fetched)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if i > len(doc)+1 {
				t.Fatal("reader does not end")
			}
			var obs records.Observation
			_, err := rr.Next(&obs)
			if err == io.EOF {
				return
			}
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) || pe.Reason == "" {
					t.Fatalf("error %v is not a *parse.Error", err)
				}
				continue
			}
			if verr := obs.Validate(); verr != nil || !obs.Time.Equal(fetched) || obs.LastModified.After(fetched.Add(24*time.Hour)) || obs.Format != "sitemap" {
				t.Fatalf("observation %+v: %v", obs, verr)
			}
		}
	})
}
