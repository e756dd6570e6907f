package main

import (
	"fmt"
	"math"
	"strings"
)

// A check compares one number of ours with the paper's: it passes when ours
// lies in the accepted interval [lo, hi] (NaN never passes). tol says where
// the interval comes from (the paper's rounding, simulation error, the
// paper's own threshold); it is printed next to the verdict.
type check struct {
	name   string
	ours   float64
	lo, hi float64
	tol    string
}

func (c check) ok() bool { return c.ours >= c.lo && c.ours <= c.hi }

// String is "name: ours ∈ [lo, hi] (tol) ✓".
func (c check) String() string {
	mark := "✓"
	if !c.ok() {
		mark = "✗"
	}
	return fmt.Sprintf("%s: %s ∈ %s (%s) %s", c.name, g4(c.ours), interval(c.lo, c.hi), c.tol, mark)
}

func g4(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	return fmt.Sprintf("%.4g", x)
}

func interval(lo, hi float64) string {
	switch {
	case lo == hi:
		return "{" + g4(lo) + "}"
	case math.IsInf(lo, -1):
		return "(−∞, " + g4(hi) + "]"
	case math.IsInf(hi, 1):
		return "[" + g4(lo) + ", ∞)"
	}
	return "[" + g4(lo) + ", " + g4(hi) + "]"
}

// near: |ours − paper| ≤ tol.
func near(name string, ours, paper, tol float64, why string) check {
	return check{name, ours, paper - tol, paper + tol, fmt.Sprintf("paper %s ± %s: %s", g4(paper), g4(tol), why)}
}

// within: ours ∈ [lo, hi].
func within(name string, ours, lo, hi float64, why string) check {
	return check{name, ours, lo, hi, why}
}

// coverageBand is the accepted interval of a 95 % coverage measured on n
// intervals: the target 93–97 % widened by twice the binomial standard
// error of a 95 % coverage measured on n intervals, √(0.95·0.05/n), and
// clipped to [0, 1]. With few intervals the coverage takes only the values
// k/n, and the fixed 93–97 % contains none of them for n < 15 (13
// intervals: 12/13 = 92.3 %, 13/13 = 100 %); the band keeps a calibrated
// estimator's coverage inside it about 95 % of the time.
func coverageBand(n int) (lo, hi float64) {
	if n <= 0 {
		return 0.93, 0.97
	}
	se := math.Sqrt(0.95 * 0.05 / float64(n))
	return math.Max(0, 0.93-2*se), math.Min(1, 0.97+2*se)
}

// coverageCheck: the coverage ours, measured on n intervals, inside
// coverageBand(n); the band's origin is written next to it (what: the
// target's wording). No interval (n = 0) never passes.
func coverageCheck(name string, ours float64, n int, what string) check {
	lo, hi := coverageBand(n)
	if n <= 0 {
		ours = math.NaN()
	}
	return check{name, ours, lo, hi, fmt.Sprintf("%s, widened by 2·√(0.95·0.05/n), the binomial sampling error of a coverage on n = %d intervals", what, n)}
}

// atMost: ours ≤ bound.
func atMost(name string, ours, bound float64, why string) check {
	return check{name, ours, math.Inf(-1), bound, why}
}

// atLeast: ours ≥ bound.
func atLeast(name string, ours, bound float64, why string) check {
	return check{name, ours, bound, math.Inf(1), why}
}

// holds: a computed statement (an ordering) that must be true; ours is 1
// when it is, 0 when not.
func holds(name string, ok bool, why string) check {
	v := 0.0
	if ok {
		v = 1
	}
	return check{name, v, 1, 1, why}
}

// outcome is the verdict computed from the checks: "matches" when every
// check passes, otherwise "differs" and the failed checks' names.
func outcome(cs []check) (label string, failed []string) {
	for _, c := range cs {
		if !c.ok() {
			failed = append(failed, c.name)
		}
	}
	if len(cs) == 0 {
		return "no checks", nil
	}
	if len(failed) == 0 {
		return "matches", nil
	}
	return fmt.Sprintf("differs (%d of %d checks)", len(failed), len(cs)), failed
}

// verdict is one figure's comparison with the paper.
type verdict struct {
	figure, paper, ours string
	checks              []check
	match               string
	failed              []string
	cause               string // for a "differs": the experiment isolating the cause
}

// Verdict records a figure's comparison for the summary table and prints
// it: the label is computed from the checks, each with its tolerance.
// cause, when not empty, is the experiment (with its numbers) that explains
// a difference; it is required reading for every "differs".
func (r *Report) Verdict(figure, paper, ours string, checks []check, cause string) verdict {
	v := verdict{figure: figure, paper: paper, ours: ours, checks: checks, cause: cause}
	v.match, v.failed = outcome(checks)
	r.verdicts = append(r.verdicts, v)
	var b strings.Builder
	fmt.Fprintf(&b, "**Verdict (%s): %s.** Paper: %s; ours: %s.\n\n", figure, v.match, paper, ours)
	for _, c := range checks {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	if cause != "" && len(v.failed) > 0 {
		fmt.Fprintf(&b, "\n*Cause of the difference:* %s\n", cause)
	}
	r.b.WriteString(b.String())
	r.b.WriteString("\n")
	return v
}

// summaryRows is the summary table: every verdict, its checks with their
// tolerances, and the cause of each difference.
func summaryRows(vs []verdict) [][]string {
	var rows [][]string
	for _, v := range vs {
		var cs []string
		for _, c := range v.checks {
			cs = append(cs, c.String())
		}
		m := "**" + v.match + "**"
		if len(v.failed) > 0 {
			if v.cause != "" {
				m += "; cause: " + v.cause
			} else {
				m += "; cause not isolated"
			}
		}
		rows = append(rows, []string{v.figure, v.paper, v.ours, strings.Join(cs, "<br>"), m})
	}
	return rows
}

// verdictCounts is "N figures: M match, K differ".
func verdictCounts(vs []verdict) string {
	m := 0
	for _, v := range vs {
		if len(v.failed) == 0 {
			m++
		}
	}
	return fmt.Sprintf("%d figures: %d match, %d differ.", len(vs), m, len(vs)-m)
}
