package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// cgmExample1 is CGM Example 1 as observations: a page visited daily for 11
// days, changed at 6 of the 10 visits after the first.
func cgmExample1(t *testing.T) []byte {
	var in bytes.Buffer
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	enc := json.NewEncoder(&in)
	changed := []bool{true, false, true, true, false, true, false, true, false, true}
	for i := 0; i <= 10; i++ {
		o := records.Observation{Object: "http://a.example/", Time: t0.Add(time.Duration(i) * 24 * time.Hour), Kind: records.KindVisit,
			Changed: records.Unchanged}
		if i > 0 && changed[i-1] {
			o.Changed = records.Changed
		}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	return in.Bytes()
}

// TestFilterTable: --out-format=table prints the final estimates as the
// demo's readable table, with the same numbers as the JSON output.
func TestFilterTable(t *testing.T) {
	in := cgmExample1(t)
	var js, tab, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--in=-", "--store=memory", "--emit=final", "--log-level=error"}, bytes.NewReader(in), &js, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	var e records.Estimate
	if err := json.Unmarshal(bytes.TrimSpace(js.Bytes()), &e); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"--in=-", "--store=memory", "--emit=final", "--out-format=table", "--log-level=error"}, bytes.NewReader(in), &tab, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	out := tab.String()
	u := query.UnitOf(1 / *e.RatePerS)
	want := []string{"OBJECT", "MEAN TIME BETWEEN CHANGES", "95% INTERVAL", "CACHE TTL", "http://a.example/", e.Estimator, u.Format(1 / *e.RatePerS),
		u.Interval(e.CI95), u.Format(*e.TTLS), "above 0 for 1 of the 1 objects with a change estimate"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "{") {
		t.Errorf("table output contains JSON:\n%s", out)
	}
	err := run(context.Background(), []string{"--in=-", "--out-format=yaml"}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "CHANGERATE_OUT_FORMAT") {
		t.Errorf("bad --out-format: %v", err)
	}
}

// TestFilterHTTPAPI: filter mode with --http-addr serves the query API from
// its in-memory store while it reads (--sort=false: a sorted input is applied
// only once it has been read whole). The reorder buffer holds the last visit
// until the partition has been idle for --idle-release.
func TestFilterHTTPAPI(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("CHANGERATE_HTTP_ADDR", addr)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- run(context.Background(), []string{"--in=-", "--store=memory", "--sort=false", "--idle-release=200ms", "--batch-size=11", "--emit-interval=0", "--log-level=error"}, pr, &out, io.Discard)
	}()
	if _, err := pw.Write(cgmExample1(t)); err != nil {
		t.Fatal(err)
	}
	u := "http://" + addr + "/v1/objects?url=" + url.QueryEscape("HTTP://A.example:80/")
	var e records.Estimate
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(u)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatal(err)
				}
				if e.Observations == 11 {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no estimate from %s: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// CGM Example 1: the improved estimate is −log(4.5/10.5) = 0.8473 per day.
	if perDay := e.Estimates["cgm_improved"] * 86400; perDay < 0.8472 || perDay > 0.8474 || e.Object != "http://a.example/" {
		t.Errorf("API: %s cgm_improved %.4f/day, want 0.8473", e.Object, perDay)
	}
	// The API's record is the one written to --out.
	var published records.Estimate
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &published); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(published, e) {
		t.Errorf("API record %+v differs from the published %+v", e, published)
	}
}

var updateTable = flag.Bool("update-table", false, "rewrite testdata/table.golden")

// TestTableReadable: --out-format=table on objects of every kind (issue 32
// item 6): lines of bounded width (a 600-character URL is elided), the
// objects with a rate listed most frequent first and the others counted,
// not listed, no table header without rows, headers that say what their
// column holds, each row's durations in one unit, and an interval for
// access rates. The whole table is compared with testdata/table.golden
// (-update-table rewrites it).
func TestTableReadable(t *testing.T) {
	long := "http://long.example/" + strings.Repeat("segment/", 75) + "end.html"
	var in strings.Builder
	in.WriteString(visitsJSONL("http://changing.example/", nil, "A", "B", "C", "C", "D"))
	in.WriteString(visitsJSONL(long, []int{0, 2, 4, 6, 8}, "A", "B", "C", "D", "E"))
	in.WriteString(visitsJSONL("http://static.example/", []int{0, 1, 5, 30}, "S", "S", "S", "S"))
	in.WriteString(visitsJSONL("http://www.kb.dk/", nil, "K1", "K2"))
	for i := range 40 { // one visit each: no rate
		in.WriteString(visitsJSONL(fmt.Sprintf("http://once.example/%d", i), nil, "X"))
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 { // an access every 10 minutes
		fmt.Fprintf(&in, `{"object":"http://proxied.example/","time":%q,"kind":"access","status":200}`+"\n", t0.Add(time.Duration(i)*10*time.Minute).Format(time.RFC3339))
	}
	in.WriteString(`{"object":"http://proxied.example/once","time":"2026-03-01T00:00:00Z","kind":"access","status":200}` + "\n")
	out, stderr, err := filter(t, []byte(in.String()), "--out-format=table")
	if err != nil {
		t.Fatal(err, stderr)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 200 {
			t.Errorf("a line of %d characters:\n%s", n, l)
		}
	}
	for _, bad := range []string{"once.example", "static.example", "kb.dk", "{", "ESTIMATED"} {
		if strings.Contains(out, bad) {
			t.Errorf("table shows %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"not listed: 1 rated 0 (informative visits, no change seen), 41 without a rate",
		"not listed: 1 without a rate", "MEAN TIME BETWEEN ACCESSES", "http://long.example/segment/", "…"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The long URL changes every 2 h, more often than the daily one: first.
	if strings.Index(out, "long.example") > strings.Index(out, "changing.example") {
		t.Errorf("not most frequent first:\n%s", out)
	}
	// One unit per row: every duration cell of a row ends in the same unit.
	unitRe := regexp.MustCompile(`[\d∞\]] (s|min|h|d|y)\b`)
	for _, l := range strings.Split(out, "\n") {
		us := unitRe.FindAllStringSubmatch(l, -1)
		for _, u := range us[min(1, len(us)):] {
			if u[1] != us[0][1] {
				t.Errorf("units %v in one row: %s", us, l)
			}
		}
		if strings.Contains(l, "proxied.example/ ") && !strings.Contains(l, "[") {
			t.Errorf("access row without an interval: %s", l)
		}
	}
	// Without access estimates there is no access table.
	out2, _, _ := filter(t, []byte(visitsJSONL("http://changing.example/", nil, "A", "B", "C", "C", "D")), "--out-format=table")
	if strings.Contains(out2, "access") {
		t.Errorf("an access header without access estimates:\n%s", out2)
	}
	golden := filepath.Join("testdata", "table.golden")
	if *updateTable {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("table differs from %s (-update-table rewrites it):\n%s", golden, out)
	}
}
