package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/realdata"
	"github.com/changerate/changerate/internal/recordschema"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// countingSink decodes and counts observations; it keeps nothing else.
type countingSink struct {
	obs, dead int
	// invalid is the first record that its JSON Schema rejects (every
	// dead letter, and the first 2,000 then every 50th observation, are
	// checked: a schema check costs far more than decoding).
	invalid error
	kinds   map[records.Kind]int
	changed map[records.ChangeFlag]int
	bad     error
}

func (s *countingSink) Write(_ context.Context, msgs ...stream.Message) error {
	for _, m := range msgs {
		if m.Topic == stream.TopicDeadLetter {
			s.dead++
			if err := recordschema.Validate(recordschema.DeadLetter, m.Value); err != nil && s.invalid == nil {
				s.invalid = err
			}
			continue
		}
		if s.obs < 2000 || s.obs%50 == 0 {
			if err := recordschema.Validate(recordschema.Observation, m.Value); err != nil && s.invalid == nil {
				s.invalid = err
			}
		}
		o, err := records.DecodeObservation(m.Value)
		if err != nil && s.bad == nil {
			s.bad = fmt.Errorf("%s: %w", m.Value, err)
		}
		// The observation's site is the one the aggregator keys the
		// object's site state by (issue 37: raeder.dk against raeder.dk:83).
		if err == nil && o.Site != records.SiteOf(o.Object) && s.bad == nil {
			s.bad = fmt.Errorf("%s: site %q, the aggregator's %q", m.Value, o.Site, records.SiteOf(o.Object))
		}
		s.obs++
		s.kinds[o.Kind]++
		s.changed[o.Changed]++
	}
	return nil
}
func (s *countingSink) Close() error { return nil }

// TestRealData reads every data file of the shared folder with its format
// and checks the counts: lines read, observations, and rejects by reason.
// Every reject listed here was inspected and is a genuinely broken input
// line; any other reject is a bug. Run with -v for the per-file report.
func TestRealData(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 10 MB of real data; skipped with -short")
	}
	dir := realdata.Dir(t) // ../shared/data or $CHANGERATE_DATA; fatal under CI=true when missing
	type want struct {
		lines, obs int64
		skipped    map[string]int64
		rejects    map[string]int64
	}
	cases := []struct {
		file   string
		format string
		cfg    parse.Config
		want   want
	}{
		// 11 TCP_DENIED lines (407 challenges, ACL refusals) served no object.
		{"squid-access-log-secrepo-sample/test-access.log", "squid", parse.Config{}, want{100, 80, map[string]int64{"connect": 9, "denied": 11}, nil}},
		{"squid-store-log-snippets/store-2006-ubuntuforums-dbott67.log", "storelog", parse.Config{}, want{27, 27, nil, nil}},
		{"squid-store-log-snippets/store-2011-ubuntuforums-jemate18.log", "storelog", parse.Config{}, want{6, 6, nil, nil}},
		{"elastic-apache-logs/apache_logs.gz", "clf", parse.Config{BaseURL: "http://semicomplete.com"}, want{10000, 10000, nil, nil}},
		// Line 1050 is "-5 - http:/ ... err=java.lang.NullPointerException": Heritrix logged a broken URI.
		{"heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job11.log.gz", "heritrix", parse.Config{}, want{1988, 1987, nil, map[string]int64{"url": 1}}},
		{"heritrix-crawl-logs-netarchivesuite/crawl-h1-2006-job5.log.gz", "heritrix", parse.Config{}, want{743, 743, nil, nil}},
		{"heritrix-crawl-logs-netarchivesuite/crawl-h3-2015.log.gz", "heritrix", parse.Config{}, want{107, 107, nil, nil}},
		// Line 1 is the ARC metadata header of the wrapped log.
		{"heritrix-crawl-logs-netarchivesuite/idna-crawl-h1.14.4-2012.log.gz", "heritrix", parse.Config{}, want{1548, 1547, map[string]int64{"comment": 1}, nil}},
		{"heritrix-crawl-logs-netarchivesuite/netarkivet-20081105135926-00000.warc", "warc", parse.Config{}, want{68, 23, map[string]int64{"record-type": 45}, nil}},
		{"warc-samples/IAH-20080430204825-00000-blackbook.warc.gz", "warc", parse.Config{}, want{822, 299, map[string]int64{"record-type": 523}, nil}},
		{"warc-samples/iana.warc.gz", "warc", parse.Config{}, want{343, 171, map[string]int64{"record-type": 172}, nil}},
		{"warc-samples/dupes.warc.gz", "warc", parse.Config{}, want{25, 12, map[string]int64{"record-type": 13}, nil}},
		{"nasa-http-19950801/nasa_19950801.tsv.gz", "nasa-tsv", parse.Config{BaseURL: "http://www.ksc.nasa.gov"}, want{30970, 30969, map[string]int64{"comment": 1}, nil}},
		{"worldcup98-day6-sample/wc_day6_1_sample.csv.gz", "worldcup-csv", parse.Config{Zone: time.UTC, BaseURL: "http://www.france98.com"}, want{200000, 200000, nil, nil}},
		{"php-doc-en-history/git-file-changes.tsv.gz", "changes-tsv", parse.Config{}, want{182374, 182374, nil, nil}},
	}
	// Every data file must be covered by a case.
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.file] = true
	}
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && !strings.HasSuffix(path, ".txt") && !strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(dir, path)
			if !covered[rel] {
				t.Errorf("data file %s has no case in TestRealData", rel)
			}
		}
		return nil
	})
	fmtMap := func(m map[string]int64) string {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
		}
		if len(parts) == 0 {
			return "-"
		}
		return strings.Join(parts, ",")
	}
	t.Logf("%-66s %-12s %7s %7s  %-18s %s", "file", "format", "lines", "obs", "skipped", "rejects")
	for _, c := range cases {
		path := filepath.Join(dir, c.file)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		sink := &countingSink{kinds: map[records.Kind]int{}, changed: map[records.ChangeFlag]int{}}
		reg := prometheus.NewRegistry()
		sum, err := Run(context.Background(), Config{Format: c.format, Paths: []string{path}, Parse: c.cfg, ProgressInterval: -1}, sink, nil, reg)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		in := sum.Inputs[0]
		canon := map[string]int64{}
		if mfs, err := reg.Gather(); err == nil {
			for _, mf := range mfs {
				if mf.GetName() == "changerate_ingest_url_canonicalisations_total" {
					for _, m := range mf.GetMetric() {
						canon[m.GetLabel()[1].GetValue()] = int64(m.GetCounter().GetValue())
					}
				}
			}
		}
		t.Logf("%-66s %-12s %7d %7d  %-18s %s   kinds %v  urls %s", c.file, c.format, in.Lines, in.Observations, fmtMap(in.Skipped), fmtMap(in.Rejects), sink.kinds, fmtMap(canon))
		if sink.invalid != nil {
			t.Errorf("%s: %v", c.file, sink.invalid)
		}
		if sink.bad != nil {
			t.Errorf("%s: observation does not decode: %v", c.file, sink.bad)
		}
		if in.Lines != c.want.lines || in.Observations != c.want.obs || int64(sink.obs) != c.want.obs ||
			fmtMap(in.Skipped) != fmtMap(c.want.skipped) || fmtMap(in.Rejects) != fmtMap(c.want.rejects) {
			t.Errorf("%s: lines %d obs %d skipped %s rejects %s; want %d %d %s %s", c.file, in.Lines, in.Observations,
				fmtMap(in.Skipped), fmtMap(in.Rejects), c.want.lines, c.want.obs, fmtMap(c.want.skipped), fmtMap(c.want.rejects))
		}
	}
}
