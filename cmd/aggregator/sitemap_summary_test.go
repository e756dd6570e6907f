package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// TestSitemapSummary: the filter summary says what became of sitemap
// lastmods. A crawled page whose content changes at every daily visit
// (06:00) and a page nobody crawls, both in a sitemap fetched daily at
// 12:00 whose lastmod never moves, for 10 days. The checks start with the
// first sitemap: the visit of day 1 is the first they see, and each fetch
// from day 2 on contradicts a change seen (8 disagreements). The site
// turns untrusted at its 5th, made by day 6's fetch of the crawled page,
// which sorts after the other page at the same time ("…/other" < "…/page"):
// the other page's lastmods of days 0–6 are evidence (7), those of days
// 7–9 are not (3); the crawled page's 10 are checks only.
func TestSitemapSummary(t *testing.T) {
	var in bytes.Buffer
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	stale := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d < 10; d++ {
		day := start.Add(time.Duration(d) * 24 * time.Hour)
		for _, o := range []records.Observation{
			{Object: "https://stale.example.com/page", Time: day.Add(6 * time.Hour), Kind: records.KindVisit, Digest: fmt.Sprintf("sha1:V%d", d), Status: 200, Format: "cdx"},
			{Object: "https://stale.example.com/page", Time: day.Add(12 * time.Hour), Kind: records.KindVisit, LastModified: stale, Format: "sitemap"},
			{Object: "https://stale.example.com/other", Time: day.Add(12 * time.Hour), Kind: records.KindVisit, LastModified: stale, ChangeFreq: "daily", Format: "sitemap"},
		} {
			o.Site = "stale.example.com"
			b, _ := json.Marshal(o)
			in.Write(append(b, '\n'))
		}
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--in=-", "--store=memory", "--out=-", "--emit=final", "--log-level=error"}, &in, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	want := "sitemap lastmods               20   7 evidence, 10 checks only (crawled URLs), 3 of untrusted sites; checks against visits: 0 agree, 8 disagree"
	if !strings.Contains(errb.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, errb.String())
	}
}
