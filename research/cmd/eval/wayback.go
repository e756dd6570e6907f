package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
)

// waybackFile is the Wayback CDX API sample, beside the data folder.
const waybackFile = "wayback-cdx-api-edgi.cdx"

// waybackPage is the section's own page in -out (the section is also in
// REPORT.md): `eval -only=wayback -out=DIR` regenerates it alone.
const waybackPage = "wayback.md"

// wbObject is one URL's captures as the aggregator sees them.
type wbObject struct {
	name                 string
	rows                 int
	redirects, errors    int // 3xx (but 304), 4xx/5xx rows
	noDigest, revisitRdr int // rows without a digest; revisits of a redirect
	visits               []float64
	obj                  aggregate.Object
}

// waybackSection reads the real Wayback rows with the project's CDX
// parser, applies them per URL with the aggregator's own Object.Apply
// (the same visit rule, estimators and best-estimate rule as the
// service), and reports per URL the captures, the intervals between
// informative visits, the changes detected and every change-rate
// estimator with its interval. Rates are per day.
func waybackSection(e *Env) {
	page := &Report{dir: e.R.dir}
	defer func() {
		e.R.b.WriteString(page.b.String())
		if err := os.WriteFile(filepath.Join(e.R.dir, waybackPage), []byte(page.b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "eval: wayback: %v\n", err)
		}
	}()
	r := page
	r.H(2, "Real captures: the Wayback Machine's CDX rows (cnn.com, dw.com, zew.de, nasa.gov, 1996–2022)")
	path := filepath.Join(e.Data, "..", "cdx-samples", waybackFile)
	objs, order, lines, err := readWayback(path)
	if err != nil {
		r.P("Skipped: %v (pass --data; the capture samples are in ../cdx-samples beside it).", err)
		e.dataMissing = append(e.dataMissing, err.Error())
		return
	}
	m := aggregate.DefaultModel()
	r.P("The %d rows that the Internet Archive's Wayback CDX API returned for a few sites (`../shared/cdx-samples/%s`, see its SOURCE.txt), "+
		"read with the project's `cdx` parser and applied per URL with the aggregator's own `Object.Apply` and `ChangeEstimate` "+
		"(default model): this table is what `ingest --format=cdx | aggregator --emit=final` publishes, with the steps shown. "+
		"A capture is a visit; a visit is informative when it is a 200 with a digest or a revisit of one (redirects, errors, "+
		"revisits of a redirect and rows without a digest say nothing about the page's content); a change is a digest that differs "+
		"from the URL's previous one. The archive visits at irregular times: bursts of captures minutes apart, then gaps of months. "+
		"Rates are changes per day, intervals 95%%.", lines, waybackFile)

	var scratch estimators.Estimates
	var rows [][]string
	type ratio struct {
		name   string
		x, n   int64
		ratio  float64
		naive  float64
		irr    float64
		median float64
	}
	var ratios []ratio
	perDay := func(x float64) string { return f3s(x * 86400) }
	ci := func(est records.Estimate, key string) string {
		v, ok := est.Estimates[key]
		if !ok {
			return "—"
		}
		s := perDay(v)
		if iv, ok := est.Intervals[key]; ok {
			s += " [" + perDay(iv[0]) + ", " + perDay(iv[1]) + "]"
		}
		return s
	}
	skipped := 0
	for _, name := range order {
		o := objs[name]
		if len(o.visits) < 2 {
			skipped++
			continue
		}
		est, ok := o.obj.ChangeEstimate(name, &m, &scratch)
		if !ok {
			skipped++
			continue
		}
		var iv []float64
		for i := 1; i < len(o.visits); i++ {
			iv = append(iv, o.visits[i]-o.visits[i-1])
		}
		span := o.visits[len(o.visits)-1] - o.visits[0]
		med := quantile(iv, 0.5)
		cv, _ := o.obj.Change.IntervalCV()
		best := "—"
		if est.RatePerS != nil {
			best = perDay(*est.RatePerS) + " (" + est.Estimator + ")"
		}
		noInfo := o.redirects + o.errors + o.noDigest + o.revisitRdr
		rows = append(rows, []string{
			"`" + name + "`",
			fmt.Sprintf("%d", o.rows),
			fmt.Sprintf("%d (%d redirects, %d errors, %d revisits of a redirect, %d no digest)", noInfo, o.redirects, o.errors, o.revisitRdr, o.noDigest),
			fmt.Sprintf("%d", len(o.visits)),
			fmt.Sprintf("%.0f", span/86400),
			fmt.Sprintf("%s / %s / %s (CV %.1f)", dur(quantile(iv, 0)), dur(med), dur(quantile(iv, 1)), cv),
			fmt.Sprintf("%d", est.Changes),
			ci(est, estimators.KeyNaive),
			ci(est, estimators.KeyCGMImproved),
			ci(est, estimators.KeyBayesBeta),
			ci(est, estimators.KeyCGMIrregularMLE),
			others(est),
			best,
		})
		nv := est.Estimates[estimators.KeyNaive]
		irr, irrOK := est.Estimates[estimators.KeyCGMIrregularMLE]
		if nv > 0 {
			q := math.NaN() // eq. 2 has no finite root when every interval changed
			if irrOK {
				q = irr / nv
			}
			ratios = append(ratios, ratio{name, est.Changes, int64(len(o.visits) - 1), q, nv, irr, med})
		}
	}
	r.Table([]string{"URL", "captures", "no information", "informative visits", "span (days)", "interval min / median / max",
		"changes X", "naive X/T", "cgm_improved", "bayes_beta", "cgm_irregular_mle", "others (no interval)", "published (best rule)"}, rows)
	r.P("— : the estimator is undefined: cgm_irregular_mle when every interval saw a change (X = n: CGM eq. 2 has no finite root), " +
		"an interval when its bound is infinite (cgm_improved at X = n). The others are the NHPP window's models (weibull, duane, " +
		"intuitive: the rate at the end of the change window, see the NHPP section) and Malcolm & Armitage's estimate without " +
		"Last-Modified, none with an interval.")
	r.P("%d URLs with fewer than two informative visits (most of them nasa.gov paths captured once, as 404s) have no estimate and are not listed.", skipped)

	r.H(3, "What the irregular-visit correction does")
	sort.Slice(ratios, func(i, j int) bool { return ratios[i].name < ratios[j].name })
	var rr [][]string
	var rs []float64
	var undefined []string
	for _, x := range ratios {
		irr, q := "undefined (X = n)", "—"
		if !math.IsNaN(x.ratio) {
			rs = append(rs, x.ratio)
			irr, q = perDay(x.irr), fmt.Sprintf("%.2f×", x.ratio)
		} else {
			undefined = append(undefined, "`"+x.name+"`")
		}
		rr = append(rr, []string{"`" + x.name + "`", fmt.Sprintf("%d of %d", x.x, x.n), dur(x.median), perDay(x.naive), irr, q})
	}
	r.Table([]string{"URL", "intervals with a change", "median interval", "naive X/T", "cgm_irregular_mle (CGM eq. 2)", "corrected ÷ naive"}, rr)
	if len(rs) > 0 {
		r.P("The naive estimate counts at most one change per interval between visits and divides by the total time; CGM's irregular-access "+
			"MLE (§4.3, eq. 2) solves Σ tᶜᵢ/(e^{λtᶜᵢ}−1) = Σ tᵘⱼ over the changed intervals tᶜ and the unchanged ones tᵘ, so a changed interval "+
			"of months counts for the several changes it probably hid. On the %d URLs where it is defined, the corrected rate is %.2f× the naive "+
			"one at the median (from %.2f× to %.2f×); %d of them are more than 3× the naive one. Where every interval saw a change (%s) eq. 2 "+
			"has no finite root: the data say only that the page changes faster than it was captured, and the naive rate is a lower bound.",
			len(rs), quantile(rs, 0.5), quantile(rs, 0), quantile(rs, 1), countAbove(rs, 3), strings.Join(undefined, ", "))
	}
	r.P("Reproduce: `go -C research run ./cmd/eval -only=wayback -out=DIR` writes this page as DIR/%s (and a REPORT.md of this section alone, "+
		"so give a scratch DIR and copy the page into docs/eval; the full `make eval` writes both), or run the pipeline itself: "+
		"`go run ./cmd/ingest --format=auto --out=- ../shared/cdx-samples/* | go run ./cmd/aggregator --in=- --store=memory --out=- --emit=final`.", waybackPage)
}

// readWayback parses the CDX file and applies its captures per URL.
func readWayback(path string) (map[string]*wbObject, []string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("wayback: %w", err)
	}
	defer f.Close()
	p, err := parse.New("cdx", parse.Config{})
	if err != nil {
		return nil, nil, 0, err
	}
	m := aggregate.DefaultModel()
	objs := map[string]*wbObject{}
	var order []string
	sc := bufio.NewScanner(f)
	lines := 0
	var obs records.Observation
	for sc.Scan() {
		lines++
		if err := p.Parse(sc.Bytes(), &obs); err != nil {
			if parse.IsSkip(err) {
				continue
			}
			return nil, nil, 0, fmt.Errorf("wayback: %s line %d: %w", path, lines, err)
		}
		o := objs[obs.Object]
		if o == nil {
			o = &wbObject{name: obs.Object}
			objs[obs.Object] = o
			order = append(order, obs.Object)
		}
		o.rows++
		redirect := obs.Status >= 300 && obs.Status < 400 && obs.Status != 304
		switch {
		case redirect && strings.Contains(sc.Text(), " warc/revisit "):
			o.revisitRdr++
		case redirect:
			o.redirects++
		case obs.Status >= 400:
			o.errors++
		case obs.Digest == "":
			o.noDigest++
		}
		var eff aggregate.Effects
		if o.obj.Apply(&obs, &m, &eff) == aggregate.Applied {
			o.visits = append(o.visits, float64(obs.Time.UnixMilli())/1000)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("wayback: %w", err)
	}
	return objs, order, lines, nil
}

// f3s formats a rate with 3 significant digits.
func f3s(x float64) string {
	if x == 0 {
		return "0"
	}
	return fmt.Sprintf("%.3g", x)
}

// dur formats a duration in seconds as minutes, hours or days.
func dur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case math.IsNaN(s):
		return "—"
	case d < time.Hour:
		return fmt.Sprintf("%.0f min", d.Minutes())
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	default:
		return fmt.Sprintf("%.0f d", d.Hours()/24)
	}
}

func countAbove(xs []float64, t float64) int {
	n := 0
	for _, x := range xs {
		if x > t {
			n++
		}
	}
	return n
}

// others lists the estimates of est outside the table's four columns.
func others(est records.Estimate) string {
	var parts []string
	for k, v := range est.Estimates {
		switch k {
		case estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta, estimators.KeyCGMIrregularMLE:
			continue
		}
		parts = append(parts, k+" "+f3s(v*86400))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}
