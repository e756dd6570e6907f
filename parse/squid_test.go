package parse

import (
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

func TestSquidNative(t *testing.T) {
	p, err := New("squid", Config{})
	if err != nil {
		t.Fatal(err)
	}
	tm := mustTime(t, "2006-09-08T04:22:00.327Z")
	obs := func(kind records.Kind, ch records.ChangeFlag, status int, object, site string) *records.Observation {
		return &records.Observation{Object: object, Site: site, Time: tm, Kind: kind, Changed: ch, Status: status, Format: "squid"}
	}
	gn := "http://www.goonernews.com/"
	cases := []lineCase{
		{name: "miss", line: "1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 text/html",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "refresh hit squid2", line: "1157689320.327   1357 10.105.21.199 TCP_REFRESH_HIT/304 214 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 -",
			want: obs(records.KindRevalidation, records.Unchanged, 304, gn, "www.goonernews.com")},
		{name: "refresh miss squid2", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_MISS/200 1 GET http://www.goonernews.com/ - DIRECT/1.2.3.4 text/html",
			want: obs(records.KindRevalidation, records.Changed, 200, gn, "www.goonernews.com")},
		{name: "refresh unmodified", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_UNMODIFIED/304 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindRevalidation, records.Unchanged, 304, gn, "www.goonernews.com")},
		{name: "refresh modified", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_MODIFIED/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 text/html",
			want: obs(records.KindRevalidation, records.Changed, 200, gn, "www.goonernews.com")},
		{name: "refresh modified aborted", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_MODIFIED_ABORTED/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 text/html",
			want: obs(records.KindRevalidation, records.Changed, 200, gn, "www.goonernews.com")},
		{name: "refresh unmodified timedout", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_UNMODIFIED_TIMEDOUT/304 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindRevalidation, records.Unchanged, 304, gn, "www.goonernews.com")},
		{name: "collapsed forwarding", line: "1157689320.327 1 1.2.3.4 TCP_CF_REFRESH_MODIFIED/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindRevalidation, records.Changed, 200, gn, "www.goonernews.com")},
		{name: "cf hit", line: "1157689320.327 1 1.2.3.4 TCP_CF_HIT/200 1 GET http://www.goonernews.com/ - HIER_NONE/- -",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "refresh fail old", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_FAIL_OLD/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "refresh fail hit", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_FAIL_HIT/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "refresh ignored", line: "1157689320.327 1 1.2.3.4 TCP_REFRESH_IGNORED/200 1 GET http://www.goonernews.com/ - HIER_DIRECT/1.2.3.4 -",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "udp", line: "1157689320.327 0 1.2.3.4 UDP_HIT/000 60 ICP_QUERY http://www.goonernews.com/ - HIER_NONE/- -",
			want: obs(records.KindAccess, 0, 0, gn, "www.goonernews.com")},
		{name: "none denied", line: "1157689320.327 0 1.2.3.4 NONE/400 3576 GET http://www.goonernews.com/ - HIER_NONE/- text/html",
			want: obs(records.KindAccess, 0, 400, gn, "www.goonernews.com")},
		{name: "canonicalised", line: "1157689320.327 0 1.2.3.4 TCP_MISS/200 1 GET HTTP://WWW.GoonerNews.com:80/a/./b/%7euser#frag - DIRECT/1.2.3.4 -",
			want: obs(records.KindAccess, 0, 200, "http://www.goonernews.com/a/b/~user", "www.goonernews.com")},
		{name: "tabs and 7 fields", line: "1157689320.327\t1\t1.2.3.4\tTCP_MISS/200\t1\tGET\thttp://www.goonernews.com/",
			want: obs(records.KindAccess, 0, 200, gn, "www.goonernews.com")},
		{name: "connect", line: "1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.yahoo.com:443 badeyek DIRECT/175.16.199.115 -", reason: ReasonConnect, skip: true},
		// A 407 challenge (or an ACL refusal) did not serve the object.
		{name: "denied 407", line: "1157689320.510      0 10.105.21.199 TCP_DENIED/407 1834 GET http://us.mcafee.com/apps/agent/submgr/appsync.asp - NONE/- text/html", reason: ReasonDenied, skip: true},
		{name: "denied reply", line: "1157689320.510      0 10.105.21.199 TCP_DENIED_REPLY/403 1834 GET http://a.example/ - NONE/- text/html", reason: ReasonDenied, skip: true},
		{name: "error url", line: "1157689312.049 0 1.2.3.4 NONE/000 0 NONE error:transaction-end-before-headers - HIER_NONE/- -", reason: ReasonNoObject, skip: true},
		{name: "empty", line: "", reason: ReasonEmpty, skip: true},
		{name: "comment", line: "# squid", reason: ReasonComment, skip: true},
		{name: "short", line: "1157689312.049 0 1.2.3.4 TCP_MISS/200", reason: ReasonFields},
		{name: "bad time", line: "1157689x12.049 0 1.2.3.4 TCP_MISS/200 1 GET http://a.b/ - - -", reason: ReasonTime},
		{name: "negative time", line: "-1157689312.049 0 1.2.3.4 TCP_MISS/200 1 GET http://a.b/ - - -", reason: ReasonTime},
		{name: "no status", line: "1157689312.049 0 1.2.3.4 TCP_MISS 1 GET http://a.b/ - - -", reason: ReasonStatus},
		{name: "bad status", line: "1157689312.049 0 1.2.3.4 TCP_MISS/2x0 1 GET http://a.b/ - - -", reason: ReasonStatus},
		{name: "bad code", line: "1157689312.049 0 1.2.3.4 tcp-miss/200 1 GET http://a.b/ - - -", reason: ReasonStatus},
		{name: "bad url", line: "1157689312.049 0 1.2.3.4 TCP_MISS/200 1 GET http:// - - -", reason: ReasonURL},
		{name: "relative url", line: "1157689312.049 0 1.2.3.4 TCP_MISS/200 1 GET /index.html - - -", reason: ReasonURL},
	}
	runCases(t, p, cases)
}

func TestSquidCustomLogformat(t *testing.T) {
	zone := time.FixedZone("CEST", 2*3600)
	common := `%>a %[ui %[un [%tl] "%rm %ru HTTP/%rv" %>Hs %<st %Ss:%Sh`
	p, err := New("squid", Config{SquidLogformat: common})
	if err != nil {
		t.Fatal(err)
	}
	want := &records.Observation{Object: "http://example.com/x", Site: "example.com", Time: mustTime(t, "2024-03-10T11:55:36Z"),
		Kind: records.KindRevalidation, Changed: records.Unchanged, Status: 304, Format: "squid"}
	runCases(t, p, []lineCase{
		{name: "common", line: `10.0.0.1 - - [10/Mar/2024:13:55:36 +0200] "GET http://example.com/x HTTP/1.1" 304 120 TCP_REFRESH_UNMODIFIED:HIER_DIRECT`, want: want},
		{name: "bad request", line: `10.0.0.1 - - [10/Mar/2024:13:55:36 +0200] "GARBAGE" 304 120 TCP_MISS:HIER_DIRECT`, reason: ReasonFields},
		{name: "missing fields", line: `10.0.0.1 - - [10/Mar/2024:13:55:36 +0200]`, reason: ReasonFields},
	})
	names, err := New("squid", Config{SquidLogformat: "time - - code/status - method url"})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, names, []lineCase{{name: "names", line: "1710071736.5 x y TCP_MISS/200 z GET http://example.com/x",
		want: &records.Observation{Object: "http://example.com/x", Site: "example.com", Time: mustTime(t, "2024-03-10T11:55:36.5Z"), Kind: records.KindAccess, Status: 200, Format: "squid"}}})
	local, err := New("squid", Config{SquidLogformat: "%tl %ru %Ss", Zone: zone})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, local, []lineCase{{name: "local with zone", line: "10/Mar/2024:13:55:36 http://example.com/x TCP_HIT",
		want: &records.Observation{Object: "http://example.com/x", Site: "example.com", Time: mustTime(t, "2024-03-10T11:55:36Z"), Kind: records.KindAccess, Format: "squid"}}})
	nozone, _ := New("squid", Config{SquidLogformat: "%tl %ru %Ss"})
	runCases(t, nozone, []lineCase{{name: "local without zone", line: "10/Mar/2024:13:55:36 http://example.com/x TCP_HIT", reason: ReasonNoZone}})
	if _, err := New("squid", Config{SquidLogformat: "%>a %Ss"}); err == nil {
		t.Fatal("logformat without time and URL accepted")
	}
}

func TestSquidPresets(t *testing.T) {
	want := &records.Observation{Object: "http://example.com/x", Site: "example.com", Time: mustTime(t, "2024-03-10T11:55:36Z"),
		Kind: records.KindAccess, Status: 200, Format: "squid"}
	for name, line := range map[string]string{
		"combined": `10.0.0.1 - - [10/Mar/2024:13:55:36 +0200] "GET http://example.com/x HTTP/1.1" 200 120 "http://ref.example/" "Mozilla/5.0 (X11; Linux)" TCP_MISS:HIER_DIRECT`,
		"common":   `10.0.0.1 - - [10/Mar/2024:13:55:36 +0200] "GET http://example.com/x HTTP/1.1" 200 120 TCP_MISS:HIER_DIRECT`,
		"squid":    "1710071736.000 1 10.0.0.1 TCP_MISS/200 120 GET http://example.com/x - HIER_DIRECT/1.2.3.4 text/html",
	} {
		p, err := New("squid", Config{SquidLogformat: name})
		if err != nil {
			t.Fatal(err)
		}
		runCases(t, p, []lineCase{{name: name, line: line, want: want}})
	}
	ref, _ := New("squid", Config{SquidLogformat: "referrer"})
	runCases(t, ref, []lineCase{{name: "referrer", line: "1710071736.000 10.0.0.1 http://ref.example/ http://example.com/x",
		want: &records.Observation{Object: "http://example.com/x", Site: "example.com", Time: mustTime(t, "2024-03-10T11:55:36Z"), Kind: records.KindAccess, Format: "squid"}}})
}
