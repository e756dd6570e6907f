// Package sample generates the bundled sample logs of the embedded demo and
// of the end-to-end tests: a Heritrix crawl.log of a crawler that visits
// pages at regular intervals and a Squid access.log of a caching proxy whose
// revalidations come at irregular times, for pages whose true change and
// access rates are known. Generation is deterministic for a seed, so the
// demo and the tests see the same input every time; nothing is shipped as
// a file.
package sample

import (
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Page is one simulated object with its true rates.
type Page struct {
	URL string
	// ChangeRate and AccessRate are the true Poisson rates, per second.
	ChangeRate, AccessRate float64
	// AccessRateAfter, when positive, is the access rate from SurgeAt on:
	// the page's accesses shift (Config.Surge).
	AccessRateAfter float64
	SurgeAt         time.Time
}

// Surge adds a proxied page whose access rate rises Factor-fold at At
// after Start: a rate shift whose time and size are known, for the
// demo's alerts.
type Surge struct {
	At     time.Duration
	Factor float64
}

// SurgePath is the path of the page of Config.Surge on ProxyHost.
const SurgePath = "/sale/item-00"

// surgeBase is the surge page's access interval before the surge.
const surgeBase = 20 * time.Minute

// Config sets the simulation. The zero value is not valid; use Default.
type Config struct {
	Seed uint64
	// Start is when observation begins; Duration how long it lasts.
	Start    time.Time
	Duration time.Duration
	// CrawlEvery is the crawler's revisit interval (regular visits).
	CrawlEvery time.Duration
	// CacheTTL is how long the proxy serves its copy before revalidating.
	CacheTTL time.Duration
	// PerClass is the number of pages of each change class.
	PerClass int
	// Host is the site of the crawled pages; ProxyHost that of the proxied ones.
	Host, ProxyHost string
	// Surge, when set, adds one proxied page (SurgePath, changing daily)
	// accessed every 20 minutes on average, then Surge.Factor times as
	// often from Surge.At on.
	Surge *Surge
}

// Default is the demo's configuration: 30 days, hourly crawls, 5 pages per
// change class.
func Default() Config {
	return Config{
		Seed: 1, Start: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Duration: 30 * 24 * time.Hour,
		CrawlEvery: time.Hour, CacheTTL: 30 * time.Minute, PerClass: 5,
		Host: "news.example.org", ProxyHost: "shop.example.com",
	}
}

// Classes are the true mean change intervals of the generated pages.
var Classes = []struct {
	Name     string
	Interval time.Duration
}{
	{"two-hourly", 2 * time.Hour},
	{"six-hourly", 6 * time.Hour},
	{"daily", 24 * time.Hour},
	{"weekly", 7 * 24 * time.Hour},
}

// Pages returns the crawled pages of c (sorted by URL).
func (c Config) Pages() []Page {
	var ps []Page
	for _, cl := range Classes {
		for i := 0; i < c.PerClass; i++ {
			ps = append(ps, Page{URL: fmt.Sprintf("http://%s/%s/story-%02d.html", c.Host, cl.Name, i),
				ChangeRate: 1 / cl.Interval.Seconds()})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].URL < ps[j].URL })
	return ps
}

// ProxyPages returns the proxied pages of c: each change class crossed with
// an access rate of one per 5 or 20 minutes.
func (c Config) ProxyPages() []Page {
	var ps []Page
	for _, cl := range Classes {
		for i := 0; i < c.PerClass; i++ {
			every := 5 * time.Minute
			if i%2 == 1 {
				every = 20 * time.Minute
			}
			ps = append(ps, Page{URL: fmt.Sprintf("http://%s/%s/item-%02d", c.ProxyHost, cl.Name, i),
				ChangeRate: 1 / cl.Interval.Seconds(), AccessRate: 1 / every.Seconds()})
		}
	}
	if c.Surge != nil {
		ps = append(ps, Page{URL: "http://" + c.ProxyHost + SurgePath, ChangeRate: 1 / (24 * time.Hour).Seconds(),
			AccessRate: 1 / surgeBase.Seconds(), AccessRateAfter: c.Surge.Factor / surgeBase.Seconds(), SurgeAt: c.Start.Add(c.Surge.At)})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].URL < ps[j].URL })
	return ps
}

// changeTimes draws a Poisson process of rate per second over [0, d).
func changeTimes(r *rand.Rand, rate float64, d float64) []float64 {
	var ts []float64
	for t := r.ExpFloat64() / rate; t < d; t += r.ExpFloat64() / rate {
		ts = append(ts, t)
	}
	return ts
}

// versionAt is the number of changes at or before t.
func versionAt(changes []float64, t float64) int {
	return sort.SearchFloat64s(changes, math.Nextafter(t, math.Inf(1)))
}

func digest(url string, version int) string {
	h := sha1.Sum([]byte(fmt.Sprintf("%s#%d", url, version)))
	return base32.StdEncoding.EncodeToString(h[:])
}

type line struct {
	t    float64
	text string
}

// WriteCrawlLog writes a Heritrix (H3) crawl.log of the crawled pages:
// every page visited every CrawlEvery, the content digest changing with each
// true change. Visits of one round are spread over the round's first minutes.
func (c Config) WriteCrawlLog(w io.Writer) error {
	r := rand.New(rand.NewPCG(c.Seed, 0xc4a71))
	d := c.Duration.Seconds()
	var lines []line
	for _, p := range c.Pages() {
		changes := changeTimes(r, p.ChangeRate, d)
		offset := r.Float64() * 600
		for t := offset; t < d; t += c.CrawlEvery.Seconds() {
			at := c.Start.Add(time.Duration(t * float64(time.Second))).UTC()
			size := 8000 + r.IntN(4000)
			text := fmt.Sprintf("%s   200      %5d %s L http://%s/ text/html #%03d %s+%d sha1:%s - content-size:%d",
				at.Format("2006-01-02T15:04:05.000Z"), size, p.URL, c.Host, r.IntN(50),
				at.Add(-150*time.Millisecond).Format("20060102150405.000"), 120+r.IntN(200),
				digest(p.URL, versionAt(changes, t)), size+300)
			lines = append(lines, line{t, text})
		}
	}
	return writeSorted(w, lines)
}

// WriteSquidLog writes a Squid native access.log of the proxied pages:
// Poisson accesses; a cached copy is served (TCP_MEM_HIT) until it is older
// than CacheTTL, then revalidated (TCP_REFRESH_MODIFIED when the page changed
// since it was cached, TCP_REFRESH_UNMODIFIED otherwise).
func (c Config) WriteSquidLog(w io.Writer) error {
	r := rand.New(rand.NewPCG(c.Seed, 0x5a1d))
	d := c.Duration.Seconds()
	ttl := c.CacheTTL.Seconds()
	var lines []line
	for i, p := range c.ProxyPages() {
		changes := changeTimes(r, p.ChangeRate, d)
		cachedAt, cachedVersion := -1.0, -1
		client := fmt.Sprintf("10.1.%d.%d", i/200, i%200+1)
		for t := nextAccess(r, p, c.Start, -1); t < d; t = nextAccess(r, p, c.Start, t) {
			v := versionAt(changes, t)
			var code string
			switch {
			case cachedAt < 0:
				code = "TCP_MISS/200"
				cachedAt, cachedVersion = t, v
			case t-cachedAt <= ttl:
				code = "TCP_MEM_HIT/200"
			case v != cachedVersion:
				code = "TCP_REFRESH_MODIFIED/200"
				cachedAt, cachedVersion = t, v
			default:
				code = "TCP_REFRESH_UNMODIFIED/200"
				cachedAt = t
			}
			hier := "NONE/-"
			if code != "TCP_MEM_HIT/200" {
				hier = "DIRECT/192.0.2.10"
			}
			unix := float64(c.Start.Unix()) + t
			text := fmt.Sprintf("%.3f %6d %s %s %d GET %s - %s text/html",
				unix, 20+r.IntN(300), client, code, 2000+r.IntN(3000), p.URL, hier)
			lines = append(lines, line{t, text})
		}
	}
	return writeSorted(w, lines)
}

// nextAccess draws p's next access after t seconds from start (t < 0:
// the first one): a Poisson process whose rate steps to AccessRateAfter at
// SurgeAt when that is set (memoryless: a draw that crosses the step is
// drawn again from the step at the new rate).
func nextAccess(r *rand.Rand, p Page, start time.Time, t float64) float64 {
	t = max(t, 0)
	surge := math.Inf(1)
	if p.AccessRateAfter > 0 {
		surge = p.SurgeAt.Sub(start).Seconds()
	}
	if t >= surge {
		return t + r.ExpFloat64()/p.AccessRateAfter
	}
	if n := t + r.ExpFloat64()/p.AccessRate; n < surge {
		return n
	}
	return surge + r.ExpFloat64()/p.AccessRateAfter
}

func writeSorted(w io.Writer, lines []line) error {
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].t < lines[j].t })
	for _, l := range lines {
		if _, err := io.WriteString(w, l.text+"\n"); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
	}
	return nil
}
