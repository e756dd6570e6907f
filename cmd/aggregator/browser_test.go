package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// requireChromiumEnv makes a missing Chromium a failure instead of a skip
// (scripts/test.sh sets it when it installed chromium, as for redis-server
// and kcat).
const requireChromiumEnv = "CHANGERATE_REQUIRE_CHROMIUM"

// artifactDirEnv names a directory where the browser test saves its
// screenshot; default a directory under the system's temporary directory.
const artifactDirEnv = "CHANGERATE_ARTIFACT_DIR"

func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireChromiumEnv) != "" {
		t.Fatalf("no chromium binary and %s is set (apt-get install chromium)", requireChromiumEnv)
	}
	t.Skipf("no chromium binary (apt-get install chromium; set %s to make this fatal)", requireChromiumEnv)
	return ""
}

// startDemo runs the embedded demo in process with its HTTP server on a free
// port and returns the server's base URL once the demo printed its table.
func startDemo(t *testing.T, ctx context.Context) string {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--http-addr=127.0.0.1:0", "--demo-pages=2", "--demo-days=10", "--partitions=2", "--log-level=warn"},
			strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	})
	re := regexp.MustCompile(`Serving http://([0-9.:]+)/metrics`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- "http://" + m[1]
			}
		}
		close(found)
	}()
	select {
	case base, ok := <-found:
		if !ok {
			t.Fatal("the demo ended without serving HTTP")
		}
		return base
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo did not start serving within 2 minutes")
	}
	return ""
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserObjectPage is the end-to-end test of the web page: the
// embedded demo, headless Chromium with JavaScript disabled, the search box
// on /, the object page's numbers against the JSON API's, the Duane plot,
// and a PNG screenshot saved as an artefact.
func TestBrowserObjectPage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	chromium := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	demoCtx, stopDemo := context.WithCancel(ctx)
	t.Cleanup(stopDemo)
	base := startDemo(t, demoCtx)

	// The object to look up: the top of the change-rate ranking.
	var top struct{ Objects []records.Estimate }
	getJSON(t, base+"/v1/top?by=change_rate&limit=1", &top)
	if len(top.Objects) != 1 {
		t.Fatal("no estimate ranked")
	}
	object := top.Objects[0].Object
	var api records.Estimate
	getJSON(t, base+"/v1/objects?url="+url.QueryEscape(object), &api)

	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1600))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// The pages must work without JavaScript.
	if _, err := chromedp.Call(bctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	// Type the URL as a user might paste it (upper-case host): the page
	// shows the canonical object.
	typed := strings.Replace(object, "://", "://", 1)
	if u, err := url.Parse(object); err == nil {
		typed = u.Scheme + "://" + strings.ToUpper(u.Host) + u.RequestURI()
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("url")),
		chromedp.SendKeys(chromedp.ID("url"), typed),
		chromedp.Click(chromedp.ID("search")),
		chromedp.WaitVisible(chromedp.ID("duane-change")),
	); err != nil {
		t.Fatalf("search %s: %v", typed, err)
	}
	text := func(id string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("#%s: %v", id, err)
		}
		return strings.TrimSpace(s)
	}
	if got := text("object"); got != object {
		t.Fatalf("page shows object %q, want %q", got, object)
	}
	attr := func(sel, name string) string {
		t.Helper()
		r, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
		if err != nil || !r.Exists {
			t.Fatalf("%s[%s]: %v (present %v)", sel, name, err, r.Exists)
		}
		return r.Value
	}
	// The page says the API's numbers as people read them (one change
	// every 31 h) and keeps them, with 4 significant digits, in data-
	// attributes.
	g := func(v float64) string { return fmt.Sprintf("%.4g", v) }
	want := map[string]string{
		"change-estimator": api.Estimator,
		"change-visits":    fmt.Sprint(api.Observations),
		"change-changes":   fmt.Sprint(api.Changes),
		"change-rate":      query.Every(*api.RatePerS),
	}
	if got := attr("#change-rate", "data-rate-per-s"); got != g(*api.RatePerS) {
		t.Errorf("#change-rate rate %q, API says %q", got, g(*api.RatePerS))
	}
	if api.CI95 != nil {
		want["change-ci"] = "one change every " + query.EveryCI(*api.RatePerS, api.CI95)
		if got, w := attr("#change-ci", "data-ci-per-s"), "["+g(api.CI95[0])+", "+g(api.CI95[1])+"]"; got != w {
			t.Errorf("#change-ci interval %q, API says %q", got, w)
		}
	}
	if api.TTLS != nil {
		want["ttl"] = query.Duration(*api.TTLS)
		if got := attr("#ttl", "data-seconds"); got != g(*api.TTLS) {
			t.Errorf("#ttl %q s, API says %q", got, g(*api.TTLS))
		}
	}
	if api.NextVisit != nil {
		want["next-visit"] = api.NextVisit.UTC().Format("2006-01-02 15:04:05Z")
	}
	for id, w := range want {
		if got := text(id); got != w {
			t.Errorf("#%s = %q, API says %q", id, got, w)
		}
	}
	// Every estimator of the API is a row of the table with its rate.
	for key, rate := range api.Estimates {
		sel := fmt.Sprintf(`#estimators tr[data-kind="change"][data-key="%s"] td.rate`, key)
		if got := attr(sel, "data-rate-per-s"); got != g(rate) {
			t.Errorf("estimator %s: page %q, API %s", key, got, g(rate))
		}
	}
	// The Duane plot has its fitted line and points, and its slope is
	// the window's.
	for _, sel := range []string{`#duane-change line.fit`, `#duane-change circle.centroid`, `#duane-change rect.last`} {
		if _, err := chromedp.Run(bctx, chromedp.Nodes(chromedp.CSS(sel))); err != nil {
			t.Errorf("plot element %s: %v", sel, err)
		}
	}
	if api.Window != nil && api.Window.DuaneSlope != nil {
		got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(".slope")))
		if err != nil || strings.TrimSpace(got) != g(*api.Window.DuaneSlope) {
			t.Errorf("slope on the page %q (%v), window %s", got, err, g(*api.Window.DuaneSlope))
		}
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(artifactDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "changerate-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "object-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot is not a PNG (%d bytes)", len(png))
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))

	// The overview lists the sites' top objects and links to their pages.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("h3.site"))); err != nil {
		t.Fatal(err)
	}
	html, err := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html, "/objects?url="+url.QueryEscape(object)) {
		t.Error("the overview does not link the top object's page")
	}
	ov, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err == nil {
		_ = os.WriteFile(filepath.Join(dir, "overview.png"), ov, 0o644)
	}
}
