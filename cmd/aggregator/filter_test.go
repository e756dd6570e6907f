package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// filter runs the documented filter command on in and returns stdout,
// stderr and the error.
func filter(t *testing.T, in []byte, extra ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"--in=-", "--store=memory", "--out=-", "--emit=final", "--log-level=warn"}, extra...)
	err := run(context.Background(), args, bytes.NewReader(in), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// ingestFiles runs ingest (library) over paths, observations sorted by
// event time as cmd/ingest does by default, and returns the JSON lines.
func ingestFiles(t *testing.T, format string, zone *time.Location, paths ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	ws := stream.NewWriterSink(map[string]io.Writer{stream.TopicObservations: &out}, nil)
	ss := ingest.NewSortingSink(ws, stream.TopicObservations, 0, t.TempDir(), 0)
	defer ss.Close()
	cfg := ingest.Config{Format: format, Paths: paths, Parse: parse.Config{Zone: zone}, ProgressInterval: -1}
	if _, err := ingest.Run(context.Background(), cfg, ss, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := ss.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRawLogIsRefused: a raw log fed to the aggregator (instead of to
// ingest) fails with the format that reads it, not a decoding error; the
// formats are tried on the lines as ingest reads them (trailing tabs kept:
// a NASA TSV line is not "path<TAB>time").
func TestRawLogIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want, not string
	}{
		{"heritrix", "2006-02-23T10:33:28.285Z     1         56 dns:www.example.dk P http://www.example.dk/ text/dns #024 20060223103328263+18 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - -\n" +
			"2006-02-23T10:33:29.285Z   200       1024 http://www.example.dk/ - - text/html #001 20060223103328263+18 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - -\n",
			"--format=heritrix", "Go value"},
		{"nasa tsv", "pppa006.compuserve.com\t-\t807256800\tGET\t/images/launch-logo.gif\t200\t1713\t\t\n" +
			"vcc7.langara.bc.ca\t-\t807256804\tGET\t/shuttle/missions/missions.html\t200\t8677\t\t\n",
			"ingest --format=nasa-tsv", "changes-tsv"},
		{"changes with a trailing tab", "reference/curl/examples.xml\t1787323608\t\nreference/exec/functions/proc-open.xml\t1787331093\t\n",
			"no ingest format accepts", "changes-tsv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := filter(t, []byte(tc.raw))
			if !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q; stderr %s", err, tc.want, stderr)
			}
			if strings.Contains(err.Error(), tc.not) {
				t.Errorf("error names %q: %v", tc.not, err)
			}
		})
	}
}

// TestNothingUsableExitsNonZero: every line rejected, or observations
// without any rate, is an error after the summary.
func TestNothingUsableExitsNonZero(t *testing.T) {
	one := `{"object":"http://a.example/","time":"2026-01-01T00:00:00Z","kind":"visit","digest":"sha1:A"}` + "\n"
	in := one + strings.Repeat(`{"object":"http://b.example/","time":"nope","kind":"visit"}`+"\n", 3)
	_, stderr, err := filter(t, []byte(in))
	if !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), "no object got a rate") {
		t.Fatalf("one visit: err %v", err)
	}
	for _, want := range []string{"aggregator summary:", "lines read", "rejected", "decode: 3", "objects with a rate"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("summary lacks %q:\n%s", want, stderr)
		}
	}
	if _, _, err := filter(t, nil); !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty input: err %v", err)
	}
	_, _, err = filter(t, []byte(`{"object":"x"}`+"\n"+`{}`+"\n"+"\n"))
	if !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), "not observations") {
		t.Fatalf("all rejected: err %v", err)
	}
}

// TestHTTPAddrFlagInFilterMode: --http-addr starts the HTTP
// server in filter mode, as the environment variable does (flags win).
func TestHTTPAddrFlagInFilterMode(t *testing.T) {
	t.Setenv("CHANGERATE_HTTP_ADDR", "") // unset for this process: only the flag asks
	os.Unsetenv("CHANGERATE_HTTP_ADDR")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String() // a free port
	ln.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		done <- run(context.Background(), []string{"--in=-", "--store=memory", "--out=-", "--http-addr=" + addr, "--log-level=error"}, pr, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			pw.Close()
			t.Fatalf("no HTTP server on %s in filter mode: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pw.Close()
	<-done
}

// genLog is a generated observation log: objects visited hourly with
// changes at random, and accessed at random, every (object, time) unique.
func genLog(seed uint64, objects, hours int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 3))
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var lines [][]byte
	for i := range objects {
		name := fmt.Sprintf("http://s%d.example/p%d", i%5, i)
		version := 0
		for h := range hours {
			at := t0.Add(time.Duration(h)*time.Hour + time.Duration(r.IntN(3600000))*time.Millisecond)
			if r.Float64() < 0.2 {
				version++
			}
			o := records.Observation{Object: name, Time: at, Kind: records.KindVisit, Digest: fmt.Sprintf("sha1:%d", version), Status: 200}
			if i%3 == 0 {
				o.Kind = records.KindAccess
				o.Digest = ""
			}
			b, _ := json.Marshal(o)
			lines = append(lines, b)
		}
	}
	return lines
}

// TestOrderDoesNotMatter (property): the same observations shuffled,
// reversed, or split over files given in any order give byte-identical
// estimates to the time-sorted replay.
func TestOrderDoesNotMatter(t *testing.T) {
	lines := genLog(4, 30, 60)
	join := func(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }
	// Reference: split into files in time order, ingested in order.
	sorted := ingestFiles(t, "jsonl", nil, writeFiles(t, [][][]byte{lines})...)
	want, _, err := filter(t, sorted)
	if err != nil || strings.Count(want, "\n") != 30 {
		t.Fatalf("reference: %v, %d estimates", err, strings.Count(want, "\n"))
	}
	r := rand.New(rand.NewPCG(9, 9))
	for trial := range 8 {
		perm := make([][]byte, len(lines))
		copy(perm, lines)
		switch trial {
		case 0:
			for i, j := 0, len(perm)-1; i < j; i, j = i+1, j-1 {
				perm[i], perm[j] = perm[j], perm[i]
			}
		default:
			r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		}
		// Straight into the aggregator (no source positions).
		got, _, err := filter(t, join(perm), "--sort-memory=4096")
		if err != nil {
			t.Fatal(err)
		}
		wantNoSrc, _, _ := filter(t, join(lines))
		if got != wantNoSrc {
			t.Errorf("trial %d: the aggregator's estimates depend on input order", trial)
		}
		// Split over 1-5 files, given in random order, through ingest.
		k := 1 + r.IntN(5)
		parts := make([][][]byte, k)
		for _, l := range perm {
			i := r.IntN(k)
			parts[i] = append(parts[i], l)
		}
		paths := writeFiles(t, parts)
		r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
		got2, _, err := filter(t, ingestFiles(t, "jsonl", nil, paths...))
		if err != nil {
			t.Fatal(err)
		}
		if got2 != want {
			t.Errorf("trial %d: %d files in another order give other estimates", trial, k)
		}
	}
}

func writeFiles(t *testing.T, parts [][][]byte) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, p := range parts {
		path := filepath.Join(dir, fmt.Sprintf("part%d.jsonl", i))
		if err := os.WriteFile(path, append(bytes.Join(p, []byte("\n")), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// TestUsageSynopsis: -h starts with the modes and an example, and names no
// Go internals.
func TestUsageSynopsis(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, strings.NewReader(""), &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	h := stderr.String()
	if !strings.HasPrefix(h, "aggregator turns observations") || !strings.Contains(h, "examples:") ||
		!strings.Contains(h, "filter mode") || !strings.Contains(h, "service mode") {
		t.Errorf("-h does not start with the synopsis:\n%.700s", h)
	}
	for _, bad := range []string{"Config.", "NewRecordReader", "Go value of type"} {
		if strings.Contains(h, bad) {
			t.Errorf("-h mentions %q", bad)
		}
	}
}

// TestLateOutputInFilterMode: without sorting, an observation older than
// its object's latest by more than the allowed lateness is not applied; it
// goes with the reason to --late-out and the summary counts it there.
func TestLateOutputInFilterMode(t *testing.T) {
	var in bytes.Buffer
	obs := func(h int, digest string) {
		fmt.Fprintf(&in, `{"object":"http://a.example/","time":"2026-03-01T%02d:00:00Z","kind":"visit","digest":"sha1:%s"}`+"\n", h, digest)
	}
	obs(0, "A")
	obs(5, "B")
	obs(10, "C")
	obs(1, "A") // 9h behind its object's latest: late
	obs(12, "C")
	late := filepath.Join(t.TempDir(), "late.jsonl")
	_, stderr, err := filter(t, in.Bytes(), "--sort=false", "--late-out="+late)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(late)
	if err != nil {
		t.Fatal(err)
	}
	var d records.DeadLetter
	if err := json.Unmarshal(bytes.TrimSpace(b), &d); err != nil || d.Reason != "late" || !strings.Contains(d.Input, "01:00:00Z") {
		t.Fatalf("late output %q (%v)", b, err)
	}
	if summaryCount(t, stderr, "late") != 1 || !strings.Contains(stderr, "written to "+late) || summaryCount(t, stderr, "applied") != 4 {
		t.Fatalf("summary:\n%s", stderr)
	}
	// Sorted (the default), the same input loses nothing.
	_, stderr, err = filter(t, in.Bytes())
	if err != nil || summaryCount(t, stderr, "late") != 0 || summaryCount(t, stderr, "applied") != 5 {
		t.Fatalf("sorted: %v\n%s", err, stderr)
	}
}

// TestSummaryExplainsRejectsAndOrder: the summary says what became of each
// line: a visit dated a century ahead is a dead letter with reason future
// (and the later visits are applied, not late); with --sort=false an
// out-of-order visit applied at its object's latest time is counted as
// such and as no information; an input in reverse order whose visits are
// all late fails with a message naming the late observations and --sort.
func TestSummaryExplainsRejectsAndOrder(t *testing.T) {
	visit := func(at, digest string) string {
		return `{"object":"http://y.example/","time":"2026-10-02T` + at + `:00Z","kind":"visit","digest":"sha1:` + digest + `"}` + "\n"
	}
	future := visit("09:00", "A") + strings.Replace(visit("10:00", "A"), "2026-10-02", "2100-10-02", 1) +
		visit("11:00", "B") + visit("12:00", "C") + visit("13:00", "D")
	_, stderr, err := filter(t, []byte(future))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reason":"future"`, "future: 1 (dead letters)", "ahead of the clock"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("future visit: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !regexp.MustCompile(`late +0\b`).MatchString(stderr) {
		t.Errorf("future visit: later visits counted late:\n%s", stderr)
	}

	unordered := visit("10:00", "A") + visit("11:00", "B") + visit("12:00", "C") + visit("10:30", "D") + visit("13:00", "D")
	_, stderr, err = filter(t, []byte(unordered), "--sort=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`reordered +1 +arrived out of event-time order: 1 applied at their object's latest time`,
		`no information +1 +.*applied at a later time without a change flag`} {
		if !regexp.MustCompile(re).MatchString(stderr) {
			t.Errorf("out-of-order visit: summary does not match %q:\n%s", re, stderr)
		}
	}

	var reversed strings.Builder
	for h := 23; h >= 0; h-- {
		reversed.WriteString(visit(fmt.Sprintf("%02d:00", h), strconv.Itoa(h)))
	}
	_, _, err = filter(t, []byte(reversed.String()), "--sort=false", "--late-tolerance=30m")
	if !errors.Is(err, errNothingUsable) || !regexp.MustCompile(`; 2\d observations were late`).MatchString(err.Error()) || !strings.Contains(err.Error(), "sorting, CHANGERATE_SORT (--sort) true") {
		t.Errorf("reversed input: %v, want an error naming the late observations and --sort", err)
	}
}

// TestNonCanonicalObjectWarns: an observation whose object is not the
// canonical URL that ingest makes (and the query API looks up) is used as
// given, with a warning naming its canonical form; canonical objects give
// no warning.
func TestNonCanonicalObjectWarns(t *testing.T) {
	line := func(obj string) []byte {
		return []byte(`{"object":"` + obj + `","time":"2026-10-02T09:00:00Z","kind":"visit","digest":"sha1:A"}` + "\n")
	}
	_, stderr, _ := filter(t, line("HTTP://A.EXAMPLE:80/x#frag"))
	if !strings.Contains(stderr, "not a canonical URL") || !strings.Contains(stderr, "canonical=http://a.example/x") || !strings.Contains(stderr, "ingest --format=jsonl") {
		t.Errorf("non-canonical object: no warning naming the canonical form:\n%s", stderr)
	}
	if _, stderr, _ := filter(t, line("http://a.example/x")); strings.Contains(stderr, "canonical") {
		t.Errorf("canonical object: unexpected warning:\n%s", stderr)
	}
}

// TestSummaryCountsAlerts: the summary counts the alerts, says where they
// went and why confirmed shifts were held back: a file edited every 3 h
// for 60 days then every 4 days (an established rate's drop: one alert),
// and a file whose first burst of 10 edits is followed by monthly ones (a
// drop against a rate not established: held back).
func TestSummaryCountsAlerts(t *testing.T) {
	var in bytes.Buffer
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	change := func(obj string, at time.Time) {
		fmt.Fprintf(&in, `{"object":%q,"time":%q,"kind":"visit","changed":true}`+"\n", obj, at.Format(time.RFC3339))
	}
	for h := 0; h < 60*24; h += 3 {
		change("regular.xml", t0.Add(time.Duration(h)*time.Hour))
	}
	for d := 60; d < 150; d += 4 {
		change("regular.xml", t0.Add(time.Duration(d)*24*time.Hour))
	}
	for i := 0; i < 10; i++ {
		change("new.xml", t0.Add(time.Duration(i)*30*time.Minute))
	}
	for m := 1; m < 24; m++ {
		change("new.xml", t0.Add(time.Duration(m)*30*24*time.Hour))
	}
	alerts := filepath.Join(t.TempDir(), "alerts.jsonl")
	_, stderr, err := filter(t, in.Bytes(), "--emit=final", "--alerts-out="+alerts)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(alerts)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(bytes.Count(b, []byte("\n")))
	if got := summaryCount(t, stderr, "alerts"); got != n || n != 1 {
		t.Errorf("summary counts %d alerts, %d written (want 1):\n%s", got, n, stderr)
	}
	if !strings.Contains(stderr, "written to "+alerts) || !regexp.MustCompile(`[1-9]\d* drops against a rate not established`).MatchString(stderr) {
		t.Errorf("summary does not say where the alerts went or why drops were held back:\n%s", stderr)
	}
	_, stderr, err = filter(t, in.Bytes(), "--emit=final")
	if err != nil || !strings.Contains(stderr, "not written (set ") {
		t.Errorf("without --alerts-out the summary must say the alerts were not written: %v\n%s", err, stderr)
	}
}
