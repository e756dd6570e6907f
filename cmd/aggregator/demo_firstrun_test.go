package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDemoFirstRun runs the demo as the README's `go run ./cmd/aggregator`
// does (default pages and days) and checks what a new user sees first:
//
//   - the printed output ends with an alert: the sample's one true shift
//     (a tenfold access surge, sample.Surge) confirmed by the detector;
//   - docs/api.md's /v1/plan example answer is what its /v1/plan
//     command returns from this demo (issue 32: it showed budget 5 and a
//     site for a command with budget 500 and no site).
func TestDemoFirstRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo with its default 30 days")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--http-addr=127.0.0.1:0", "--log-level=warn"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	var out bytes.Buffer
	var mu sync.Mutex
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`Serving http://([0-9.:]+)/metrics`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- "http://" + m[1]
			}
		}
		close(found)
	}()
	var base string
	select {
	case b, ok := <-found:
		if !ok {
			t.Fatal("the demo ended without serving HTTP")
		}
		base = b
	case <-time.After(4 * time.Minute):
		t.Fatal("the demo did not serve within 4 minutes")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	}()
	mu.Lock()
	printed := out.String()
	mu.Unlock()

	// The alert: one row for the surge page, kind access, its change
	// point within an hour of the true one (2026-10-21T00:00:00Z, two
	// thirds into 30 days from 2026-10-01).
	alertRow := regexp.MustCompile(`(?m)^\S+\s+http://shop\.example\.com/sale/item-00\s+access\s+\S+\s+\S+\s+2026-10-21T00:([0-5][0-9]):[0-9]{2}Z\s`)
	if !strings.Contains(printed, "alerts (rate shifts confirmed by the detector") || !alertRow.MatchString(printed) {
		t.Errorf("the demo's output shows no alert of the sample's access surge:\n%s", printed)
	}

	// docs/api.md's /v1/plan command and the answer shown below it.
	readme, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile(`curl -s '(localhost:8080)(/v1/plan\?[^']*)'`).FindSubmatchIndex(readme)
	if cmd == nil {
		t.Fatal("docs/api.md has no curl command of /v1/plan")
	}
	path := string(readme[cmd[4]:cmd[5]])
	rest := readme[cmd[1]:]
	i := bytes.Index(rest, []byte("```json\n"))
	if i < 0 {
		t.Fatal("docs/api.md has no ```json block after the /v1/plan command")
	}
	block := rest[i+len("```json\n"):]
	block = block[:bytes.Index(block, []byte("```"))]
	var shown map[string]any
	if err := json.Unmarshal(block, &shown); err != nil {
		t.Fatalf("docs/api.md's /v1/plan answer is not JSON: %v\n%s", err, block)
	}
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	// docs/api.md shows the first visit, then "...".
	visits, _ := got["visits"].([]any)
	if len(visits) == 0 {
		t.Fatalf("GET %s: no visits: %s", path, body)
	}
	got["visits"] = []any{visits[0], "..."}
	if !reflect.DeepEqual(shown, got) {
		want, _ := json.Marshal(got)
		t.Errorf("docs/api.md's answer of `curl -s 'localhost:8080%s'` differs from the demo's; the demo answers (first visit, then \"...\"):\n%s", path, want)
	}
}
