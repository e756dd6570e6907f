package parse

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// Sitemaps (sitemaps.org protocol 0.9): a <urlset> of <url> entries, each
// with a <loc> and optionally <lastmod> and <changefreq>, or a
// <sitemapindex> of <sitemap> entries naming other sitemaps.
//
// A sitemap is a site's own statement, read at the time it was fetched
// (given to NewSitemapReader; ingest takes it from the file, see
// docs/formats.md). Each <url> with a <lastmod> is a visit
// (records.KindVisit) of its <loc> at the fetch time whose LastModified is
// the <lastmod>: Last-Modified evidence, as a crawler's visit that saw the
// header, with Format "sitemap" so that the aggregator can tell the site's
// claim from what a crawler saw. <changefreq> is carried in ChangeFreq as
// the site's claim. Reasons: a <url> without <lastmod> is skipped
// ("no-lastmod": it says nothing datable); a <sitemap> entry of an index is
// skipped ("sitemap-index": its <lastmod> dates the child sitemap file, not
// a page; fetch the children and read them); a <url> without <loc>, with
// an unknown <changefreq> or an unparsable <lastmod> is rejected ("fields",
// "time"); a <lastmod> more than a day after the fetch time is rejected
// ("time": a claim from the future is false by construction; the day
// allows for dates written in the site's zone). Malformed XML ends the
// input (reason "xml"): XML cannot be resynchronised.
//
// <lastmod> is a W3C datetime: YYYY, YYYY-MM, YYYY-MM-DD (midnight UTC),
// or a date and time with a zone (seconds and fraction optional); a time
// without a zone is read in Config.Zone, or rejected ("no-zone").
type sitemapReader struct {
	dec     *xml.Decoder
	canon   *Canonicalizer
	zone    *time.Location
	fetched time.Time
	n       int64
	input   []byte
	done    bool
}

// Reasons of the sitemap reader.
const (
	ReasonXML          = "xml"           // malformed XML: the rest of the input is unusable
	ReasonNoLastMod    = "no-lastmod"    // skipped: a <url> without <lastmod>
	ReasonSitemapIndex = "sitemap-index" // skipped: a <sitemap> entry of a sitemap index
)

// sitemapMaxText bounds the text of one element.
const sitemapMaxText = MaxObjectBytes

// ErrNoFetchTime is returned by NewSitemapReader without a fetch time.
var ErrNoFetchTime = errors.New("parse: a sitemap needs the time it was fetched")

// NewSitemapReader returns a reader of the sitemap or sitemap index in r
// (decompressed), fetched at fetched (not zero).
func NewSitemapReader(r io.Reader, cfg Config, fetched time.Time) (RecordReader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fetched.IsZero() {
		return nil, ErrNoFetchTime
	}
	d := cfg.WithDefaults()
	dec := xml.NewDecoder(r)
	dec.Strict = true
	return &sitemapReader{dec: dec, canon: NewCanonicalizer(d.Profile, d.CacheEntries), zone: cfg.Zone, fetched: fetched.UTC()}, nil
}

func (s *sitemapReader) Format() string { return "sitemap" }
func (s *sitemapReader) Records() int64 { return s.n }

func (s *sitemapReader) canonicalizer() *Canonicalizer { return s.canon }

// Next reads the next <url> or <sitemap> entry.
func (s *sitemapReader) Next(obs *records.Observation) ([]byte, error) {
	*obs = records.Observation{}
	if s.done {
		return nil, io.EOF
	}
	for {
		tok, err := s.dec.RawToken()
		if err == io.EOF {
			s.done = true
			return nil, io.EOF
		}
		if err != nil {
			return s.fail(err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "url", "sitemap":
			s.n++
			f, err := s.entry(se.Name.Local)
			if err != nil {
				return s.fail(err)
			}
			s.input = fmt.Appendf(s.input[:0], "<%s> loc=%q lastmod=%q changefreq=%q", se.Name.Local, trunc(f.loc), trunc(f.lastmod), trunc(f.changefreq))
			if se.Name.Local == "sitemap" {
				return s.input, skip(ReasonSitemapIndex)
			}
			return s.input, s.fill(obs, &f)
		}
	}
}

// fail ends the input after a read error: malformed XML is a rejection
// (reason "xml"), any other error the underlying reader's.
func (s *sitemapReader) fail(err error) ([]byte, error) {
	s.done = true
	var se *xml.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errSitemapText) {
		s.n++
		return nil, reject(ReasonXML, "sitemap XML: %v (the rest of the input is not read)", err)
	}
	return nil, err
}

var errSitemapText = errors.New("element text too long")

type sitemapFields struct{ loc, lastmod, changefreq []byte }

// entry reads the children of a <url> or <sitemap> up to its end tag.
func (s *sitemapReader) entry(name string) (sitemapFields, error) {
	var f sitemapFields
	var cur *[]byte
	depth := 0
	for {
		tok, err := s.dec.RawToken()
		if err == io.EOF {
			return f, io.ErrUnexpectedEOF
		}
		if err != nil {
			return f, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			cur = nil
			if depth == 1 {
				switch t.Name.Local {
				case "loc":
					cur = &f.loc
				case "lastmod":
					cur = &f.lastmod
				case "changefreq":
					cur = &f.changefreq
				}
				if cur != nil {
					*cur = (*cur)[:0]
				}
			}
		case xml.EndElement:
			if depth == 0 {
				if t.Name.Local != name {
					return f, &xml.SyntaxError{Msg: "unexpected </" + t.Name.Local + "> in <" + name + ">"}
				}
				f.loc, f.lastmod, f.changefreq = bytes.TrimSpace(f.loc), bytes.TrimSpace(f.lastmod), bytes.TrimSpace(f.changefreq)
				return f, nil
			}
			depth--
			cur = nil
		case xml.CharData:
			if cur != nil {
				if len(*cur)+len(t) > sitemapMaxText {
					return f, fmt.Errorf("%w (<%s> over %d bytes)", errSitemapText, name, sitemapMaxText)
				}
				*cur = append(*cur, t...)
			}
		}
	}
}

func (s *sitemapReader) fill(obs *records.Observation, f *sitemapFields) error {
	if len(f.loc) == 0 {
		return reject(ReasonFields, "<url> without <loc>")
	}
	if len(f.lastmod) == 0 {
		return skip(ReasonNoLastMod)
	}
	cf := strings.ToLower(string(f.changefreq))
	if !records.ValidChangeFreq(cf) {
		return reject(ReasonFields, "<changefreq> %q is not always, hourly, daily, weekly, monthly, yearly or never", trunc(f.changefreq))
	}
	lm, err := w3cTime(f.lastmod, s.zone)
	if err != nil {
		return err
	}
	if lm.After(s.fetched.Add(24 * time.Hour)) {
		return reject(ReasonTime, "<lastmod> %s is after the sitemap's fetch time %s", lm.Format(time.RFC3339), s.fetched.Format(time.RFC3339))
	}
	obj, _, err := s.canon.Canonical(f.loc)
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Kind, obs.Format = obj, records.SiteOf(obj), s.fetched, records.KindVisit, "sitemap"
	obs.LastModified, obs.ChangeFreq = lm, cf
	return nil
}

// w3cTime parses a W3C datetime (see sitemapReader).
func w3cTime(b []byte, zone *time.Location) (time.Time, error) {
	v := string(b)
	var t time.Time
	var err error
	switch {
	case len(v) == 4:
		t, err = time.Parse("2006", v)
	case len(v) == 7:
		t, err = time.Parse("2006-01", v)
	case len(v) == 10:
		t, err = time.Parse("2006-01-02", v)
	default:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00"} {
			if t, err = time.Parse(layout, v); err == nil {
				break
			}
		}
		if err != nil {
			// A time without a zone.
			for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
				if _, perr := time.Parse(layout, v); perr == nil {
					if zone == nil {
						return time.Time{}, reject(ReasonNoZone, "<lastmod> %q has no zone and none is configured", trunc(b))
					}
					t, err = time.ParseInLocation(layout, v, zone)
					break
				}
			}
		}
	}
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, reject(ReasonTime, "<lastmod> %q is not a W3C datetime from 1970 on", trunc(b))
	}
	return t.UTC(), nil
}
