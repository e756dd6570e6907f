package parse

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

func warcRecord(version, typ, uri, date string, extra []string, block string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "WARC/%s\r\nWARC-Type: %s\r\n", version, typ)
	if uri != "" {
		fmt.Fprintf(&b, "WARC-Target-URI: %s\r\n", uri)
	}
	fmt.Fprintf(&b, "WARC-Date: %s\r\n", date)
	for _, e := range extra {
		b.WriteString(e + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s\r\n\r\n", len(block), block)
	return b.String()
}

const httpBlock = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nLast-Modified: Sat, 02 Feb 2008 19:40:44 GMT\r\n\r\n<html>WARC/1.0 inside a body</html>"

type warcResult struct {
	obs    records.Observation
	reason string
	skip   bool
}

func readAllWARC(t *testing.T, r io.Reader, max int64) []warcResult {
	t.Helper()
	rr, err := NewRecordReader("warc", r, Config{}, max)
	if err != nil {
		t.Fatal(err)
	}
	var out []warcResult
	for i := 0; i < 1000; i++ {
		var obs records.Observation
		_, err := rr.Next(&obs)
		if err == io.EOF {
			return out
		}
		var pe *Error
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("read error: %v", err)
		}
		res := warcResult{obs: obs}
		if err != nil {
			res.reason, res.skip = pe.Reason, IsSkip(err)
		}
		out = append(out, res)
	}
	t.Fatal("reader does not end")
	return nil
}

func TestWARCRecords(t *testing.T) {
	lm := time.Date(2008, 2, 2, 19, 40, 44, 0, time.UTC)
	input := warcRecord("1.0", "warcinfo", "", "2014-01-26T20:06:24Z", []string{"Content-Type: application/warc-fields"}, "software: x\r\n") +
		warcRecord("1.0", "response", "http://www.iana.org/", "2014-01-26T20:06:24Z",
			[]string{"WARC-Payload-Digest: sha1:AAAA", "Content-Type: application/http; msgtype=response"}, httpBlock) +
		warcRecord("1.0", "request", "http://www.iana.org/", "2014-01-26T20:06:24Z", []string{"Content-Type: application/http; msgtype=request"}, "GET / HTTP/1.1\r\n\r\n") +
		warcRecord("1.1", "revisit", "<http://www.iana.org/>", "2014-01-26T20:06:53.123456Z",
			[]string{"WARC-Payload-Digest: sha1:AAAA", "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
				"Content-Type: application/http; msgtype=response"}, "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n") +
		warcRecord("0.17", "response", "dns:www.archive.org", "2008-04-30T20:48:25Z", []string{"Content-Type: text/dns"}, "20080430204825\nwww.archive.org.\t589\tIN\tA\t207.241.229.39\n") +
		// LF-only line ends and a continuation line.
		"WARC/0.18\nWARC-Type: response\nWARC-Target-URI: http://a.example/x\nWARC-Date: 20081105135928\nContent-Type: application/http;\n msgtype=response\nContent-Length: 19\n\nHTTP/1.0 304 Nope\n\n\n\n" +
		// Positional header line of the early drafts.
		"WARC/0.10 19 response http://b.example/ 20060101000000 <urn:x> application/http\r\n\r\nHTTP/1.0 200 OK\r\n\r\n\r\n\r\n" +
		"garbage line\r\nmore garbage\r\n" +
		warcRecord("1.0", "response", "http://c.example/", "not a date", nil, "") +
		warcRecord("1.0", "response", "", "2014-01-26T20:06:24Z", nil, "") +
		"WARC/1.0\r\nWARC-Type: response\r\nthis is not a header\r\n\r\n" +
		warcRecord("1.0", "response", "http://d.example/", "2014-01-26T20:06:24Z", nil, strings.Repeat("x", 1000)) +
		warcRecord("1.0", "response", "http://e.example/", "2014-01-26T20:06:24Z", nil, "tail")
	got := readAllWARC(t, strings.NewReader(input), 500)
	want := []warcResult{
		{reason: ReasonRecordType, skip: true},
		{obs: records.Observation{Object: "http://www.iana.org/", Site: "www.iana.org", Time: time.Date(2014, 1, 26, 20, 6, 24, 0, time.UTC),
			Kind: records.KindVisit, Digest: "sha1:AAAA", LastModified: lm, Status: 200, Format: "warc"}},
		{reason: ReasonRecordType, skip: true},
		{obs: records.Observation{Object: "http://www.iana.org/", Site: "www.iana.org", Time: time.Date(2014, 1, 26, 20, 6, 53, 123456000, time.UTC),
			Kind: records.KindVisit, Changed: records.Unchanged, Digest: "sha1:AAAA", Status: 200, Format: "warc"}},
		{obs: records.Observation{Object: "dns:www.archive.org", Site: "www.archive.org", Time: time.Date(2008, 4, 30, 20, 48, 25, 0, time.UTC),
			Kind: records.KindVisit, Format: "warc"}},
		{obs: records.Observation{Object: "http://a.example/x", Site: "a.example", Time: time.Date(2008, 11, 5, 13, 59, 28, 0, time.UTC),
			Kind: records.KindVisit, Changed: records.Unchanged, Status: 304, Format: "warc"}},
		{obs: records.Observation{Object: "http://b.example/", Site: "b.example", Time: time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC),
			Kind: records.KindVisit, Status: 200, Format: "warc"}},
		{reason: ReasonWARC},     // garbage, then resync
		{reason: ReasonTime},     // bad date
		{reason: ReasonWARC},     // no target URI
		{reason: ReasonWARC},     // bad header line
		{reason: ReasonTooLarge}, // 1000 > 500 bytes
		{obs: records.Observation{Object: "http://e.example/", Site: "e.example", Time: time.Date(2014, 1, 26, 20, 6, 24, 0, time.UTC), Kind: records.KindVisit, Format: "warc"}},
	}
	if len(got) != len(want) {
		for _, g := range got {
			t.Logf("%+v", g)
		}
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestWARCGzipPerRecordAndTruncation(t *testing.T) {
	var buf bytes.Buffer
	for _, u := range []string{"http://a.example/", "http://b.example/"} {
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(warcRecord("1.0", "response", u, "2014-01-26T20:06:24Z", []string{"Content-Type: application/http; msgtype=response"}, httpBlock)))
		zw.Close()
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := readAllWARC(t, zr, 0)
	if len(got) != 2 || got[1].obs.Object != "http://b.example/" || got[1].obs.Status != 200 {
		t.Fatalf("%+v", got)
	}
	full := warcRecord("1.0", "response", "http://a.example/", "2014-01-26T20:06:24Z", nil, httpBlock)
	got = readAllWARC(t, strings.NewReader(full[:len(full)-20]), 0)
	if len(got) != 1 || got[0].reason != ReasonWARC {
		t.Fatalf("truncated: %+v", got)
	}
	got = readAllWARC(t, strings.NewReader(full[:40]), 0)
	if len(got) != 1 || got[0].reason != ReasonWARC {
		t.Fatalf("truncated header: %+v", got)
	}
}
