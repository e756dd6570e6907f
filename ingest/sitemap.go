package ingest

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/changerate/changerate/parse"
)

// SitemapFetchTime is the time the sitemap file name was fetched, and
// where it came from: the last run of exactly 14 digits in its base name
// read as yyyyMMddHHmmss UTC (the WARC and CDX convention, e.g.
// "example.com-sitemap-20240115093000.xml.gz": the way to give it when the
// files are copied or fetched with a tool that sets their modification
// time to the server's Last-Modified, as wget does by default and curl
// -R), else the file's modification time mtime (a plain fetch with curl
// -o). Stdin ("-") has neither: the time it is read (now).
func SitemapFetchTime(name string, mtime, now time.Time) (time.Time, string) {
	if name == "-" {
		return now.UTC(), "read time (stdin)"
	}
	base := filepath.Base(name)
	for end := len(base); end >= 14; end-- {
		if !isDigit(base[end-1]) {
			continue
		}
		start := end
		for start > 0 && isDigit(base[start-1]) {
			start--
		}
		if end-start == 14 {
			if t, err := time.Parse("20060102150405", base[start:end]); err == nil {
				return t, "file name"
			}
		}
		end = start + 1 // skip this run of digits
	}
	return mtime.UTC(), "modification time"
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// recordReader opens the record reader of the current input's format: a
// sitemap with its fetch time (logged), WARC as it is.
func (w *worker) recordReader(name string, o *opened) (parse.RecordReader, error) {
	if w.format != "sitemap" {
		return parse.NewRecordReader(w.format, o.br, w.r.cfg.Parse, w.r.cfg.MaxRecordBytes)
	}
	var mtime time.Time
	if o.f != nil && name != "-" {
		fi, err := o.f.Stat()
		if err != nil {
			return nil, &inputError{fmt.Errorf("stat: %w", err)}
		}
		mtime = fi.ModTime()
	}
	t, from := SitemapFetchTime(name, mtime, time.Now())
	w.r.log.Info("sitemap fetch time", "input", name, "fetched", t.Format(time.RFC3339), "from", from)
	return parse.NewSitemapReader(o.br, w.r.cfg.Parse, t)
}
