package main

import "testing"

// TestSpliceSection: the live section is replaced up to the next "## "
// heading, its "### " subsections included, and the rest is kept.
func TestSpliceSection(t *testing.T) {
	report := "# R\n\n## A\n\na\n\n## Live-crawl shape: x\n\nold\n\n### Latency\n\nold lat\n\n## Bytes\n\nb\n"
	got, ok := spliceSection([]byte(report), liveHeading, []byte("## Live-crawl shape: y\n\nnew\n\n"))
	want := "# R\n\n## A\n\na\n\n## Live-crawl shape: y\n\nnew\n\n## Bytes\n\nb\n"
	if !ok || string(got) != want {
		t.Fatalf("spliced:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := spliceSection([]byte("# R\n\n## A\n"), liveHeading, nil); ok {
		t.Error("spliced into a report without the section")
	}
	got, ok = spliceSection([]byte("# R\n\n## Live-crawl shape\n\nold\n"), liveHeading, []byte("## Live-crawl shape\n\nnew\n"))
	if !ok || string(got) != "# R\n\n## Live-crawl shape\n\nnew\n\n" {
		t.Fatalf("last section spliced: %q", got)
	}
}
