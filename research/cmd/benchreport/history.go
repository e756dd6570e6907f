package main

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// keptSections are the report's sections that a run does not measure
// (one-off measurements, such as a before/after comparison of two builds):
// each is carried over unchanged from the previous report, from its
// heading to the next level-2 heading, so that docs/bench.md is their
// only copy.
var keptSections = []string{"## Optimisation history (one-off measurement)"}

// previousSections returns the kept sections of the report at path, in
// keptSections order; none if the file does not exist.
func previousSections(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return extractSections(string(b), keptSections), nil
}

// extractSections returns the sections of the Markdown text md whose
// heading lines are in headings, each up to the next line starting with
// "## " (or the end) and without its trailing blank lines.
func extractSections(md string, headings []string) string {
	lines := strings.SplitAfter(md, "\n")
	var b strings.Builder
	for _, h := range headings {
		var sec strings.Builder
		in := false
		for _, l := range lines {
			if strings.HasPrefix(l, "## ") {
				in = strings.TrimRight(l, "\r\n") == h
			}
			if in {
				sec.WriteString(l)
			}
		}
		if sec.Len() > 0 {
			b.WriteString(strings.TrimRight(sec.String(), "\r\n") + "\n")
		}
	}
	return b.String()
}
