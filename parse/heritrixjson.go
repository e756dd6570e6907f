package parse

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// Heritrix KafkaCrawlLogFeed messages (topic "heritrix-crawl-log"), one JSON
// object per line or message:
//
//	{"timestamp":"2016-01-27T21:19:39.200Z","status_code":404,"url":"http://...",
//	 "content_digest":"sha1:...","annotations":"ip:173.236.225.186,duplicate:digest",
//	 "start_time_plus_duration":"20160127211938966+230","size":511,"via":"...",...}
//
// The meaning is that of a crawl.log line (see heritrix.go): a visit at
// "timestamp" with the fetch status, the digest and Unchanged for a
// duplicate:* or warcRevisit:* annotation or status 304. "annotations" may
// be a comma-separated string or an array of strings. Other fields are
// ignored.
type heritrixJSONParser struct {
	zone  *time.Location
	canon *Canonicalizer
}

type crawlFeedMessage struct {
	Timestamp     string          `json:"timestamp"`
	StatusCode    *int            `json:"status_code"`
	URL           string          `json:"url"`
	ContentDigest string          `json:"content_digest"`
	Annotations   json.RawMessage `json:"annotations"`
}

func newHeritrixJSON(cfg Config) (lineParser, error) {
	return &heritrixJSONParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), zone: cfg.Zone}, nil
}

func (p *heritrixJSONParser) Format() string { return "heritrix-json" }

func (p *heritrixJSONParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return skip(ReasonEmpty)
	}
	if t[0] != '{' {
		return reject(ReasonJSON, "not a JSON object")
	}
	var m crawlFeedMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return reject(ReasonJSON, "%v", err)
	}
	if m.URL == "" {
		return reject(ReasonFields, "crawl feed message has no url")
	}
	if m.StatusCode == nil {
		return reject(ReasonStatus, "crawl feed message has no status_code")
	}
	ts, hasZone, ok := isoTime([]byte(m.Timestamp))
	if !ok {
		return reject(ReasonTime, "crawl feed timestamp %q", trunc([]byte(m.Timestamp)))
	}
	if !hasZone {
		if p.zone == nil {
			return reject(ReasonNoZone, "crawl feed timestamp %q has no zone and none is configured", trunc([]byte(m.Timestamp)))
		}
		ts = inZone(ts, p.zone)
	}
	var ann string
	if len(m.Annotations) > 0 && m.Annotations[0] == '[' {
		var list []string
		if err := json.Unmarshal(m.Annotations, &list); err != nil {
			return reject(ReasonJSON, "annotations: %v", err)
		}
		ann = strings.Join(list, ",")
	} else if len(m.Annotations) > 0 && string(m.Annotations) != "null" {
		if err := json.Unmarshal(m.Annotations, &ann); err != nil {
			return reject(ReasonJSON, "annotations: %v", err)
		}
	}
	if *m.StatusCode < -99999 || *m.StatusCode > 999 {
		return reject(ReasonStatus, "crawl feed status_code %d", *m.StatusCode)
	}
	return fillCrawl(p.canon, "heritrix-json", ts, *m.StatusCode, []byte(m.URL), []byte(m.ContentDigest), []byte(ann), obs)
}

func (p *heritrixJSONParser) canonicalizer() *Canonicalizer { return p.canon }
