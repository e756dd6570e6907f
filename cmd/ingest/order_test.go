package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCaptureIndexOrder: capture indexes are read in input order by
// default (each object's captures are in time order: no event-time sort
// of the whole stream); any other input, or a mix, is sorted by time; a
// given --order wins.
func TestCaptureIndexOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cdx := write("a.cdx", " CDX N b a m s k r M S V g\norg,iana)/ 20140126200624 http://www.iana.org/ text/html 200 OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB - - 2258 334 iana.warc.gz\n")
	cdxj := write("a.cdxj", `org,iana)/ 20140126200624 {"url": "http://www.iana.org/", "status": "200", "digest": "OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB"}`+"\n")
	squid := write("access.log", "1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.goonernews.com/ badeyek DIRECT/175.16.199.61 text/html\n")
	text := write("notes.md", "not a log\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format=cdx", cdx}, "input"},
		{[]string{"--format=cdxj", cdxj}, "input"},
		{[]string{"--format=auto", cdx, cdxj}, "input"},
		{[]string{"--format=auto", cdx, cdxj, text}, "input"}, // no format accepts notes.md: it gives no observation
		{[]string{"--format=auto", cdx, squid}, "time"},
		{[]string{"--format=auto", text}, "time"},
		{[]string{"--format=squid", squid}, "time"},
		{[]string{"--format=cdx", "--order=time", cdx}, "time"},
	} {
		o, _, _, err := configure(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.Order != c.want {
			t.Errorf("%v: order %s, want %s", c.args, o.Order, c.want)
		}
	}
}
