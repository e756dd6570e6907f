package main

import (
	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/parse"
)

// capturesInOrder reports whether the inputs are capture indexes of web
// archives (cdx, cdxj): given as the format, or, with --format=auto, the
// format detected for every file whose format can be detected (at least
// one; a file that no format accepts produces no observation). An index is
// sorted by URL key, so each object's captures come in time order: the
// default order of such inputs is the input order, streamed in bounded
// memory, not a sort of every observation by event time. The aggregator
// needs each object's observations in time order, not the stream's (its
// reorder buffer applies an observation older than the watermark at once
// when it is not older than its object's latest).
func capturesInOrder(format string, paths []string) bool {
	if format != ingest.FormatAuto {
		return parse.PerObjectOrdered(format)
	}
	inputs, err := ingest.Inputs(paths)
	if err != nil {
		return false
	}
	found := false
	for _, in := range inputs {
		if in == "-" {
			return false // cannot be sampled before it is read
		}
		cands, _, err := ingest.DetectFormat([]string{in}, parse.Config{})
		if err != nil || len(cands) == 0 {
			continue
		}
		if !parse.PerObjectOrdered(cands[0].Format) {
			return false
		}
		found = true
	}
	return found
}
