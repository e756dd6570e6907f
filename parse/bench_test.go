package parse

import (
	"fmt"
	"testing"

	"github.com/changerate/changerate/internal/cputime"

	"github.com/changerate/changerate/records"
)

// benchLines returns n distinct-looking lines over k distinct URLs (real
// logs repeat URLs: the NASA day has 30,969 requests of 2,088 URLs).
func benchLines(format string, n, k int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		u := i % k
		switch format {
		case "squid":
			out[i] = fmt.Appendf(nil, "1157689320.%03d   %4d 10.105.21.%d TCP_MISS/200 10182 GET http://www.site%d.com/path/to/page%d.html badeyek DIRECT/175.16.199.61 text/html",
				i%1000, i%5000, i%250, u%50, u)
		case "clf":
			out[i] = fmt.Appendf(nil, `83.149.9.%d - - [17/May/2015:10:%02d:%02d +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-%d.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36"`,
				i%250, i%60, (i/60)%60, u)
		case "heritrix":
			out[i] = fmt.Appendf(nil, "2015-05-22T15:01:10.521Z   200        564 http://www.raeder%d.dk/page%d.html P http://www.raeder.dk/ text/html #084 20150522150109851+648 sha1:OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N - content-size:845", u%50, u)
		}
	}
	return out
}

func benchParser(b *testing.B, format string) {
	p, err := New(format, Config{})
	if err != nil {
		b.Fatal(err)
	}
	lines := benchLines(format, 1<<14, 2000)
	var obs records.Observation
	var bytes int64
	for _, l := range lines {
		bytes += int64(len(l)) + 1
		if err := p.Parse(l, &obs); err != nil {
			b.Fatalf("%s: %v", l, err)
		}
	}
	b.SetBytes(bytes / int64(len(lines)))
	b.ReportAllocs()
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Parse(lines[i&(len(lines)-1)], &obs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	// Lines per second of this process's CPU time: on a loaded machine the
	// wall-clock rate understates what one core does.
	b.ReportMetric(float64(b.N)/(cputime.Process()-cpu0).Seconds(), "lines/cpu-s")
}

// BenchmarkParseSquid: Squid native lines over 2,000 URLs (warm cache).
func BenchmarkParseSquid(b *testing.B) { benchParser(b, "squid") }

// BenchmarkParseCLF: Combined lines over 2,000 URLs (warm cache).
func BenchmarkParseCLF(b *testing.B) { benchParser(b, "clf") }

// BenchmarkParseHeritrix: crawl.log lines (the digest string allocates).
func BenchmarkParseHeritrix(b *testing.B) { benchParser(b, "heritrix") }

// BenchmarkCanonicalMiss: canonicalisation without the cache, fast path
// (already canonical) and slow path (library).
func BenchmarkCanonicalMiss(b *testing.B) {
	for _, c := range []struct{ name, url string }{
		{"fast", "http://www.example.com/path/to/page.html?a=1&b=2"},
		{"slow", "HTTP://WWW.Example.com:80/path/./to/%7epage.html?a=1&b=2#frag"},
	} {
		b.Run(c.name, func(b *testing.B) {
			cn := NewCanonicalizer("", -1)
			raw := []byte(c.url)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, _, err := cn.Canonical(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
