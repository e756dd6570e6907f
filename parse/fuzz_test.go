package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// checkParse is the property every line parser must have: no panic; an
// error is a *Error with a reason; a success is a valid observation of the
// parser's format that survives a JSON round trip; and parsing is
// deterministic (the second parse hits the intern cache).
func checkParse(t *testing.T, p Parser, line []byte) {
	var obs, again records.Observation
	err := p.Parse(line, &obs)
	err2 := p.Parse(line, &again)
	if (err == nil) != (err2 == nil) || obs != again {
		t.Fatalf("Parse(%q) not deterministic: %+v %v / %+v %v", line, obs, err, again, err2)
	}
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) || pe.Reason == "" {
			t.Fatalf("Parse(%q) error %v is not a *parse.Error with a reason", line, err)
		}
		if obs != (records.Observation{}) {
			t.Fatalf("Parse(%q) failed but left %+v", line, obs)
		}
		return
	}
	if verr := obs.Validate(); verr != nil {
		t.Fatalf("Parse(%q) = %+v: %v", line, obs, verr)
	}
	if obs.Format != p.Format() && p.Format() != "jsonl" {
		t.Fatalf("Parse(%q) format %q", line, obs.Format)
	}
	for _, tm := range []time.Time{obs.Time, obs.LastModified, obs.LastEvent} {
		if !tm.IsZero() && (tm.Year() < 1 || tm.Year() > 9999 || tm.Location() != time.UTC) {
			t.Fatalf("Parse(%q) time %v out of range or not UTC", line, tm)
		}
	}
	b, err := json.Marshal(obs)
	if err != nil {
		t.Fatalf("marshal %+v: %v", obs, err)
	}
	back, err := records.DecodeObservation(b)
	if err != nil {
		t.Fatalf("round trip of %s: %v", b, err)
	}
	if back.Object != obs.Object || !back.Time.Equal(obs.Time) || back.Kind != obs.Kind || back.Changed != obs.Changed {
		t.Fatalf("round trip %+v -> %+v", obs, back)
	}
}

func fuzzLines(f *testing.F, format string, cfg Config, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	p, err := New(format, cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > 1<<16 {
			return
		}
		checkParse(t, p, line)
	})
}

func FuzzSquid(f *testing.F) {
	fuzzLines(f, "squid", Config{},
		"1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 text/html",
		"1157689320.343   1357 10.105.21.199 TCP_REFRESH_UNMODIFIED_ABORTED/304 214 GET http://www.goonernews.com/styles.css badeyek DIRECT/175.16.199.61 -",
		"1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.yahoo.com:443 badeyek DIRECT/175.16.199.115 -",
		"0.1 0 - NONE/000 0 NONE error:transaction-end-before-headers - HIER_NONE/- -")
}

func FuzzSquidCustom(f *testing.F) {
	fuzzLines(f, "squid", Config{SquidLogformat: `%>a %[ui %[un [%tl] "%rm %ru HTTP/%rv" %>Hs %<st %Ss:%Sh`},
		`10.0.0.1 - - [10/Mar/2024:13:55:36 +0200] "GET http://example.com/x HTTP/1.1" 304 120 TCP_REFRESH_UNMODIFIED:HIER_DIRECT`)
}

func FuzzCLF(f *testing.F) {
	fuzzLines(f, "clf", Config{},
		`83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/" "Mozilla/5.0"`,
		`example.org:443 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /x?y=1 HTTP/2.0" 304 5 "-" "a \"q\" b"`,
		`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a b HTTP/1.1" 200 5`)
}

func FuzzStoreLog(f *testing.F) {
	fuzzLines(f, "storelog", Config{},
		"1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5  200 1162482895 1147435542        -1 image/gif 8130/8130 GET http://i.a.cnn.net/x.gif",
		"1162482979.825 RELEASE -1 FFFFFFFF 1F2DF2B172BFC106729005C912345363  304 1162482982        -1        -1 unknown -1/0 GET http://ca.archive.ubuntu.com/Release",
		"1162482895.688 SWAPOUT 00 0000015B F1 200 ? ? ? text/html ?/123 GET http://a.example/")
}

func FuzzHeritrix(f *testing.F) {
	fuzzLines(f, "heritrix", Config{},
		"2015-05-22T15:01:10.521Z   200        564 http://www.raeder.dk/robots.txt P http://www.raeder.dk/ text/plain #084 20150522150109851+648 sha1:OKIDEBO3TNPIQLIED2HVPC4ICFJPBP5N - content-size:845",
		"2006-02-23T10:52:43.207Z     1         55 dns:www.kb.dk P http://www.kb.dk/ text/dns #049 20060223095242629+10 - - -",
		`2012-05-23T15:06:34.759Z   200      93868 http://x.dk/a.js RX http://x.dk/ application/javascript #005 20120523150634511+45 sha1:T242YWK6TNKUJYW4PH77PTJNBNFV55Y7 http://x.dk/ duplicate:"a.arc,1495696",content-size:94191`)
}

func FuzzHeritrixJSON(f *testing.F) {
	fuzzLines(f, "heritrix-json", Config{},
		`{"annotations":"ip:173.236.225.186,duplicate:digest","content_digest":"sha1:44KA4PQA5TYRAXDIVJIAFD72RN55OQHJ","status_code":404,"timestamp":"2016-01-27T21:19:39.200Z","url":"http://acid.matkelly.com/img.png"}`,
		`{"timestamp":"2016-01-27T21:19:39.200Z","status_code":200,"url":"http://a.example/","annotations":["duplicate:digest"]}`)
}

func FuzzJSONL(f *testing.F) {
	fuzzLines(f, "jsonl", Config{},
		`{"object":"HTTP://Example.com:80/a#x","time":"2024-01-02T03:04:05+01:00","kind":"visit","changed":true,"last_modified":"2024-01-01T00:00:00Z"}`,
		`{"object":"/srv/a","time":"2024-01-02T00:00:00Z","kind":"snapshot","period_s":86400,"last_event":"2024-01-01T12:00:00Z","event":"access"}`)
}

func FuzzSnapshot(f *testing.F) {
	fuzzLines(f, "snapshot", Config{},
		"/srv/pub/a.iso  2024-01-02T00:00:00Z  86400  2024-01-01T13:05:00Z  access",
		"http://ex.com/feed\t1704153600\t24h\t-\tmodification",
		"f 2024-01-02T01:00:00+01:00 3600 1704152700.5 mtime")
}

func FuzzTabular(f *testing.F) {
	for _, s := range []string{
		"pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t",
		"1044,30/Apr/1998,22:46:12,/images/11104.gif,200,508",
		"reference/exec/functions/proc-open.xml\t1787331093",
	} {
		f.Add([]byte(s))
	}
	var ps []Parser
	for _, name := range []string{"nasa-tsv", "worldcup-csv", "changes-tsv"} {
		p, err := New(name, Config{Zone: time.UTC})
		if err != nil {
			f.Fatal(err)
		}
		ps = append(ps, p)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, p := range ps {
			checkParse(t, p, line)
		}
	})
}

// FuzzCanonical checks the canonicaliser: the fast path agrees with the
// library on every URL it accepts, and canonicalisation is idempotent on
// http(s) URLs (a canonical object read back from jsonl stays the same).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"http://www.example.com/a/b?c=d&e=f", "HTTP://Example.COM:80/a/./b/%7euser#x",
		"https://a.b/x%2Fy?%zz", "http://1.2.3/x", "http://xn--lejr-fra.dk/", "http://a.b/c?a&&b=", "http://a.b/c?a=1=2",
		"http://a.b/../x", "http://a..b/", "http://-a.b/", "dns:www.kb.dk", "http://a.b/c?q=a+b",
		"http://a.com/a%20b", "http://a.com/%C3%A4?q=%E2%82%AC&r=%20", "http://a.com/a%2Fb?q=%2F&r=%3D", "http://a.com/%25%32%30",
		"http://a.com/a%3F%23%60%7B%7D%22?x=%26%3D%23", "http://a.com/%2E%2E/x", "http://a.com/?q=%2B&r=%25",
		"http://raeder.dk:83/bin/view", "https://a.b:443/", "http://a.b:80/", "http://a.b:080/", "http://a.b:65536/", "http://a.b:8080",
		"dns:www.kb.dk", "dns:WWW.kb.dk", "dns:a..b", "dns:", "http://xn--lejr-fra.dk/a?b=c", "http://xn--lejr-fra.dk:8080/",
		"http://www.xn--sterbrogades-dyrlger-y0b29a.dk/x%20y", "http://xn--bcher-kva.example./", "http://xn--lejr-fra.dk@x/"} {
		f.Add(s)
	}
	fast := NewCanonicalizer(ProfileChangerate, -1)
	stateful := NewCanonicalizer(ProfileChangerate, -1)
	for _, h := range []string{"http://xn--lejr-fra.dk/", "http://www.xn--sterbrogades-dyrlger-y0b29a.dk/", "http://xn--bcher-kva.example/"} {
		stateful.Canonical([]byte(h)) // learn these hosts
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 4096 {
			return
		}
		slowObj, slowSite, slowErr := fast.canonicalStable(raw)
		if hs, he, ok := fastCanonical([]byte(raw), nil); ok {
			if slowErr != nil || slowObj != raw {
				t.Fatalf("fast path accepts %q as canonical; library gives %q, %v", raw, slowObj, slowErr)
			}
			if site := raw[hs:he]; site != slowSite {
				t.Fatalf("fast path site %q, library %q", site, slowSite)
			}
		}
		// The stateful canonicaliser (fast path with the punycode hosts it
		// learnt, no cache) agrees with the library too.
		if obj, site, err := stateful.Canonical([]byte(raw)); (err == nil) != (slowErr == nil) || obj != slowObj || site != slowSite {
			t.Fatalf("Canonical(%q) = %q %q %v; library %q %q %v", raw, obj, site, err, slowObj, slowSite, slowErr)
		}
		if slowErr != nil || !hasHTTPPrefix([]byte(slowObj)) {
			return
		}
		again, _, err := fast.canonicalSlow(slowObj)
		if err != nil || again != slowObj {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", raw, slowObj, again, err)
		}
	})
}

// FuzzWARC feeds arbitrary bytes to the WARC reader: it must not panic,
// must end, and every observation must be valid.
func FuzzWARC(f *testing.F) {
	f.Add([]byte(warcRecord("1.0", "response", "http://www.iana.org/", "2014-01-26T20:06:24Z",
		[]string{"WARC-Payload-Digest: sha1:AAAA", "Content-Type: application/http; msgtype=response"}, httpBlock)))
	f.Add([]byte(warcRecord("0.17", "revisit", "http://a/", "20080101000000", nil, "HTTP/1.0 304 x\r\n\r\n") + "junk\r\nWARC/1.0\r\n"))
	f.Add([]byte("WARC/0.10 19 response http://b.example/ 20060101000000 <urn:x> application/http\r\n\r\nHTTP/1.0 200 OK\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr, err := NewRecordReader("warc", bytes.NewReader(data), Config{}, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("more records (%d) than bytes (%d)", i, len(data))
			}
			var obs records.Observation
			_, err := rr.Next(&obs)
			if err == io.EOF {
				return
			}
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("non-parse error from a bytes.Reader: %v", err)
				}
				continue
			}
			if verr := obs.Validate(); verr != nil {
				t.Fatalf("%+v: %v", obs, verr)
			}
		}
	})
}
