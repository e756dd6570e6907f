// Command eval reproduces the papers' results with the project's own
// estimators/, windows/, plan/ and sim/ packages and measures accuracy on
// real change histories. It writes a Markdown report with PNG plots.
//
//	go run ./cmd/eval [--quick] [--out docs/eval] [--data ../shared/data] [--seed 1] [--only cgm,nasa]
//
// --only runs just the named sections (comma-separated; -h lists them, from
// the sections table); an unknown name, an --only naming none, or a
// positional argument is a usage error (exit 2) and nothing is written.
//
// --quick runs every section with fewer replications and coarser grids (for
// CI, under about a minute); the full run takes a few minutes on 2 cores.
// The real-data sections are skipped with a note when --data has no data;
// under CI=true the command then exits non-zero instead.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/changerate/changerate/internal/realdata"
)

// Env is what every section gets.
type Env struct {
	R     *Report
	Quick bool
	Seed  uint64
	Data  string
	Procs int
	// php holds the real-data scores by schedule index (0 daily, 1 weekly,
	// 2 irregular), then by regime (regimes), then by estimator key.
	php map[int][]map[string]*realScore
	// phpPages is the php/doc-en history once read.
	phpPages map[string][]float64
	// pooledSim, pooledPHP hold the pooled estimator's evaluation.
	pooledSim, pooledPHP *pooledScore
	// hier holds the site-prior-over-time candidates (pooled_hier.go).
	hier []hierResult
	// boundTest is the oracle bound on the pooledtime section's php test
	// split (pooled_bound.go), computed by the pooled section.
	boundTest *boundResult
	// exactOnly skips the simulations of sections that also have exact
	// results (tests).
	exactOnly bool
	// dataMissing lists the real-data sections skipped for want of data.
	dataMissing []string
	// Changes is -changes: the history of the closedloop and ttl sections
	// ("": php/doc-en).
	Changes string
	// LoopStride is -loop-stride: the closed loop keeps every LoopStride-th
	// page (0: 2, or 8 with -quick) — a larger stride for iterating.
	LoopStride int
	// LoopOrders is -loop-orders: with it > 0 the closed loop runs only
	// the default, the default before, uniform and the true-rate
	// allocation, by name and in that many random page orders (default
	// and uniform), and the access-weighted rows (closedloop_focus.go).
	LoopOrders int
}

// reps scales a replication count down in quick mode.
func (e *Env) reps(full, quick int) int {
	if e.Quick {
		return quick
	}
	return full
}

type section struct {
	name string
	run  func(*Env)
}

// sections is every section in report order; -only names its entries, and
// -h lists their names from here.
var sections = []section{
	{"cgm", cgmSection},
	{"matloff", matloffSection},
	{"malcolm", malcolmSection},
	{"nhpp", nhppSection},
	{"ntoulas", ntoulasSection},
	{"realphp", phpSection},
	{"nasa", nasaSection},
	{"wayback", waybackSection},
	{"pooled", pooledSection},
	{"pooledtime", pooledTimeSection},
	{"best", bestSection},
	{"nextyear", nextYearSection},
	{"heldout", heldOutSection},
	{"closedloop", closedLoopSection},
	{"ttl", ttlSection},
}

// sectionNames lists the names of sections in report order.
func sectionNames() []string {
	names := make([]string, len(sections))
	for i, s := range sections {
		names[i] = s.name
	}
	return names
}

// usageError marks an error in the command line: the program exits with
// status 2 for it (as aggregator, ingest and flag parsing do), and 1 for a
// run that failed.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

var (
	// errUnknownSection: -only names a section that does not exist.
	errUnknownSection = errors.New("eval: -only: unknown section")
	// errNoSection: -only was given but names no section.
	errNoSection = errors.New("eval: -only: no section named")
	// errArgs: positional arguments (eval takes none; "eval cgm" would run
	// every section and replace the report).
	errArgs = errors.New("eval: takes no arguments")
	// errNoOut: -out is empty.
	errNoOut = errors.New("eval: -out: empty")
)

// selectSections returns the sections -only selects, in report order: all of
// them when the flag was not given, else the comma-separated names (blanks
// around a name ignored). An unknown name, or a list naming none, is an
// error.
func selectSections(only string, given bool) ([]section, error) {
	if !given {
		return sections, nil
	}
	valid := map[string]bool{}
	for _, s := range sections {
		valid[s.name] = true
	}
	want := map[string]bool{}
	var unknown []string
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case !valid[n]:
			unknown = append(unknown, strconv.Quote(n))
		default:
			want[n] = true
		}
	}
	list := strings.Join(sectionNames(), ", ")
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w %s; the sections are %s", errUnknownSection, strings.Join(unknown, ", "), list)
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("%w in %q; the sections are %s", errNoSection, only, list)
	}
	var sel []section
	for _, s := range sections {
		if want[s.name] {
			sel = append(sel, s)
		}
	}
	return sel, nil
}

// options is the parsed command line.
type options struct {
	out, data string
	// changes is a changes TSV (path<TAB>unix time) for the closedloop and
	// ttl sections instead of php/doc-en's.
	changes  string
	loopStr  int
	loopOrd  int
	quick    bool
	seed     uint64
	sections []section
}

// parseArgs parses the command line; its errors other than flag.ErrHelp are
// usageErrors. -h (and a flag error) prints the usage with the section names
// on stderr.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "out", "docs/eval", "output directory for REPORT.md and the plots")
	fs.StringVar(&o.data, "data", "", "directory with php-doc-en-history/ and nasa-http-19950801/ (default ../shared/data relative to the repository)")
	fs.BoolVar(&o.quick, "quick", false, "fewer replications and coarser grids (CI)")
	fs.StringVar(&o.changes, "changes", "", "closedloop and ttl: a changes TSV (path<TAB>unix time, gzip or plain) to run on instead of php/doc-en")
	fs.IntVar(&o.loopOrd, "loop-orders", 0, "closedloop: only the default against uniform and the true rates, by name and in N random page orders, and the access-weighted rows (0: the whole section)")
	fs.IntVar(&o.loopStr, "loop-stride", 0, "closedloop: keep every N-th page (default 2, 8 with -quick); 8 runs the section about 4 times faster for iterating")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of every simulation")
	only := fs.String("only", "", "comma-separated section names to run (default all; the sections are listed above)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "eval reproduces the papers' results and measures the estimators on real data; it writes REPORT.md and PNG plots to -out.\n\n"+
			"usage:\n  eval [-quick] [-out DIR] [-data DIR] [-seed N] [-only SECTION,...]\n\n"+
			"sections (in report order): %s\n\noptions:\n", strings.Join(sectionNames(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{fmt.Errorf("eval: %w", err)}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("%w, got %q: name sections with -only=%s", errArgs, fs.Args(), strings.Join(fs.Args(), ","))}
	}
	if o.loopStr < 0 {
		return o, usageError{fmt.Errorf("eval: -loop-stride %d must be >= 1 (0: the default)", o.loopStr)}
	}
	if o.out == "" {
		return o, usageError{fmt.Errorf("%w: give the output directory (default docs/eval)", errNoOut)}
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "only" })
	sel, err := selectSections(*only, given)
	if err != nil {
		return o, usageError{err}
	}
	o.sections = sel
	if o.data == "" {
		o.data = defaultDataDir()
	}
	return o, nil
}

func main() {
	os.Exit(runMain(os.Args[1:], os.Stderr))
}

// runMain is main without the process: the exit status of the command line
// args, messages on stderr.
func runMain(args []string, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if err == nil {
		err = run(o, stderr)
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, err)
		return 2
	default:
		fmt.Fprintln(stderr, err)
		return 1
	}
}

// run runs the selected sections and writes the report.
func run(o options, stderr io.Writer) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	env := &Env{R: &Report{dir: o.out}, Quick: o.quick, Seed: o.seed, Data: o.data, Procs: runtime.GOMAXPROCS(0), Changes: o.changes, LoopStride: o.loopStr, LoopOrders: o.loopOrd}
	start := time.Now()
	body := &Report{dir: o.out}
	env.R = body
	var timings []string
	for _, s := range o.sections {
		t0 := time.Now()
		s.run(env)
		d := time.Since(t0)
		timings = append(timings, fmt.Sprintf("%s %.1fs", s.name, d.Seconds()))
		fmt.Fprintf(stderr, "eval: %s done in %.1fs\n", s.name, d.Seconds())
	}
	// Assemble: header, summary of verdicts, body.
	var head Report
	head.dir = o.out
	mode := "full"
	if o.quick {
		mode = "quick"
	}
	head.H(1, "Evaluation report: are the numbers right?")
	head.P("Generated by `go run ./cmd/eval` (%s mode, seed %d, %d CPUs) in %.0f s. Sections: %s. "+
		"Every number below is computed by the project's own packages (`estimators/`, `windows/`, `plan/`, `sim/`); "+
		"analytic curves of the papers are computed exactly (binomial sums over the project's estimator applied to every possible count), "+
		"everything else by seeded simulation. Regenerate with `make eval` (or `make eval-quick`).",
		mode, o.seed, env.Procs, time.Since(start).Seconds(), strings.Join(timings, ", "))
	head.H(2, "Summary: does each reproduced figure match the paper?")
	head.P("Each verdict is computed from the checks listed beside it: a check passes when our number lies in the accepted interval, whose origin "+
		"(the paper's rounding, the simulation's standard error, the paper's own threshold) is written next to it. A figure matches when every check passes; "+
		"a difference names its failed checks and the experiment that isolates its cause. The paper's own statistic is the one checked (means where the paper "+
		"reports means); other statistics appear in the sections. %s", verdictCounts(body.verdicts))
	head.Table([]string{"figure / table", "paper", "ours", "checks (accepted interval, tolerance)", "verdict"}, summaryRows(body.verdicts))
	text := head.b.String() + body.b.String()
	if len(env.dataMissing) > 0 && os.Getenv("CI") == "true" {
		return fmt.Errorf("eval: real data missing under CI=true: %s", strings.Join(env.dataMissing, "; "))
	}
	path := filepath.Join(o.out, "REPORT.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	fmt.Fprintf(stderr, "eval: wrote %s in %.1fs\n", path, time.Since(start).Seconds())
	return nil
}

// defaultDataDir is ../shared/data beside the repository root (or
// $CHANGERATE_DATA).
func defaultDataDir() string { return realdata.DefaultDir() }
