package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

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
	want := []string{"OBJECT", "ESTIMATED", "95% CI", "TTL", "http://a.example/", e.Estimator, human(1 / *e.RatePerS),
		"[" + human(1/e.CI95[1]) + ", " + human(1/e.CI95[0]) + "]", human(*e.TTLS), "1 change estimates"}
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
