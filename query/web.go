package query

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages holds the parsed HTML templates. The pages are rendered on the
// server from the API's response structs (TopResult, AlertsResult,
// ObjectView): every number on them is a number of the JSON API. They need
// no JavaScript.
type pages struct {
	index, object *template.Template
}

func newPages() (*pages, error) {
	funcs := template.FuncMap{
		"rate":    fmtRate,
		"ci":      fmtCI,
		"when":    fmtTime,
		"num":     func(v float64) string { return fmt.Sprintf("%.4g", v) },
		"objurl":  func(o string) string { return "/objects?url=" + url.QueryEscape(o) },
		"deref":   func(p *float64) float64 { return *p },
		"every":   Every,
		"everyci": everyCI,
		"dur":     Duration,
		"pos":     func(v float64) bool { return v > 0 },
	}
	base, err := template.New("base").Funcs(funcs).ParseFS(templateFS, "templates/base.html")
	if err != nil {
		return nil, fmt.Errorf("query: templates: %w", err)
	}
	p := &pages{}
	for name, dst := range map[string]**template.Template{"index.html": &p.index, "object.html": &p.object} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("query: templates: %w", err)
		}
		*dst = t
	}
	return p, nil
}

// fmtRate prints a rate per second with 4 significant digits (the page's
// numbers compare with the API's at this precision).
func fmtRate(v float64) string { return fmt.Sprintf("%.4g", v) }

// FormatSeconds formats a duration in seconds for people: 0.1s, 45s, 12.5m,
// 3.2h, 4.0d; ∞ for +Inf and NaN. The pages and the aggregator's tables
// use it.
func FormatSeconds(s float64) string {
	switch {
	case math.IsInf(s, 1) || math.IsNaN(s):
		return "∞"
	case s > 0 && s < 1: // 0.1s, 0.05s: %.0f would print 0s
		return strconv.FormatFloat(s, 'g', 2, 64) + "s"
	case s < 120:
		return fmt.Sprintf("%.0fs", s)
	case s < 2*3600:
		return fmt.Sprintf("%.1fm", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.1fh", s/3600)
	default:
		return fmt.Sprintf("%.1fd", s/86400)
	}
}

func fmtCI(ci [2]float64) string { return "[" + fmtRate(ci[0]) + ", " + fmtRate(ci[1]) + "]" }

// everyCI is EveryCI for the templates: rate nil (no best estimate) takes
// its unit from the interval.
func everyCI(rate *float64, ci *[2]float64) string {
	r := 0.0
	if rate != nil {
		r = *rate
	}
	return EveryCI(r, ci)
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// indexPage is the model of /.
type indexPage struct {
	Sites   []siteTop
	Access  *TopResult
	Shift   *TopResult
	Alerts  []records.Alert
	Indexed int
	// AllSites is the number of indexed sites, of which Sites lists the
	// first (most objects first); More links to a page listing more of
	// them ("" when Sites lists them all).
	AllSites int
	More     string
	MoreN    int
}

type siteTop struct {
	SiteCount
	// Ranked is the number of the site's objects with a change rate (the
	// others have an estimate without a best rate yet, or accesses only).
	Ranked int
	Top    *TopResult
}

// defaultPageSites is the number of sites / lists without ?sites= (as
// /v1/sites?limit=20).
const defaultPageSites = 20

func (s *Server) pageIndex(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := params(q, "sites"); err != nil {
		s.pageError(w, r, err)
		return
	}
	n := defaultPageSites
	if v := q.Get("sites"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > s.cfg.MaxLimit {
			s.pageError(w, r, badRequest("sites must be an integer in [1, %d], got %q", s.cfg.MaxLimit, v))
			return
		}
	}
	m := indexPage{}
	all := s.idx.Sites(math.MaxInt)
	m.AllSites = len(all)
	for _, sc := range all {
		m.Indexed += sc.Objects
	}
	if len(all) > n {
		m.MoreN = min(len(all), s.cfg.MaxLimit)
		if m.MoreN > n {
			m.More = "/?sites=" + strconv.Itoa(m.MoreN)
		}
		all = all[:n]
	}
	ranked := s.idx.ranked(ByChangeRate)
	for _, sc := range all {
		m.Sites = append(m.Sites, siteTop{SiteCount: sc, Ranked: ranked[sc.Site], Top: s.top(ByChangeRate, sc.Site, 5)})
	}
	m.Access, m.Shift = s.top(ByAccessRate, "", 10), s.top(ByShift, "", 10)
	for _, raw := range s.idx.Alerts(time.Time{}, "", 20) {
		var a records.Alert
		if json.Unmarshal(raw, &a) == nil {
			m.Alerts = append(m.Alerts, a)
		}
	}
	s.render(w, r, s.pages.index, m)
}

// objectPage is the model of /objects.
type objectPage struct {
	Query     string
	View      *ObjectView
	Error     string
	Rows      []estimatorRow
	Plots     []plotSVG
	NoPlots   []noPlot
	Timeline  *timelineSVG
	Canonical bool // the query was already canonical
	// Assumed is the URL looked up when the query had no scheme:
	// http:// and the query (canonical), "" otherwise.
	Assumed string
}

// estimatorRow is one estimator of one kind.
type estimatorRow struct {
	Kind, Key string
	Rate      float64
	CI        *[2]float64
	Best      bool
}

// EveryCI is the row's interval as mean times in the unit of its rate's.
func (r estimatorRow) EveryCI() string { return EveryCI(r.Rate, r.CI) }

// noPlot is a window whose Duane plot is not drawn: too few points for
// the fitted line (DuaneView.Slope needs 3).
type noPlot struct {
	Kind   string
	Points int64
	Origin time.Time
}

func rows(e *records.Estimate) []estimatorRow {
	if e == nil {
		return nil
	}
	keys := make([]string, 0, len(e.Estimates))
	for k := range e.Estimates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]estimatorRow, 0, len(keys))
	for _, k := range keys {
		row := estimatorRow{Kind: e.Kind, Key: k, Rate: e.Estimates[k], Best: k == e.Estimator}
		if ci, ok := e.Intervals[k]; ok {
			row.CI = &ci
		} else if row.Best && e.CI95 != nil && e.RatePerS != nil && *e.RatePerS == row.Rate {
			// The published rate is this estimator's (after a
			// confirmed shift, a window model's, which has no interval
			// of its own in intervals): ci95 is its interval.
			ci := *e.CI95
			row.CI = &ci
		}
		out = append(out, row)
	}
	return out
}

func (s *Server) pageObject(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m := objectPage{Query: q.Get("url")}
	if raw := strings.TrimSpace(m.Query); hostFirst(raw) {
		// A URL typed without its scheme (www.example.org/): look up
		// http:// and say so on the page (the API does not guess).
		// Anything else ("javascript:…", "nota url") is looked up as
		// typed, so that the page answers as /v1/objects does.
		q = url.Values{"url": {"http://" + raw}}
	}
	obj, err := s.object(q)
	if err == nil {
		if q.Get("url") != m.Query {
			m.Assumed = obj
		}
		m.View, err = s.view(r.Context(), obj)
	}
	if err != nil {
		status, msg := statusOf(err)
		if status >= 500 {
			s.pageError(w, r, err)
			return
		}
		m.Error = msg
		w.WriteHeader(status)
		s.render(w, r, s.pages.object, m)
		return
	}
	m.Canonical = obj == strings.TrimSpace(m.Query)
	m.Rows = append(rows(m.View.Change), rows(m.View.Access)...)
	for _, k := range []struct {
		kind string
		v    *DuaneView
	}{{"change", m.View.ChangePlot}, {"access", m.View.AccessPlot}} {
		if p := plot(k.kind, k.v); p != nil {
			m.Plots = append(m.Plots, *p)
		} else if k.v != nil {
			m.NoPlots = append(m.NoPlots, noPlot{Kind: k.kind, Points: k.v.Points, Origin: k.v.Origin})
		}
	}
	m.Timeline = timeline(m.View.Timeline)
	s.render(w, r, s.pages.object, m)
}

// hostFirst reports whether raw is a URL typed without its scheme: it
// has no "://" and starts with a host name, optionally with a port
// (www.example.org/x, localhost:8080/): what precedes its first '/', '?'
// or '#' holds only host name bytes and, before a ':', a dot or
// "localhost" (so that "dns:host" and "javascript:…" keep their scheme).
func hostFirst(raw string) bool {
	if raw == "" || strings.Contains(raw, "://") {
		return false
	}
	host := raw
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if host == "" {
		return false
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':') {
			return false
		}
	}
	if name, _, port := strings.Cut(host, ":"); port {
		return strings.Contains(name, ".") || strings.EqualFold(name, "localhost")
	}
	return true
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, t *template.Template, m any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", m); err != nil {
		s.pageError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := s.failed(w, r, err)
	http.Error(w, msg, status)
}

// Plot geometry (SVG user units).
const (
	plotW, plotH       = 560.0, 320.0
	plotLeft, plotBot  = 70.0, 40.0
	plotRight, plotTop = 20.0, 20.0
)

// plotSVG is a Duane plot laid out for SVG.
type plotSVG struct {
	Kind                   string
	View                   *DuaneView
	X0, Y0, X1, Y1         float64 // fitted line, SVG coordinates
	HasLine                bool
	CX, CY, LX, LY         float64 // centroid and last point
	HasCentroid, HasLast   bool
	XTicks, YTicks         []tick
	Left, Right, Top, Bot  float64
	Width, Height          float64
	XLabelX, XLabelY, YLbl float64
}

type tick struct {
	Pos   float64
	Label string
}

// plot lays out a Duane plot: x = ln t, y = ln MTBU (both in natural
// logs, labelled with durations at powers of ten).
func plot(kind string, v *DuaneView) *plotSVG {
	// Without the fitted line (fewer than 3 points) a plot is a lone
	// point or two that explain nothing: the page says why instead.
	if v == nil || v.Last == nil || len(v.Line) != 2 {
		return nil
	}
	pts := [][2]float64{*v.Last}
	if v.Centroid != nil {
		pts = append(pts, *v.Centroid)
	}
	pts = append(pts, v.Line...)
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		xmin, xmax = math.Min(xmin, p[0]), math.Max(xmax, p[0])
		ymin, ymax = math.Min(ymin, p[1]), math.Max(ymax, p[1])
	}
	pad := func(lo, hi float64) (float64, float64) {
		if hi-lo < 1 {
			m := (lo + hi) / 2
			lo, hi = m-0.5, m+0.5
		}
		d := (hi - lo) * 0.1
		return lo - d, hi + d
	}
	xmin, xmax = pad(xmin, xmax)
	ymin, ymax = pad(ymin, ymax)
	p := &plotSVG{Kind: kind, View: v, Left: plotLeft, Right: plotW - plotRight, Top: plotTop, Bot: plotH - plotBot,
		Width: plotW, Height: plotH}
	sx := func(x float64) float64 { return p.Left + (x-xmin)/(xmax-xmin)*(p.Right-p.Left) }
	sy := func(y float64) float64 { return p.Bot - (y-ymin)/(ymax-ymin)*(p.Bot-p.Top) }
	if len(v.Line) == 2 {
		p.X0, p.Y0, p.X1, p.Y1, p.HasLine = sx(v.Line[0][0]), sy(v.Line[0][1]), sx(v.Line[1][0]), sy(v.Line[1][1]), true
	}
	if v.Centroid != nil {
		p.CX, p.CY, p.HasCentroid = sx(v.Centroid[0]), sy(v.Centroid[1]), true
	}
	p.LX, p.LY, p.HasLast = sx(v.Last[0]), sy(v.Last[1]), true
	p.XTicks = ticks(xmin, xmax, sx)
	p.YTicks = ticks(ymin, ymax, sy)
	p.XLabelX, p.XLabelY, p.YLbl = (p.Left+p.Right)/2, plotH-6, (p.Top+p.Bot)/2
	return p
}

// ticks are at powers of ten seconds within [lo, hi] (natural logs).
func ticks(lo, hi float64, scale func(float64) float64) []tick {
	var out []tick
	for e := math.Ceil(lo / math.Ln10); e*math.Ln10 <= hi; e++ {
		out = append(out, tick{Pos: scale(e * math.Ln10), Label: FormatSeconds(math.Pow(10, e))})
	}
	if len(out) < 2 { // a narrow range: label the ends
		out = []tick{{scale(lo), FormatSeconds(math.Exp(lo))}, {scale(hi), FormatSeconds(math.Exp(hi))}}
	}
	return out
}

// timelineSVG lays the timeline's events on a horizontal time axis.
type timelineSVG struct {
	Width, Height float64
	Events        []timelineMark
	From, To      time.Time
}

type timelineMark struct {
	TimelineEvent
	X, Y   float64
	Color  string
	Anchor string  // text-anchor: labels right of the middle end at their mark
	DX     float64 // label offset
}

func timeline(ev []TimelineEvent) *timelineSVG {
	if len(ev) == 0 {
		return nil
	}
	t := &timelineSVG{Width: 760, From: ev[0].Time, To: ev[len(ev)-1].Time}
	span := t.To.Sub(t.From).Seconds()
	for i, e := range ev {
		x := 20.0
		if span > 0 {
			x = 20 + e.Time.Sub(t.From).Seconds()/span*(t.Width-40)
		}
		color := "#1f77b4"
		if e.Kind == records.EstimateAccess {
			color = "#2ca02c"
		}
		m := timelineMark{TimelineEvent: e, X: x, Y: 40 + float64(i)*18, Color: color, Anchor: "start", DX: 4}
		if x > t.Width/2 {
			m.Anchor, m.DX = "end", -4
		}
		t.Events = append(t.Events, m)
	}
	t.Height = 60 + float64(len(ev))*18
	return t
}
