package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/changerate/changerate/internal/realdata"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// TestAutoDetectsEachInput: with FormatAuto each input is read as its own
// format (a NASA TSV file and two Heritrix crawl logs in one run), the
// summary says which, each format's metrics count its inputs' lines, and
// an input that no format accepts is rejected (reason no-format) without
// stopping the others.
func TestAutoDetectsEachInput(t *testing.T) {
	const (
		nasa = "nasa-http-19950801/nasa_19950801.tsv.gz"
		h5   = "heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job5.log.gz"
		h11  = "heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job11.log.gz"
	)
	dir := realdata.Dir(t, nasa, h5, h11) // skips without the data; fatal under CI=true
	junk := filepath.Join(t.TempDir(), "junk.txt")
	os.WriteFile(junk, []byte("hello world\nnot a log line\n"), 0o644)
	for _, tc := range []struct {
		file, format string
		maxRejects   int64
	}{
		{filepath.Join(dir, nasa), "nasa-tsv", 10},
		{filepath.Join(dir, h5), "heritrix", 10},
		{filepath.Join(dir, h11), "heritrix", 10},
		{junk, FormatUnknown, 2},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			paths := []string{filepath.Join(dir, nasa), filepath.Join(dir, h5), filepath.Join(dir, h11), junk}
			sum, err := Run(context.Background(), Config{Format: FormatAuto, Paths: paths, ProgressInterval: -1, Parse: parse.Config{}},
				stream.NewMemorySink(), nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			var in *InputSummary
			for i := range sum.Inputs {
				if sum.Inputs[i].Name == tc.file {
					in = &sum.Inputs[i]
				}
			}
			if in == nil || in.Format != tc.format {
				t.Fatalf("input %s: %+v, want format %s", tc.file, in, tc.format)
			}
			var rej int64
			for _, n := range in.Rejects {
				rej += n
			}
			if in.Lines == 0 || rej > tc.maxRejects {
				t.Errorf("%s read as %s: %d lines, rejects %v", tc.file, in.Format, in.Lines, in.Rejects)
			}
			if tc.format == FormatUnknown && in.Rejects[ReasonNoFormat] != 2 {
				t.Errorf("rejects %v, want 2 %s", in.Rejects, ReasonNoFormat)
			}
			var lines int64
			for _, s := range sum.Inputs {
				if s.Format == tc.format {
					lines += s.Lines
				}
			}
			if got := testutil.ToFloat64(newMetrics(reg, tc.format).lines.WithLabelValues(tc.format)); int64(got) != lines {
				t.Errorf("lines_total{format=%s} = %v, want %d", tc.format, got, lines)
			}
		})
	}
}

// TestAutoCheckpointKeepsFormat: with FormatAuto the checkpoint records
// each input's detected format with its position, and a followed file that
// is empty at first is detected when it first has lines.
func TestAutoCheckpointKeepsFormat(t *testing.T) {
	dir := t.TempDir()
	squid := filepath.Join(dir, "access.log")
	os.WriteFile(squid, []byte("1157689320.327   2864 10.105.21.199 TCP_MISS/200 10182 GET http://www.example.com/ - DIRECT/1.2.3.4 text/html\n"), 0o644)
	cp := filepath.Join(dir, "cp")
	sum, err := Run(context.Background(), Config{Format: FormatAuto, Paths: []string{squid}, CheckpointPath: cp, ProgressInterval: -1},
		stream.NewMemorySink(), nil, nil)
	if err != nil || len(sum.Inputs) != 1 || sum.Inputs[0].Format != "squid" || sum.Inputs[0].Observations != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	c, err := loadCheckpoint(cp, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(squid)
	if p, ok := c.get(abs); !ok || p.Format != "squid" {
		t.Fatalf("checkpoint position %+v", p)
	}
}
