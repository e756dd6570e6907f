package query_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// tags matches an HTML tag with its attributes: what is left is the text
// a person reads.
var tags = regexp.MustCompile(`<[^>]*>`)

// visibleText is the text of an HTML page, its inline SVG's labels
// included.
func visibleText(body []byte) string {
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(string(body), " "))), " ")
}

// The pages say rates as mean times between events, in one unit per
// value and interval ("one change every 31 h"), never as raw rates per
// second (9.025e-06 /s, 0.0001433): those stay in data- attributes, equal
// to the API's (issue 32 item 7).
func TestPagesSayRatesAsTimes(t *testing.T) {
	e := pageEnv(t)
	var api records.Estimate
	getJSON(t, e, "/v1/objects?url="+q("http://a.example/x"), &api)
	for _, path := range []string{"/", "/objects?url=" + q("http://a.example/x"), "/objects?url=" + q("http://c.example/z")} {
		resp, body := raw(t, e, http.MethodGet, path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		// The Duane plot's axes are labelled at powers of ten seconds
		// (FormatSeconds: 10s, 16.7m): not rates.
		text := visibleText(regexp.MustCompile(`(?s)<svg.*?</svg>`).ReplaceAll(body, nil))
		for _, re := range []string{`\de[-+]\d`, `/s\b`, `\d(m|h|d|s)\b`} {
			if m := regexp.MustCompile(re).FindString(text); m != "" {
				t.Errorf("%s shows %q (matching %s):\n%s", path, m, re, text)
			}
		}
	}
	_, body := raw(t, e, http.MethodGet, "/objects?url="+q("http://a.example/x"))
	text := visibleText(body)
	// a.example/x changes every other hourly visit: its mean time between
	// changes, 5701 s, reads in minutes (2 min to 2 h), one decimal.
	mean := 1 / *api.RatePerS
	if mean < 120 || mean >= 7200 {
		t.Fatalf("a.example/x: mean time %v s, the test expects minutes", mean)
	}
	if every := fmt.Sprintf("one change every %.1f min", mean/60); !strings.Contains(text, every) {
		t.Errorf("the page lacks %q:\n%s", every, text)
	}
	if want := fmt.Sprintf(`data-rate-per-s="%.4g"`, *api.RatePerS); !strings.Contains(string(body), want) {
		t.Errorf("the page lacks the API's rate %s", want)
	}
}

// getJSON decodes the JSON answer of path into v.
func getJSON(t *testing.T, e *env, path string, v any) {
	t.Helper()
	resp, body := raw(t, e, http.MethodGet, path)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A window of one point has no Duane plot: the page says why instead of
// drawing a lone point (issue 32 item 7).
func TestNoDuanePlotOfOnePoint(t *testing.T) {
	e := pageEnv(t,
		records.Observation{Object: "http://d.example/one", Time: t0, Kind: records.KindVisit, Digest: "sha1:a", Format: "jsonl"},
		records.Observation{Object: "http://d.example/one", Time: t0.Add(time.Hour), Kind: records.KindVisit, Digest: "sha1:b", Format: "jsonl"})
	var view struct {
		ChangePlot *struct{ Points int64 } `json:"change_plot"`
	}
	getJSON(t, e, "/v1/objects/view?url="+q("http://d.example/one"), &view)
	resp, body := raw(t, e, http.MethodGet, "/objects?url="+q("http://d.example/one"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if view.ChangePlot == nil || view.ChangePlot.Points != 1 {
		t.Fatalf("the API's window: %+v", view.ChangePlot)
	}
	if strings.Contains(string(body), `<svg id="duane-change"`) || !strings.Contains(visibleText(body), "No Duane plot of the current change window: it has 1 point since") {
		t.Errorf("a one-point Duane plot is drawn or not explained:\n%s", body)
	}
}

// The page answers a lookup as /v1/objects does: the same status and the
// same message, for a URL without a host (javascript:alert(1) answered
// "port is not a number" after the page had prefixed http://), a text that
// is no URL ("nota url": 404 instead of 400), and a crawler's DNS lookup,
// which has a site (issue 32 items 7 and 10).
func TestPageLookupErrorsAsAPI(t *testing.T) {
	e := pageEnv(t)
	for _, c := range []struct {
		url    string
		status int
	}{
		{"javascript:alert(1)", 400},
		{"nota url", 400},
		{"dns:www.kb.dk", 404},
		{"http://[bad", 400},
		{"http://nowhere.example/x", 404},
	} {
		resp, body := raw(t, e, http.MethodGet, "/v1/objects?url="+q(c.url))
		var apiErr struct{ Error string }
		if err := json.Unmarshal(body, &apiErr); err != nil || resp.StatusCode != c.status {
			t.Fatalf("%s: API %d %s", c.url, resp.StatusCode, body)
		}
		resp, body = raw(t, e, http.MethodGet, "/objects?url="+q(c.url))
		if resp.StatusCode != c.status {
			t.Errorf("%s: page %d, API %d", c.url, resp.StatusCode, c.status)
		}
		m := regexp.MustCompile(`<p class="error" id="error">(.*?)</p>`).FindSubmatch(body)
		if m == nil || html.UnescapeString(string(m[1])) != apiErr.Error {
			t.Errorf("%s: the page does not say the API's %q:\n%s", c.url, apiErr.Error, body)
		}
	}
}

// A crawler's DNS lookups belong to the site they resolve, and the
// overview never shows a heading without a name: objects without a host
// are counted apart (issue 32 item 10).
func TestOverviewNoNamelessSite(t *testing.T) {
	e := pageEnv(t,
		records.Observation{Object: "dns:www.kb.dk", Time: t0, Kind: records.KindVisit, Status: 1, Digest: "sha1:D", Format: "heritrix"},
		records.Observation{Object: "javascript:alert(1)", Time: t0, Kind: records.KindAccess, Format: "jsonl"})
	_, body := raw(t, e, http.MethodGet, "/")
	page := string(body)
	if !strings.Contains(page, `<h3 class="site">www.kb.dk <span`) {
		t.Errorf("no heading for the DNS lookup's site www.kb.dk:\n%s", page)
	}
	if strings.Contains(page, `<h3 class="site"> <span`) || !strings.Contains(page, `<p class="muted" id="no-site">1 objects have no host`) {
		t.Errorf("a nameless site heading, or the objects without a host not counted:\n%s", page)
	}
}
