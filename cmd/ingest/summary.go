package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/parse"
)

const usageHead = `ingest reads logs and writes observations: JSON lines on stdout, or Kafka topics.

usage:
  ingest --format=FORMAT|auto [--out=-] [options] FILE|DIR|GLOB|- ...        files once, observations sorted by event time
  ingest --format=FORMAT --out=kafka --follow [--checkpoint=FILE] FILE ...   follow files like tail -F into Kafka
  ingest --format=heritrix-json --in-topic=TOPIC --out=kafka                 a Heritrix Kafka crawl-log feed into Kafka

examples:
  ingest --format=auto --out=- access.log.1.gz access.log | aggregator --in=- --store=memory --out=- --emit=final
  ingest --format=squid --out=kafka --kafka-brokers=kafka:9092 --follow --checkpoint=/var/lib/ingest/cp /var/log/squid/access.log

Several files are merged by event time (--order=time, the default when reading files once), so their order on
the command line does not matter; at the end a summary goes to stderr, and the exit status is 1 when no line
gave an observation. Every option is also an environment variable CHANGERATE_<NAME>; flags win.

formats:
`

// checkAuto checks, before reading, what --format=auto can find wrong
// with the inputs (Run detects each input's format on its own): an input
// that cannot be read, one that looks like a format that needs an option
// not given (--zone), and, unless following, inputs of which none has a
// line (nor is stdin). An input that no format accepts is not an error
// here: Run warns about it and reads the others.
func checkAuto(o config, paths []string) error {
	pc := parse.Config{Profile: o.Profile, BaseURL: o.BaseURL, SquidLogformat: o.SquidLogformat}
	if o.Zone != "" {
		z, err := time.LoadLocation(o.Zone)
		if err != nil {
			return cfgErr("%s_ZONE (--zone): %v", envPrefix, err)
		}
		pc.Zone = z
	}
	inputs, err := ingest.Inputs(paths)
	if err != nil {
		return cfgErr("%v", err)
	}
	sampled := false
	for _, in := range inputs {
		if in == "-" {
			sampled = true // detected from its first lines when read
			continue
		}
		cands, _, err := ingest.DetectFormat([]string{in}, pc)
		if errors.Is(err, ingest.ErrNothingToSample) {
			continue
		}
		if err != nil {
			msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "ingest: "), in+": ")
			return cfgErr("%s_FORMAT (--format)=auto: cannot read %s to detect the format: %s; or give the format (see ingest -h)", envPrefix, in, msg)
		}
		sampled = true
		if len(cands) > 0 && cands[0].NeedsZone {
			return cfgErr("%s_FORMAT (--format)=auto: %s looks like %s, whose times carry no zone: give %s_ZONE (--zone), e.g. --zone=UTC", envPrefix, in, cands[0].Format, envPrefix)
		}
	}
	if !sampled && !o.Follow {
		_, _, err := ingest.DetectFormat(paths, pc)
		return cfgErr("%s_FORMAT (--format)=auto: %s; or give the format (see ingest -h)", envPrefix, strings.TrimPrefix(err.Error(), "ingest: "))
	}
	return nil
}

// writeSummary prints the end-of-run summary on stderr: one screen.
// dlHidden counts the dead letters not printed on stderr (cappedLines).
func writeSummary(w io.Writer, o config, cfg ingest.Config, sum ingest.Summary, sorter *ingest.SortingSink, dlHidden int64) {
	tot := sum.Totals()
	failed := 0
	for _, in := range sum.Inputs {
		if in.Err != "" {
			failed++
		}
	}
	fmt.Fprintf(w, "ingest summary (format %s):\n", cfg.Format)
	fmt.Fprintf(w, "  %-14s %10d", "inputs", len(sum.Inputs))
	if failed > 0 {
		fmt.Fprintf(w, "   %d FAILED (see the log above)", failed)
	}
	fmt.Fprintln(w)
	if cfg.Format == ingest.FormatAuto {
		writeFormats(w, o, sum)
	}
	unit := inputUnit(sumFormat(cfg, sum))
	fmt.Fprintf(w, "  %-14s %10d\n", unit+" read", tot.Lines)
	order := "in input order"
	if sorter != nil {
		order = "sorted by event time"
		if r := sorter.Runs(); r > 0 {
			order += fmt.Sprintf(" (%d runs spilled to disk)", r)
		}
	}
	fmt.Fprintf(w, "  %-14s %10d   %s\n", "observations", tot.Observations, "produced, "+order)
	written := "acknowledged by " + outName(o, cfg)
	if n := tot.Observations - sum.Written - sum.OutputRejected; n > 0 {
		written += fmt.Sprintf("; %d NOT WRITTEN", n)
	}
	fmt.Fprintf(w, "  %-14s %10d   %s\n", "written", sum.Written, written)
	line := func(label string, n int64, note string) {
		if note == "" {
			fmt.Fprintf(w, "  %-14s %10d\n", label, n)
			return
		}
		fmt.Fprintf(w, "  %-14s %10d   %s\n", label, n, note)
	}
	line("skipped", sumMap(tot.Skipped), reasons(tot.Skipped, unit+" without an observation"))
	if sum.OutputRejected > 0 {
		tot.Rejects[ingest.ReasonOutputRejected] += sum.OutputRejected
	}
	dlTo := "dead letters to " + deadLetterName(o, cfg)
	if dlHidden > 0 {
		dlTo += fmt.Sprintf(": the first %d printed, %d not (--dead-letter=FILE keeps them all)", deadLettersShown, dlHidden)
	}
	line("rejected", sumMap(tot.Rejects), reasons(tot.Rejects, dlTo))
	switch {
	case sum.Interrupted && cfg.Follow && cfg.CheckpointPath != "":
		// Following, a signal is the normal way to stop.
		fmt.Fprintf(w, "  stopped (SIGTERM or SIGINT) while following; positions saved in the checkpoint %s\n", cfg.CheckpointPath)
	case sum.Interrupted && cfg.Follow:
		fmt.Fprintf(w, "  stopped (SIGTERM or SIGINT) while following; no checkpoint (%s_CHECKPOINT (--checkpoint)): a restart reads every file from the start\n", envPrefix)
	case sum.Interrupted:
		fmt.Fprintln(w, "  interrupted before every input was read")
		if sorter != nil {
			fmt.Fprintf(w, "  the %d observations held for sorting by time were not written: run again\n", sorter.Held())
		}
	}
}

// maxNamesShown is how many inputs of one format the summary names.
const maxNamesShown = 5

// writeFormats prints, for --format=auto, which format each input was read
// as: one line per format, naming its inputs (at most maxNamesShown of
// them; --report lists each).
func writeFormats(w io.Writer, o config, sum ingest.Summary) {
	byFormat := map[string][]string{}
	var formats []string
	for _, in := range sum.Inputs {
		f := in.Format
		switch {
		case in.Err != "" && f == "":
			f = "(failed)"
		case f == "":
			f = "(no line)"
		case f == ingest.FormatUnknown:
			f = "(no format)"
		}
		if _, ok := byFormat[f]; !ok {
			formats = append(formats, f)
		}
		byFormat[f] = append(byFormat[f], in.Name)
	}
	sort.Strings(formats)
	for _, f := range formats {
		names := byFormat[f]
		shown := names[:min(len(names), maxNamesShown)]
		more := ""
		if n := len(names) - len(shown); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
			if !o.Report {
				more += " (--report lists each)"
			}
		}
		if f == "(no format)" {
			f += " NO FORMAT ACCEPTS THEM (see the warnings above)"
		}
		fmt.Fprintf(w, "  %-14s %10d   %s: %s%s\n", "read as", len(names), f, strings.Join(shown, ", "), more)
	}
}

// sumFormat is the one format of the run: Config.Format, or with auto the
// format of every input when they share one ("auto" when they do not).
func sumFormat(cfg ingest.Config, sum ingest.Summary) string {
	if cfg.Format != ingest.FormatAuto {
		return cfg.Format
	}
	f := ""
	for _, in := range sum.Inputs {
		if in.Format == "" {
			continue
		}
		if f != "" && in.Format != f {
			return cfg.Format
		}
		f = in.Format
	}
	if f == "" {
		return cfg.Format
	}
	return f
}

// inputUnit is what the counts count: WARC files are read record by
// record, every other format line by line.
func inputUnit(format string) string {
	if format == "warc" {
		return "records"
	}
	if format == "sitemap" {
		return "entries" // <url> and <sitemap> elements
	}
	return "lines"
}

func reasons(m map[string]int64, what string) string {
	if len(m) == 0 {
		return ""
	}
	return fmtMap(m) + " (" + what + ")"
}

func outName(o config, cfg ingest.Config) string {
	if o.Out == "kafka" {
		return "topic " + cfg.ObservationsTopic
	}
	return "stdout"
}

func deadLetterName(o config, cfg ingest.Config) string {
	switch {
	case o.Out == "kafka":
		return "topic " + cfg.DeadLetterTopic
	case o.DeadLetter == "-":
		return "stderr"
	}
	return o.DeadLetter
}

// nothingUsable explains a run that produced no observation although it
// read lines, with the formats whose parser accepts the first lines; ""
// when the run produced something (or was interrupted).
func nothingUsable(sum ingest.Summary, o config, cfg ingest.Config) string {
	tot := sum.Totals()
	if sum.Interrupted || tot.Observations > 0 || o.InTopic != "" {
		return ""
	}
	if tot.Lines == 0 {
		return "no line was read"
	}
	msg := fmt.Sprintf("none of the %d %s read gave an observation (%s)", tot.Lines, inputUnit(sumFormat(cfg, sum)), fmtMap(tot.Rejects))
	if cfg.Format == ingest.FormatAuto {
		// Each input's format was detected on its own, and those that no
		// format accepts were named in the warnings.
		return msg + "; see the format each input was read as in the summary, and the warnings above"
	}
	pc := cfg.Parse
	cands, in, err := ingest.DetectFormat(cfg.Paths, pc)
	if err != nil || len(cands) == 0 {
		return msg + "; and no format's parser accepts the first lines: see ingest -h for the formats"
	}
	var fs []string
	for _, c := range cands {
		if c.Format == cfg.Format {
			if rej := tot.Rejects[parse.ReasonNoZone]; rej > 0 {
				return msg + fmt.Sprintf("; the times of %s carry no zone: give %s_ZONE (--zone), e.g. --zone=UTC", in, envPrefix)
			}
			continue
		}
		fs = append(fs, c.Format)
	}
	if len(fs) == 0 {
		return msg
	}
	return msg + fmt.Sprintf(";\nthe first lines of %s are accepted by: %s", in, parse.Hint(cands)) +
		fmt.Sprintf("\n(or use --format=auto)")
}
