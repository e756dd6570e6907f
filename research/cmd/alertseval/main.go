// Command alertseval writes the alerts evaluation report,
// docs/alerts-eval.md: seeded simulations of proxy logs with daily and
// weekly cycles and bursts (internal/sim's AlertWorld, the worlds the
// aggregate package's acceptance tests check), scored against an oracle
// that knows each burst; each object's own rhythm; php/doc-en's change
// history and the NASA-HTTP day from ../shared/data. Every run goes
// through aggregate.Processor's public API (in-memory state, one
// partition, in time order, as the aggregator's filter mode).
//
//	go -C research run ./cmd/alertseval -out ../docs/alerts-eval.md [-data ../shared/data] [-procs 2]
//
// (`make alerts-eval`; about ten minutes on 2 cores.)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/changerate/changerate/internal/realdata"
)

func main() {
	fs := flag.NewFlagSet("alertseval", flag.ContinueOnError)
	out := fs.String("out", "", "write the report (Markdown) to this path (required)")
	data := fs.String("data", realdata.DefaultDir(), "the real-data directory (php-doc-en-history, nasa-http-19950801)")
	procs := fs.Int("procs", runtime.GOMAXPROCS(0), "runs at a time")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *out == "" || fs.NArg() > 0 || *procs < 1 {
		fmt.Fprintln(os.Stderr, "usage: alertseval -out PATH [-data DIR] [-procs N]")
		os.Exit(2)
	}
	var b strings.Builder
	r := &report{p: func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }, data: *data, procs: *procs}
	if err := r.write(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
