package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// The next-year section scores what the programs publish (issue 31, item
// 5): each design's input goes through ingest's parser and the aggregator
// in filter mode,
//
//	ingest --format=F --out=- - | aggregator --in=- --store=memory --out=- --emit=final
//
// built from this repository, and the published rate_per_s, estimator and
// ci95 of each object's final record are scored.

// nyBins are the programs' binaries.
type nyBins struct{ ingest, aggregator string }

// buildNYBins builds ingest and the aggregator of the product module (the
// research module's replacement of it, so the same source) into dir.
func buildNYBins(dir string) (nyBins, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/changerate/changerate").Output()
	if err != nil {
		return nyBins{}, fmt.Errorf("eval: locate the product module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/ingest", "./cmd/aggregator")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nyBins{}, fmt.Errorf("eval: build ingest and aggregator: %w\n%s", err, msg)
	}
	return nyBins{filepath.Join(dir, "ingest"), filepath.Join(dir, "aggregator")}, nil
}

// run pipes the lines write produces through ingest (format) and the
// aggregator and returns the final change-estimate records by object.
func (b nyBins) run(format string, write func(w io.Writer) error) (map[string]records.Estimate, error) {
	ing := exec.Command(b.ingest, "--format="+format, "--out=-", "-")
	agg := exec.Command(b.aggregator, "--in=-", "--store=memory", "--out=-", "--emit=final")
	var ingErr, aggErr bytes.Buffer
	ing.Stderr, agg.Stderr = &ingErr, &aggErr
	in, err := ing.StdinPipe()
	if err != nil {
		return nil, err
	}
	pipe, err := ing.StdoutPipe()
	if err != nil {
		return nil, err
	}
	agg.Stdin = pipe
	outR, err := agg.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := ing.Start(); err != nil {
		return nil, err
	}
	if err := agg.Start(); err != nil {
		_ = ing.Process.Kill()
		_ = ing.Wait()
		return nil, err
	}
	werr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(in, 1<<20)
		err := write(bw)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if cerr := in.Close(); err == nil {
			err = cerr
		}
		werr <- err
	}()
	recs := map[string]records.Estimate{}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var perr error
	for sc.Scan() {
		var e records.Estimate
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			if perr == nil {
				perr = fmt.Errorf("eval: aggregator output: %w", err)
			}
			continue
		}
		if e.Kind == records.EstimateChange {
			recs[e.Object] = e
		}
	}
	if err := sc.Err(); err != nil && perr == nil {
		perr = err
	}
	ingWait, aggWait := ing.Wait(), agg.Wait()
	for _, err := range []error{<-werr, ingWait, aggWait, perr} {
		if err != nil {
			return nil, fmt.Errorf("eval: ingest | aggregator: %w\ningest: %s\naggregator: %s", err, tail(ingErr.String()), tail(aggErr.String()))
		}
	}
	return recs, nil
}

// tail is the last lines of a program's stderr.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}

// nyURL is a php/doc-en page's object in the crawler designs: a URL of one
// site, so that the aggregator keeps the site's prior (siteprior.go) over
// all the pages, as a crawler of the site would.
func nyURL(page string) string { return "https://doc.php.net/doc-en/" + page }

// writeChangesTSV writes the git log as of t1: every change of every page
// up to t1 (path<TAB>unix time, changes-tsv).
func writeChangesTSV(w io.Writer, names []string, pages map[string][]float64, t1 float64) error {
	var buf []byte
	for _, name := range names {
		for _, x := range pages[name] {
			if x > t1 {
				break
			}
			buf = append(buf[:0], name...)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, int64(x), 10)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeVisits writes a crawler's visits of the pages (those that exist at
// t0) every interval from t0 to t1 as observation JSON lines (jsonl):
// changed when a change fell since the previous visit.
func writeVisits(w io.Writer, names []string, pages map[string][]float64, t0, t1, interval float64) error {
	var buf []byte
	for _, name := range names {
		ev := pages[name]
		if len(ev) == 0 || ev[0] >= t0 {
			continue
		}
		obj, err := json.Marshal(nyURL(name))
		if err != nil {
			return err
		}
		j := 0
		for j < len(ev) && ev[j] <= t0 {
			j++
		}
		for t := t0; t <= t1+1; t += interval {
			ch := false
			for j < len(ev) && ev[j] <= t {
				ch = t > t0
				j++
			}
			buf = append(buf[:0], `{"object":`...)
			buf = append(buf, obj...)
			buf = append(buf, `,"site":"doc.php.net","kind":"visit","time":"`...)
			buf = time.Unix(int64(t), 0).UTC().AppendFormat(buf, time.RFC3339)
			buf = append(buf, `","changed":`...)
			buf = strconv.AppendBool(buf, ch)
			buf = append(buf, "}\n"...)
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// nyTempDir is a directory for the binaries, removed by the caller.
func nyTempDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "eval-nextyear-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
