package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/changerate/changerate/internal/sample"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// tableWriter collects the estimate records written to it (JSON lines) and
// prints the latest one per object and kind as the demo's readable tables
// (--out-format=table).
type tableWriter struct {
	out    io.Writer
	buf    []byte
	latest map[[2]string]records.Estimate
	bad    int
}

func newTableWriter(out io.Writer) *tableWriter {
	return &tableWriter{out: out, latest: map[[2]string]records.Estimate{}}
}

// Write implements io.Writer: complete lines are decoded, a partial line
// waits for its end.
func (t *tableWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := bytes.TrimSpace(t.buf[:i])
		t.buf = t.buf[i+1:]
		if len(line) == 0 {
			continue
		}
		var e records.Estimate
		if err := json.Unmarshal(line, &e); err != nil {
			t.bad++
			continue
		}
		t.latest[[2]string{e.Object, e.Kind}] = e
	}
}

// print writes the tables of the latest estimates.
func (t *tableWriter) print() error {
	var change, access []records.Estimate
	for _, e := range t.latest {
		if e.Kind == records.EstimateAccess {
			access = append(access, e)
		} else {
			change = append(change, e)
		}
	}
	sort.Slice(change, func(i, j int) bool { return change[i].Object < change[j].Object })
	sort.Slice(access, func(i, j int) bool { return access[i].Object < access[j].Object })
	if t.bad > 0 {
		return fmt.Errorf("table: %d estimate lines could not be decoded", t.bad)
	}
	return printEstimates(t.out, change, access, nil)
}

// maxObjectWidth bounds the OBJECT column: a longer URL is elided in the
// middle (its scheme and host, and the end of its path, stay).
const maxObjectWidth = 64

// printEstimates prints the change and then the access estimates as
// tables a person reads: only the objects with a rate above 0 get a row,
// most frequent first; those rated 0 and those without a rate are counted
// in one line each (the JSON output lists every object). Each row gives
// the mean time between changes (accesses), 1/rate, its 95% interval and
// the cache TTL in one unit. truth, when it knows an object, adds its true
// mean time (the demo). A table without any estimate is not printed.
func printEstimates(w io.Writer, change, access []records.Estimate, truth map[string]sample.Page) error {
	if len(change) > 0 {
		var errs []float64
		rows := rated(change)
		fmt.Fprintf(w, "change rates (above 0 for %d of the %d objects with a change estimate):\n", len(rows), len(change))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header(tw, len(rows), cols(truth != nil, "OBJECT", "TRUE MEAN TIME", "MEAN TIME BETWEEN CHANGES", "95% INTERVAL", "CACHE TTL", "ESTIMATOR", "VISITS", "CHANGES SEEN", "WINDOW"))
		for _, e := range rows {
			u := query.UnitOf(1 / *e.RatePerS)
			tru := "?"
			if tp, ok := truth[e.Object]; ok && tp.ChangeRate > 0 {
				tru = u.Format(1 / tp.ChangeRate)
				errs = append(errs, math.Abs(math.Log(*e.RatePerS/tp.ChangeRate)))
			}
			ttl, win := "-", "-"
			if e.TTLS != nil {
				ttl = u.Format(*e.TTLS)
			}
			if e.Window != nil {
				win = e.Window.State
			}
			fmt.Fprint(tw, cols(truth != nil, elide(e.Object, maxObjectWidth), tru, u.Format(1 / *e.RatePerS), u.Interval(ciOf(e)), ttl,
				e.Estimator, fmt.Sprint(e.Observations), fmt.Sprint(e.Changes), win))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeUnrated(w, change, "change", "informative visits, no change seen")
		if len(errs) > 0 {
			sort.Float64s(errs)
			fmt.Fprintf(w, "median |log(estimated/true rate)| over %d objects: %.3f (0 is perfect; 0.1 is about 10%% off)\n",
				len(errs), errs[len(errs)/2])
		}
	}
	if len(access) > 0 {
		if len(change) > 0 {
			fmt.Fprintln(w)
		}
		rows := rated(access)
		fmt.Fprintf(w, "access rates (above 0 for %d of the %d objects with an access estimate):\n", len(rows), len(access))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header(tw, len(rows), cols(truth != nil, "OBJECT", "TRUE MEAN TIME", "MEAN TIME BETWEEN ACCESSES", "95% INTERVAL", "ESTIMATOR", "ACCESSES"))
		for _, e := range rows {
			u := query.UnitOf(1 / *e.RatePerS)
			tru := "?"
			if tp, ok := truth[e.Object]; ok && tp.AccessRate > 0 {
				tru = u.Format(1 / tp.AccessRate)
			}
			fmt.Fprint(tw, cols(truth != nil, elide(e.Object, maxObjectWidth), tru, u.Format(1 / *e.RatePerS), u.Interval(ciOf(e)),
				e.Estimator, fmt.Sprint(e.Observations)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeUnrated(w, access, "access", "")
	}
	return nil
}

// header writes the header row h of a table of n rows, none when n is 0.
func header(w io.Writer, n int, h string) {
	if n > 0 {
		fmt.Fprint(w, h)
	}
}

// cols joins the cells of a row; without truth the second (TRUE ...)
// is left out.
func cols(truth bool, cells ...string) string {
	if !truth {
		cells = append(cells[:1:1], cells[2:]...)
	}
	return strings.Join(cells, "\t") + "\n"
}

// rated returns the estimates with a rate above 0, most frequent first
// (then by object).
func rated(es []records.Estimate) []records.Estimate {
	var out []records.Estimate
	for _, e := range es {
		if e.RatePerS != nil && *e.RatePerS > 0 && !math.IsInf(*e.RatePerS, 0) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if *out[i].RatePerS != *out[j].RatePerS {
			return *out[i].RatePerS > *out[j].RatePerS
		}
		return out[i].Object < out[j].Object
	})
	return out
}

// writeUnrated counts, in one line, the estimates of a kind without a row:
// rated 0 (zeroWhy says what that means; "" when a kind has none) and
// without a best rate.
func writeUnrated(w io.Writer, es []records.Estimate, kind, zeroWhy string) {
	var zero, none int
	for _, e := range es {
		switch {
		case e.RatePerS == nil:
			none++
		case *e.RatePerS == 0:
			zero++
		}
	}
	var parts []string
	if zero > 0 {
		parts = append(parts, fmt.Sprintf("%d rated 0 (%s)", zero, zeroWhy))
	}
	if none > 0 {
		parts = append(parts, fmt.Sprintf("%d without a rate (too few %s observations for a best estimate)", none, kind))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "not listed: %s; --out-format=json gives each\n", strings.Join(parts, ", "))
	}
}

// ciOf returns the 95% interval of e's rate: CI95, else the interval of
// its estimator (nil: none).
func ciOf(e records.Estimate) *[2]float64 {
	if e.CI95 != nil {
		return e.CI95
	}
	if ci, ok := e.Intervals[e.Estimator]; ok {
		return &ci
	}
	return nil
}

// elide shortens s to at most n runes by replacing its middle with "…".
func elide(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) * 2 / 3
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
