package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/changerate/changerate/internal/cputime"
)

// cdxBenchFile writes a capture index of n lines: n/10 URLs of 50 sites,
// sorted by URL key, 10 captures each a day apart, every third a
// warc/revisit row; form is "cdx11", "wayback" (7 columns) or "cdxj".
func cdxBenchFile(b *testing.B, form string, n int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "index."+form)
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if form == "cdx11" {
		w.WriteString(" CDX N b a m s k r M S V g\n")
	}
	digests := []string{"OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB", "LNMEDYOENSOEI5VPADCKL3CB6N3GWXPR", "YTEQQRWKL47VHUWFV2NXX7XLEOHMNWZ6"}
	for i := 0; i < n; i++ {
		u, c := i/10, i%10
		key := fmt.Sprintf("com,site%d)/path/to/page%d.html", u%50, u)
		url := fmt.Sprintf("http://www.site%d.com/path/to/page%d.html", u%50, u)
		ts := fmt.Sprintf("2019%02d%02d120000", 1+c/28, 1+c%28)
		mime, status, dg := "text/html", "200", digests[(c/2)%3]
		if c%3 == 2 {
			mime, status = "warc/revisit", "-"
		}
		switch form {
		case "cdx11":
			fmt.Fprintf(w, "%s %s %s %s %s %s - - 2258 %d crawl-00001.warc.gz\n", key, ts, url, mime, status, dg, i*3000)
		case "wayback":
			fmt.Fprintf(w, "%s %s %s %s %s %s 2258\n", key, ts, url, mime, status, dg)
		case "cdxj":
			fmt.Fprintf(w, `%s %s {"url": "%s", "mime": "%s", "status": "%s", "digest": "%s", "length": "2258", "offset": "%d", "filename": "crawl-00001.warc.gz"}`+"\n",
				key, ts, url, mime, status, dg, i*3000)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkRunCDX: capture-index lines through ingest (file → parse →
// JSON → batch) into a sink that drops the messages, in lines per second
// of wall clock and of CPU.
func BenchmarkRunCDX(b *testing.B) {
	const lines = 200000
	for _, c := range []struct{ form, format string }{{"cdx11", "cdx"}, {"wayback", "cdx"}, {"cdxj", "cdxj"}} {
		b.Run(c.form, func(b *testing.B) {
			p := cdxBenchFile(b, c.form, lines)
			cfg := Config{Format: c.format, Paths: []string{p}, ProgressInterval: -1}
			b.ReportAllocs()
			cpu0 := cputime.Process()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sum, err := Run(context.Background(), cfg, &discardSink{}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if sum.Inputs[0].Observations != lines {
					b.Fatalf("%d observations, rejects %v", sum.Inputs[0].Observations, sum.Inputs[0].Rejects)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*lines)/b.Elapsed().Seconds(), "lines/s")
			b.ReportMetric(float64(b.N*lines)/(cputime.Process()-cpu0).Seconds(), "lines/cpu-s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
