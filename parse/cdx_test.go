package parse

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/changerate/changerate/records"
)

const (
	dgA = "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB"
	dgB = "LNMEDYOENSOEI5VPADCKL3CB6N3GWXPR"
)

func cdxVisit(t *testing.T, format, ts string, status int, object, site, digest string, ch records.ChangeFlag) *records.Observation {
	return &records.Observation{Object: object, Site: site, Time: mustTime(t, ts), Kind: records.KindVisit, Status: status,
		Digest: digest, Changed: ch, Format: format}
}

// TestCDX runs the lines in order through one parser: the header and the
// revisit memory are state of the input.
func TestCDX(t *testing.T) {
	p, err := New("cdx", Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := func(ts string, status int, object, site, digest string, ch records.ChangeFlag) *records.Observation {
		return cdxVisit(t, "cdx", ts, status, object, site, digest, ch)
	}
	runCases(t, p, []lineCase{
		{name: "cdx11 without header", line: "org,iana)/ 20140126200624 http://www.iana.org/ text/html 200 " + dgA + " - - 2258 334 iana.warc.gz",
			want: v("2014-01-26T20:06:24Z", 200, "http://www.iana.org/", "www.iana.org", "sha1:"+dgA, 0)},
		{name: "wayback api 7 columns, default port dropped", line: "com,cnn)/ 20010410213930 http://www.cnn.com:80/ text/html 200 " + dgB + " 12942",
			want: v("2001-04-10T21:39:30Z", 200, "http://www.cnn.com/", "www.cnn.com", "sha1:"+dgB, 0)},
		{name: "cdx9", line: "com,cnn)/ 20010410213931 http://www.cnn.com/ text/html 200 " + dgB + " - 334 x.arc.gz",
			want: v("2001-04-10T21:39:31Z", 200, "http://www.cnn.com/", "www.cnn.com", "sha1:"+dgB, 0)},
		{name: "pywb header", line: " CDX N b a m s k r M S V g", reason: ReasonComment, skip: true},
		{name: "capture", line: "org,iana)/x 20140126200826 http://www.iana.org/x application/octet-stream 200 " + dgB + " - - 34054 620049 iana.warc.gz",
			want: v("2014-01-26T20:08:26Z", 200, "http://www.iana.org/x", "www.iana.org", "sha1:"+dgB, 0)},
		{name: "revisit takes the status of its capture", line: "org,iana)/x 20140126200912 http://www.iana.org/x warc/revisit - " + dgB + " - - 546 667073 iana.warc.gz",
			want: v("2014-01-26T20:09:12Z", 200, "http://www.iana.org/x", "www.iana.org", "sha1:"+dgB, records.Unchanged)},
		{name: "redirect", line: "com,dw)/ 20191001000000 http://dw.com/ unk 301 " + dgA + " - - 1 2 f",
			want: v("2019-10-01T00:00:00Z", 301, "http://dw.com/", "dw.com", "sha1:"+dgA, 0)},
		{name: "revisit of a redirect is no unchanged visit", line: "com,dw)/ 20191002000000 http://dw.com/ warc/revisit - " + dgA + " - - 1 2 f",
			want: v("2019-10-02T00:00:00Z", 301, "http://dw.com/", "dw.com", "sha1:"+dgA, 0)},
		{name: "revisit of another key's capture", line: "com,ex)/ 20191003000000 http://ex.com/ warc/revisit - " + dgA + " - - 1 2 f",
			want: v("2019-10-03T00:00:00Z", 0, "http://ex.com/", "ex.com", "sha1:"+dgA, records.Unchanged)},
		{name: "no digest", line: "com,ex)/ 20191004000000 http://ex.com/ text/html 200 - - - 1 2 f",
			want: v("2019-10-04T00:00:00Z", 200, "http://ex.com/", "ex.com", "", 0)},
		{name: "not modified", line: "com,ex)/ 20191005000000 http://ex.com/ text/html 304 - - - 1 2 f",
			want: v("2019-10-05T00:00:00Z", 304, "http://ex.com/", "ex.com", "", records.Unchanged)},
		{name: "no original url: the key turned back into one", line: "com,ex)/a?b=1 20191006000000 - text/html 200 " + dgA + " - - 1 2 f",
			want: v("2019-10-06T00:00:00Z", 200, "http://ex.com/a?b=1", "ex.com", "sha1:"+dgA, 0)},
		{name: "columns against the header", line: "com,cnn)/ 20010410213930 http://www.cnn.com:80/ text/html 200 " + dgB + " 12942", reason: ReasonFields},
		{name: "short time", line: "com,ex)/ 2019100400 http://ex.com/ text/html 200 - - - 1 2 f", reason: ReasonTime},
		{name: "time before 1970", line: "com,ex)/ 19691231235959 http://ex.com/ text/html 200 - - - 1 2 f", reason: ReasonTime},
		{name: "bad status", line: "com,ex)/ 20191004000000 http://ex.com/ text/html 2000 - - - 1 2 f", reason: ReasonStatus},
		{name: "bad url", line: "com,ex)/ 20191004000000 http:// text/html 200 - - - 1 2 f", reason: ReasonURL},
		{name: "header without time", line: " CDX N a m s k", reason: ReasonFields},
		{name: "after a bad header, by column count", line: "com,cnn)/ 20010410213930 http://www.cnn.com/ text/html 200 " + dgB + " 12942",
			want: v("2001-04-10T21:39:30Z", 200, "http://www.cnn.com/", "www.cnn.com", "sha1:"+dgB, 0)},
		{name: "other column order", line: " CDX b a k", reason: ReasonComment, skip: true},
		{name: "three columns", line: "20200101000000 https://a.example/ sha1:" + dgA,
			want: v("2020-01-01T00:00:00Z", 0, "https://a.example/", "a.example", "sha1:"+dgA, 0)},
		{name: "blank", line: "  ", reason: ReasonEmpty, skip: true},
		{name: "too many columns", line: strings.Repeat("x ", 30), reason: ReasonFields},
	})
}

func TestCDXStartInputForgetsHeader(t *testing.T) {
	p, _ := New("cdx", Config{})
	var obs records.Observation
	if err := p.Parse([]byte(" CDX b a k"), &obs); !IsSkip(err) {
		t.Fatalf("header: %v", err)
	}
	seven := []byte("com,cnn)/ 20010410213930 http://www.cnn.com/ text/html 200 " + dgB + " 12942")
	if err := p.Parse(seven, &obs); Reason(err) != ReasonFields {
		t.Fatalf("a 7-column line under a 3-column header: %v, want reason fields", err)
	}
	StartInput(p)
	if err := p.Parse(seven, &obs); err != nil {
		t.Fatalf("after StartInput: %v", err)
	}
}

func TestCDXJ(t *testing.T) {
	p, err := New("cdxj", Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := func(ts string, status int, object, site, digest string, ch records.ChangeFlag) *records.Observation {
		return cdxVisit(t, "cdxj", ts, status, object, site, digest, ch)
	}
	runCases(t, p, []lineCase{
		{name: "meta", line: `!meta 0 {"format": "cdxj-gzip-1.0"}`, reason: ReasonComment, skip: true},
		{name: "capture", line: `com,example)/ 20140127171200 {"url": "http://example.com", "mime": "text/html", "status": "200", "digest": "` + dgA + `", "length": "1046", "offset": "334", "filename": "dupes.warc.gz"}`,
			want: v("2014-01-27T17:12:00Z", 200, "http://example.com/", "example.com", "sha1:"+dgA, 0)},
		{name: "revisit", line: `com,example)/ 20140127171251 {"url": "http://example.com", "mime": "warc/revisit", "digest": "` + dgA + `", "length": "553"}`,
			want: v("2014-01-27T17:12:51Z", 200, "http://example.com/", "example.com", "sha1:"+dgA, records.Unchanged)},
		{name: "number status, nested values, escapes", line: `com,example)/a 20140127171252 {"extra": {"a": [1, "}"]}, "status": 404, "url": "http:\/\/example.com\/a", "digest": "sha1:` + dgB + `"}`,
			want: v("2014-01-27T17:12:52Z", 404, "http://example.com/a", "example.com", "sha1:"+dgB, 0)},
		{name: "no url: from the key", line: `com,example)/b 20140127171253 {"status": "200", "digest": "` + dgB + `"}`,
			want: v("2014-01-27T17:12:53Z", 200, "http://example.com/b", "example.com", "sha1:"+dgB, 0)},
		{name: "null digest", line: `com,example)/b 20140127171254 {"status": "200", "digest": null}`,
			want: v("2014-01-27T17:12:54Z", 200, "http://example.com/b", "example.com", "", 0)},
		{name: "broken json", line: `com,example)/ 20140127171200 {"url": "http://example.com"`, reason: ReasonJSON},
		{name: "url not a string", line: `com,example)/ 20140127171200 {"url": 5}`, reason: ReasonJSON},
		{name: "no json", line: `com,example)/ 20140127171200 http://example.com/`, reason: ReasonFields},
		{name: "bad time", line: `com,example)/ 2014012717120 {"url": "http://example.com"}`, reason: ReasonTime},
		{name: "bad status", line: `com,example)/ 20140127171200 {"url": "http://example.com", "status": "abc"}`, reason: ReasonStatus},
	})
}

func TestUnSURT(t *testing.T) {
	for key, want := range map[string]string{
		"com,example)/":         "http://example.com/",
		"com,example,www)/a?b":  "http://www.example.com/a?b",
		"com,example:8080)/x":   "http://example.com:8080/x",
		"com,example)":          "http://example.com/",
		"example.com/path":      "http://example.com/path",
		"https://example.com/x": "https://example.com/x",
	} {
		if got := string(unSURT(nil, []byte(key))); got != want {
			t.Errorf("unSURT(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestWARCRevisitOfRedirect: a WARC revisit record of a redirect is not an
// unchanged visit (its Changed stays unknown), as a CDX row of it.
func TestWARCRevisitOfRedirect(t *testing.T) {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	gz.Write([]byte(warcRecord("1.0", "revisit", "http://dw.com/", "2019-10-02T00:00:00Z",
		[]string{"WARC-Payload-Digest: sha1:" + dgA, "Content-Type: application/http; msgtype=response"},
		"HTTP/1.1 301 Moved Permanently\r\nLocation: https://www.dw.com/\r\n\r\n")))
	gz.Write([]byte(warcRecord("1.0", "revisit", "http://dw.com/a", "2019-10-02T00:00:00Z",
		[]string{"WARC-Payload-Digest: sha1:" + dgA, "Content-Type: application/http; msgtype=response"},
		"HTTP/1.1 200 OK\r\n\r\n")))
	gz.Close()
	zr, _ := gzip.NewReader(&b)
	res := readAllWARC(t, zr, 0)
	if len(res) != 2 || res[0].reason != "" || res[1].reason != "" {
		t.Fatalf("results %+v", res)
	}
	if o := res[0].obs; o.Status != 301 || o.Changed != records.ChangeUnknown {
		t.Errorf("revisit of a 301: status %d changed %v, want 301 and unknown", o.Status, o.Changed)
	}
	if o := res[1].obs; o.Status != 200 || o.Changed != records.Unchanged {
		t.Errorf("revisit of a 200: status %d changed %v, want 200 and unchanged", o.Status, o.Changed)
	}
}
