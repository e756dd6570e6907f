package main

import "testing"

func TestExtractSections(t *testing.T) {
	md := "# Report\n\n## Throughput\n\nx\n\n## Optimisation history (one-off measurement)\n\nbefore | after\n### detail\n\n## Hot-path benchmarks\n\ny\n"
	got := extractSections(md, keptSections)
	want := "## Optimisation history (one-off measurement)\n\nbefore | after\n### detail\n"
	if got != want {
		t.Errorf("extractSections = %q, want %q", got, want)
	}
	if got := extractSections("# Report\n\n## Throughput\n", keptSections); got != "" {
		t.Errorf("no kept section: got %q", got)
	}
}
