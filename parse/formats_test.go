package parse

import (
	"errors"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

func TestCLF(t *testing.T) {
	p, err := New("clf", Config{BaseURL: "http://www.semicomplete.com/"})
	if err != nil {
		t.Fatal(err)
	}
	tm := mustTime(t, "2015-05-17T10:05:03Z")
	acc := func(obj, site string, status int) *records.Observation {
		return &records.Observation{Object: obj, Site: site, Time: tm, Kind: records.KindAccess, Status: status, Format: "clf"}
	}
	sc := "www.semicomplete.com"
	runCases(t, p, []lineCase{
		{name: "combined", line: `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)"`,
			want: acc("http://www.semicomplete.com/presentations/logstash-monitorama-2013/images/kibana-search.png", sc, 200)},
		{name: "common zone offset", line: `127.0.0.1 - frank [17/May/2015:12:05:03 +0200] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
			want: acc("http://www.semicomplete.com/apache_pb.gif", sc, 200)},
		{name: "304 revalidation", line: `127.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 304 0 "-" "-"`,
			want: &records.Observation{Object: "http://www.semicomplete.com/a", Site: sc, Time: tm, Kind: records.KindRevalidation, Changed: records.Unchanged, Status: 304, Format: "clf"}},
		{name: "double slash path", line: `86.28.207.22 - - [17/May/2015:10:05:03 +0000] "GET //favicon.ico HTTP/1.1" 200 3638 "-" "Newsify/120"`,
			want: acc("http://www.semicomplete.com//favicon.ico", sc, 200)},
		{name: "vhost", line: `example.org:443 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /x?y=1 HTTP/2.0" 200 5 "-" "-"`,
			want: acc("https://example.org/x?y=1", "example.org", 200)},
		{name: "vhost odd port", line: `example.org:8080 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /x HTTP/1.1" 200 5`,
			want: acc("http://example.org:8080/x", "example.org:8080", 200)}, // the aggregator's site (records.SiteOf): the port is part of it
		{name: "proxy absolute", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET http://Other.example/y HTTP/1.1" 404 5`,
			want: acc("http://other.example/y", "other.example", 404)},
		{name: "blank in target", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a b HTTP/1.1" 200 5`,
			want: acc("http://www.semicomplete.com/a%20b", sc, 200)},
		{name: "http 0.9", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /old" 200 5`,
			want: acc("http://www.semicomplete.com/old", sc, 200)},
		{name: "escaped quote in ua", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /q HTTP/1.1" 200 5 "-" "a \"quoted\" agent"`,
			want: acc("http://www.semicomplete.com/q", sc, 200)},
		{name: "nginx empty request", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 400 0 "-" "-"`, reason: ReasonNoObject, skip: true},
		{name: "options star", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "OPTIONS * HTTP/1.1" 200 0`, reason: ReasonNoObject, skip: true},
		{name: "connect", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "CONNECT a.b:443 HTTP/1.1" 200 0`, reason: ReasonConnect, skip: true},
		{name: "tls garbage", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "\x16\x03\x01\x00\xa5\x01" 400 0`, reason: ReasonFields},
		{name: "no zone", line: `1.2.3.4 - - [17/May/2015:10:05:03] "GET / HTTP/1.1" 200 0`, reason: ReasonNoZone},
		{name: "bad date", line: `1.2.3.4 - - [31/Feb/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 0`, reason: ReasonTime},
		{name: "bad status", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" abc 0`, reason: ReasonStatus},
		{name: "unquoted request", line: `1.2.3.4 - - [17/May/2015:10:05:03 +0000] GET / 200 0`, reason: ReasonFields},
		{name: "short", line: `1.2.3.4 - -`, reason: ReasonFields},
	})
}

func TestZoneConfigured(t *testing.T) {
	z := time.FixedZone("X", 2*3600)
	want := mustTime(t, "2015-05-17T08:05:03Z")
	for format, line := range map[string]string{
		"clf":           `1.2.3.4 - - [17/May/2015:10:05:03] "GET / HTTP/1.1" 200 0`,
		"heritrix":      "2015-05-17T10:05:03 200 10 https://a.example/ - - text/html #1 - - - -",
		"heritrix-json": `{"timestamp":"2015-05-17T10:05:03","status_code":200,"url":"http://a.example/"}`,
	} {
		p, _ := New(format, Config{Zone: z})
		var obs records.Observation
		if err := p.Parse([]byte(line), &obs); err != nil || !obs.Time.Equal(want) {
			t.Errorf("%s: %v %v, want %v", format, obs.Time, err, want)
		}
	}
}

func TestStoreLog(t *testing.T) {
	p, err := New("storelog", Config{})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, p, []lineCase{
		{name: "swapout", line: "1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5  200 1162482895 1147435542        -1 image/gif 8130/8130 GET http://i.a.cnn.net/cnn/.element/img/1.5/main/icons/pipeline_ico_wht.gif",
			want: &records.Observation{Object: "http://i.a.cnn.net/cnn/.element/img/1.5/main/icons/pipeline_ico_wht.gif", Site: "i.a.cnn.net",
				Time: mustTime(t, "2006-11-02T15:54:55.688Z"), Kind: records.KindVisit, LastModified: time.Unix(1147435542, 0).UTC(), Status: 200, Format: "storelog"}},
		{name: "release 304 memory only", line: "1162482979.825 RELEASE -1 FFFFFFFF 1F2DF2B172BFC106729005C912345363  304 1162482982        -1        -1 unknown -1/0 GET http://ca.archive.ubuntu.com/ubuntu/dists/dapper-backports/Release",
			want: &records.Observation{Object: "http://ca.archive.ubuntu.com/ubuntu/dists/dapper-backports/Release", Site: "ca.archive.ubuntu.com",
				Time: mustTime(t, "2006-11-02T15:56:19.825Z"), Kind: records.KindVisit, Changed: records.Unchanged, Status: 304, Format: "storelog"}},
		// cnn.122.2o7.net in the 2006 snippet: Last-Modified a day after Date.
		{name: "lm after date", line: "1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 1162569295 -1 image/gif 43/43 GET http://a.example/",
			want: &records.Observation{Object: "http://a.example/", Site: "a.example", Time: mustTime(t, "2006-11-02T15:54:55.688Z"), Kind: records.KindVisit,
				LastModified: time.Unix(1162482895, 0).UTC(), Status: 200, Format: "storelog"}},
		{name: "question marks", line: "1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 ? ? ? text/html ?/123 GET http://a.example/",
			want: &records.Observation{Object: "http://a.example/", Site: "a.example", Time: mustTime(t, "2006-11-02T15:54:55.688Z"), Kind: records.KindVisit, Status: 200, Format: "storelog"}},
		{name: "unparsable lm -2", line: "1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 -2 -1 text/html 1/1 GET http://a.example/",
			want: &records.Observation{Object: "http://a.example/", Site: "a.example", Time: mustTime(t, "2006-11-02T15:54:55.688Z"), Kind: records.KindVisit, Status: 200, Format: "storelog"}},
		{name: "swapin", line: "1162482895.688 SWAPIN 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 1147435542 -1 image/gif 8130/8130 GET http://a.example/", reason: ReasonSwapIn, skip: true},
		{name: "eviction", line: "1162482895.688 RELEASE 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 1147435542 -1 image/gif 8130/8130 GET http://a.example/", reason: ReasonEvicted, skip: true},
		{name: "bad action", line: "1162482895.688 EXPLODE 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 1147435542 -1 image/gif 8130/8130 GET http://a.example/", reason: ReasonFields},
		{name: "bad lm", line: "1162482895.688 SWAPOUT 00 0000015B F1EB414FFE30788C87B1019E3F885DC5 200 1162482895 11474x5542 -1 image/gif 8130/8130 GET http://a.example/", reason: ReasonTime},
		{name: "short", line: "1162482895.688 SWAPOUT 00 0000015B", reason: ReasonFields},
	})
}

func TestHeritrixJSON(t *testing.T) {
	p, err := New("heritrix-json", Config{})
	if err != nil {
		t.Fatal(err)
	}
	msg := `{"annotations":"ip:173.236.225.186,duplicate:digest","content_digest":"sha1:44KA4PQA5TYRAXDIVJIAFD72RN55OQHJ","content_length":324,"extra_info":{},"hop_path":"IE","host":"acid.matkelly.com","jobName":"frequent","mimetype":"text/html","seed":"WTID:12321444","size":511,"start_time_plus_duration":"20160127211938966+230","status_code":404,"thread":189,"timestamp":"2016-01-27T21:19:39.200Z","url":"http://acid.matkelly.com/img.png","via":"http://acid.matkelly.com/","warc_filename":"BL-20160127211918391-00001-35~ce37d8d00c1f~8443.warc.gz","warc_offset":36748}`
	want := &records.Observation{Object: "http://acid.matkelly.com/img.png", Site: "acid.matkelly.com", Time: mustTime(t, "2016-01-27T21:19:39.2Z"),
		Kind: records.KindVisit, Changed: records.Unchanged, Digest: "sha1:44KA4PQA5TYRAXDIVJIAFD72RN55OQHJ", Status: 404, Format: "heritrix-json"}
	runCases(t, p, []lineCase{
		{name: "feed message", line: msg, want: want},
		{name: "annotation array", line: `{"timestamp":"2016-01-27T21:19:39.200Z","status_code":200,"url":"http://a.example/","content_digest":"sha1:X","annotations":["duplicate:digest"]}`,
			want: &records.Observation{Object: "http://a.example/", Site: "a.example", Time: mustTime(t, "2016-01-27T21:19:39.2Z"), Kind: records.KindVisit, Changed: records.Unchanged, Digest: "sha1:X", Status: 200, Format: "heritrix-json"}},
		{name: "negative", line: `{"timestamp":"2016-01-27T21:19:39.200Z","status_code":-61,"url":"http://a.example/","content_digest":"-"}`,
			want: &records.Observation{Object: "http://a.example/", Site: "a.example", Time: mustTime(t, "2016-01-27T21:19:39.2Z"), Kind: records.KindVisit, Status: -61, Format: "heritrix-json"}},
		{name: "no status", line: `{"timestamp":"2016-01-27T21:19:39.200Z","url":"http://a.example/"}`, reason: ReasonStatus},
		{name: "no url", line: `{"timestamp":"2016-01-27T21:19:39.200Z","status_code":200}`, reason: ReasonFields},
		{name: "no zone", line: `{"timestamp":"2016-01-27T21:19:39.200","status_code":200,"url":"http://a.example/"}`, reason: ReasonNoZone},
		{name: "broken", line: `{"timestamp":`, reason: ReasonJSON},
		{name: "not object", line: `[1]`, reason: ReasonJSON},
	})
}

func TestSnapshot(t *testing.T) {
	p, err := New("snapshot", Config{})
	if err != nil {
		t.Fatal(err)
	}
	poll := mustTime(t, "2024-01-02T00:00:00Z")
	runCases(t, p, []lineCase{
		{name: "rfc3339", line: "/srv/pub/a.iso  2024-01-02T00:00:00Z  86400  2024-01-01T13:05:00Z  access",
			want: &records.Observation{Object: "/srv/pub/a.iso", Time: poll, Kind: records.KindSnapshot, PeriodS: 86400,
				LastEvent: mustTime(t, "2024-01-01T13:05:00Z"), Event: records.EventAccess, Format: "snapshot"}},
		{name: "unix and duration and url", line: "HTTP://Ex.com/feed\t1704153600\t24h\t-\tmodification",
			want: &records.Observation{Object: "http://ex.com/feed", Site: "ex.com", Time: poll, Kind: records.KindSnapshot, PeriodS: 86400,
				Event: records.EventModification, Format: "snapshot"}},
		{name: "mtime alias offset", line: "f 2024-01-02T01:00:00+01:00 3600 1704152700.5 mtime",
			want: &records.Observation{Object: "f", Time: poll, Kind: records.KindSnapshot, PeriodS: 3600,
				LastEvent: time.Unix(1704152700, 5e8).UTC(), Event: records.EventModification, Format: "snapshot"}},
		{name: "comment", line: "  # object poll period last event", reason: ReasonComment, skip: true},
		{name: "outside period", line: "f 2024-01-02T00:00:00Z 60 2024-01-01T00:00:00Z access", reason: ReasonInvalid},
		{name: "no zone", line: "f 2024-01-02T00:00:00 60 - access", reason: ReasonNoZone},
		{name: "bad period", line: "f 2024-01-02T00:00:00Z -5 - access", reason: ReasonNumber},
		{name: "bad event", line: "f 2024-01-02T00:00:00Z 60 - touched", reason: ReasonFields},
		{name: "fields", line: "f 2024-01-02T00:00:00Z 60 -", reason: ReasonFields},
		{name: "bad time", line: "f yesterday 60 - access", reason: ReasonTime},
	})
	z, _ := New("snapshot", Config{Zone: time.FixedZone("X", 3600)})
	runCases(t, z, []lineCase{{name: "zone configured", line: "f 2024-01-02T01:00:00 60 - a",
		want: &records.Observation{Object: "f", Time: poll, Kind: records.KindSnapshot, PeriodS: 60, Event: records.EventAccess, Format: "snapshot"}}})
}

func TestTabularFormats(t *testing.T) {
	nasa, _ := New("nasa-tsv", Config{BaseURL: "http://www.ksc.nasa.gov"})
	runCases(t, nasa, []lineCase{
		{name: "header", line: "host\tlogname\ttime\tmethod\turl\tresponse\tbytes\treferer\tuseragent", reason: ReasonComment, skip: true},
		{name: "line", line: "pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t",
			want: &records.Observation{Object: "http://www.ksc.nasa.gov/images/launch-logo.gif", Site: "www.ksc.nasa.gov", Time: time.Unix(807256800, 0).UTC(), Kind: records.KindAccess, Status: 200, Format: "nasa-tsv"}},
		{name: "304", line: "h\t-\t807256800\tGET\t/x\t304\t0\t\t",
			want: &records.Observation{Object: "http://www.ksc.nasa.gov/x", Site: "www.ksc.nasa.gov", Time: time.Unix(807256800, 0).UTC(), Kind: records.KindRevalidation, Changed: records.Unchanged, Status: 304, Format: "nasa-tsv"}},
		{name: "fields", line: "h\t-\t807256800", reason: ReasonFields},
		{name: "time", line: "h\t-\tx\tGET\t/x\t304\t0\t\t", reason: ReasonTime},
	})
	wc, _ := New("worldcup-csv", Config{Zone: time.UTC})
	runCases(t, wc, []lineCase{
		{name: "line", line: "1044,30/Apr/1998,22:46:12,/images/11104.gif,200,508",
			want: &records.Observation{Object: "http://localhost/images/11104.gif", Site: "localhost", Time: mustTime(t, "1998-04-30T22:46:12Z"), Kind: records.KindAccess, Status: 200, Format: "worldcup-csv"}},
		{name: "comma in url", line: "1044,30/Apr/1998,22:46:12,/a,b.gif,200,-",
			want: &records.Observation{Object: "http://localhost/a,b.gif", Site: "localhost", Time: mustTime(t, "1998-04-30T22:46:12Z"), Kind: records.KindAccess, Status: 200, Format: "worldcup-csv"}},
		{name: "fields", line: "1044,30/Apr/1998", reason: ReasonFields},
		{name: "time", line: "1044,30/Apx/1998,22:46:12,/a,200,1", reason: ReasonTime},
	})
	// Without a zone every WorldCup line would be rejected: New refuses.
	if _, err := New("worldcup-csv", Config{}); !errors.Is(err, ErrNeedsZone) || !NeedsZone("worldcup-csv") {
		t.Errorf("New(worldcup-csv) without a zone: %v, want ErrNeedsZone", err)
	}
	if NeedsZone("clf") {
		t.Error("NeedsZone(clf): CLF times carry a zone")
	}
	ch, _ := New("changes-tsv", Config{})
	runCases(t, ch, []lineCase{
		{name: "line", line: "reference/exec/functions/proc-open.xml\t1787331093",
			want: &records.Observation{Object: "reference/exec/functions/proc-open.xml", Time: time.Unix(1787331093, 0).UTC(), Kind: records.KindVisit, Changed: records.Changed, Format: "changes-tsv"}},
		{name: "no tab", line: "reference 1787331093", reason: ReasonFields},
		{name: "bad time", line: "a\tnow", reason: ReasonTime},
		// A NASA TSV line whose last field is a number is not a path and a time.
		{name: "nasa line", line: "h\t-\t807256800\tGET\t/x\t304\t0", reason: ReasonFields},
		{name: "trailing tab", line: "a\t1787331093\t", reason: ReasonFields},
	})
}
