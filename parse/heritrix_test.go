package parse

import (
	"testing"

	"github.com/changerate/changerate/records"
)

func TestHeritrix(t *testing.T) {
	p, err := New("heritrix", Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := func(ts string, status int, object, site, digest string, ch records.ChangeFlag) *records.Observation {
		return &records.Observation{Object: object, Site: site, Time: mustTime(t, ts), Kind: records.KindVisit, Status: status, Digest: digest, Changed: ch, Format: "heritrix"}
	}
	runCases(t, p, []lineCase{
		{name: "h3", line: "2015-05-22T15:01:10.521Z   200        564 http://www.raeder.dk/robots.txt P http://www.raeder.dk/ text/plain #084 20150522150109851+648 sha1:OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N - content-size:845",
			want: v("2015-05-22T15:01:10.521Z", 200, "http://www.raeder.dk/robots.txt", "www.raeder.dk", "sha1:OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N", 0)},
		{name: "h1 bare digest", line: "2006-02-23T10:53:01.002Z   200       1234 http://www.kb.dk/ - - text/html #012 20060223095300111+50 OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N - -",
			want: v("2006-02-23T10:53:01.002Z", 200, "http://www.kb.dk/", "www.kb.dk", "sha1:OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N", 0)},
		{name: "dns", line: "2006-02-23T10:52:43.207Z     1         55 dns:www.kb.dk P http://www.kb.dk/ text/dns #049 20060223095242629+10 - - -",
			want: v("2006-02-23T10:52:43.207Z", 1, "dns:www.kb.dk", "www.kb.dk", "", 0)},
		{name: "blocked by scope", line: "2006-02-23T10:52:45.100Z -5003          - http://www.example.org/x LX http://www.kb.dk/ no-type #000 - - - -",
			want: v("2006-02-23T10:52:45.1Z", -5003, "http://www.example.org/x", "www.example.org", "", 0)},
		{name: "duplicate h1 deduplicator", line: `2012-05-23T15:06:34.759Z   200      93868 http://xn--sterbrogades-dyrlger-y0b29a.dk/a.js RX http://xn--sterbrogades-dyrlger-y0b29a.dk/ application/javascript #005 20120523150634511+45 sha1:T242YWK6TNKUJYW4PH77PTJNBNFV55Y7 http://www.xn--sterbrogades-dyrlger-y0b29a.dk/ duplicate:"144625-158-20120225195408-00005-kb-prod-har-001.kb.dk.arc,1495696",content-size:94191`,
			want: v("2012-05-23T15:06:34.759Z", 200, "http://xn--sterbrogades-dyrlger-y0b29a.dk/a.js", "xn--sterbrogades-dyrlger-y0b29a.dk", "sha1:T242YWK6TNKUJYW4PH77PTJNBNFV55Y7", records.Unchanged)},
		{name: "duplicate digest h3", line: "2020-01-01T00:00:00.000Z 200 10 https://a.example/ - - text/html #1 20200101000000000+1 sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA - content-size:10,duplicate:digest",
			want: v("2020-01-01T00:00:00Z", 200, "https://a.example/", "a.example", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", records.Unchanged)},
		{name: "server not modified", line: "2020-01-01T00:00:00.000Z 304 0 https://a.example/ - - text/html #1 20200101000000000+1 - - duplicate:server-not-modified",
			want: v("2020-01-01T00:00:00Z", 304, "https://a.example/", "a.example", "", records.Unchanged)},
		{name: "h3 extra info", line: `2020-01-01T00:00:00.000Z 200 10 https://a.example/ - - text/html #1 20200101000000000+1 sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA - - {"warcFilename":"x.warc.gz","warcFileOffset":1}`,
			want: v("2020-01-01T00:00:00Z", 200, "https://a.example/", "a.example", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0)},
		{name: "no annotations", line: "2020-01-01T00:00:00.000Z 200 10 https://a.example/ - - text/html #1 20200101000000000+1 sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			want: v("2020-01-01T00:00:00Z", 200, "https://a.example/", "a.example", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0)},
		{name: "arc metadata header", line: "metadata://netarkivet.dk/crawl/logs/crawl.log?heritrixVersion=1.14.4&harvestid=4&jobid=6 130.226.228.8 20120523150916 text/plain 412905", reason: ReasonComment, skip: true},
		{name: "broken uri", line: "2006-02-23T10:55:35.945Z    -5          - http:/ ELERLX http://raeder.dk:83/bin/view/TWiki/TWikiRegistration no-type #024 - - - err=java.lang.NullPointerException", reason: ReasonURL},
		{name: "no zone", line: "2020-01-01T00:00:00.000 200 10 https://a.example/ - - text/html #1 - - - -", reason: ReasonNoZone},
		{name: "bad time", line: "2020-13-01T00:00:00.000Z 200 10 https://a.example/ - - text/html #1 - - - -", reason: ReasonTime},
		{name: "bad status", line: "2020-01-01T00:00:00.000Z abc 10 https://a.example/ - - text/html #1 - - - -", reason: ReasonStatus},
		{name: "short", line: "2020-01-01T00:00:00.000Z 200 10 https://a.example/", reason: ReasonFields},
	})
}
