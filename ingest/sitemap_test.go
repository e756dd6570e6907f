package ingest

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSitemapFetchTime(t *testing.T) {
	mtime := time.Date(2024, 2, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	now := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		want time.Time
		from string
	}{
		{"/x/example.com-sitemap-20240115093000.xml.gz", time.Date(2024, 1, 15, 9, 30, 0, 0, time.UTC), "file name"},
		{"/x/20240115093000/sitemap.xml", mtime.UTC(), "modification time"},  // the directory's name is not the file's
		{"/x/sitemap-2024011509300.xml", mtime.UTC(), "modification time"},   // 13 digits
		{"/x/sitemap-202401150930001.xml", mtime.UTC(), "modification time"}, // 15 digits
		{"/x/s-20240115093000-20240116093000.xml", time.Date(2024, 1, 16, 9, 30, 0, 0, time.UTC), "file name"},
		{"/x/s-20241315093000.xml", mtime.UTC(), "modification time"}, // month 13
		{"-", now, "read time (stdin)"},
	} {
		got, from := SitemapFetchTime(c.name, mtime, now)
		if !got.Equal(c.want) || from != c.from {
			t.Errorf("%s: %v (%s), want %v (%s)", c.name, got, from, c.want, c.from)
		}
	}
}

// TestSitemapInputs: a directory of fetched sitemaps, plain and gzip, with
// --format=auto; each observation is at its file's fetch time.
func TestSitemapInputs(t *testing.T) {
	dir := t.TempDir()
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://a.example/</loc><lastmod>2024-01-01</lastmod><changefreq>weekly</changefreq></url>
<url><loc>https://a.example/x</loc></url>
</urlset>
`
	plain := filepath.Join(dir, "a-20240115000000.xml")
	if err := os.WriteFile(plain, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create(filepath.Join(dir, "a.xml.gz"))
	gz := gzip.NewWriter(f)
	gz.Write([]byte(doc))
	gz.Close()
	f.Close()
	mt := time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(dir, "a.xml.gz"), mt, mt)
	for _, format := range []string{"sitemap", FormatAuto} {
		sink, _ := readAll(t, format, dir)
		if len(sink.obs) != 2 || sink.dead != 0 {
			t.Fatalf("%s: %d observations %d dead letters", format, len(sink.obs), sink.dead)
		}
		times := map[time.Time]bool{}
		for _, o := range sink.obs {
			times[o.Time] = true
			if o.ChangeFreq != "weekly" || o.Format != "sitemap" || !o.LastModified.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("%s: %+v", format, o)
			}
		}
		if !times[time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)] || !times[mt] {
			t.Errorf("%s: fetch times %v, want the file name's and the gzip file's mtime", format, times)
		}
	}
}
