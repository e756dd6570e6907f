// Package monitoringtest reads the metrics that the deploy bundle's
// monitoring uses — the expressions of its alerting and recording rules
// (PrometheusRule objects or plain Prometheus rules files) and of its
// Grafana dashboards — and checks them against a program's registry, so
// that the programs' tests can require every such series to exist from the
// start (docs/deploying.md: "The labelled counters these alerts use exist at 0 from
// the start").
package monitoringtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"
)

// Ref is one use of a metric in an expression.
type Ref struct {
	Where  string // "alert X (file)", "dashboard panel Y (file)"
	Metric string // the series name as written (a histogram's _bucket, _sum or _count included)
	// Labels are the selector's equality matchers on fixed values, e.g.
	// {action="late_output"}: a series with these values must exist.
	// Matchers on Grafana variables ($namespace), other operators and the
	// target labels that Prometheus adds (namespace, pod, ...) are left out.
	Labels map[string]string
}

func (r Ref) String() string {
	if len(r.Labels) == 0 {
		return r.Metric
	}
	var l []string
	for k, v := range r.Labels {
		l = append(l, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(l)
	return r.Metric + "{" + strings.Join(l, ",") + "}"
}

// Program is the program that exports the metric: ingest for
// changerate_ingest_*, else the aggregator (the aggregate, state and Kafka
// client metrics the rules and dashboard use are the aggregator's; ingest's
// Kafka sink exports the same Kafka names for its own topics).
func Program(metric string) string {
	if strings.HasPrefix(metric, "changerate_ingest_") {
		return "ingest"
	}
	return "aggregator"
}

// PerPartition are the series that exist, by design, only for the
// partitions a member owns (labels topic and partition; docs/deploying.md: "per-partition
// series disappear when a partition moves to another pod"): they cannot
// exist before the first claim, and the rules using them compare owned
// partitions only.
var PerPartition = map[string]bool{
	"changerate_kafka_consumer_lag_messages":          true,
	"changerate_aggregator_next_offset":               true,
	"changerate_aggregator_event_time_lag_seconds":    true, // also absent until the partition's first commit
	"changerate_aggregator_cached_objects":            true,
	"changerate_aggregator_reorder_held_observations": true,
}

// The PromQL parser (github.com/prometheus/prometheus/promql/parser) is not
// a dependency, and its module is a large one (its go.mod requires the
// service-discovery SDKs of every cloud), so the names are found with
// regexps. That is sound here: every metric of changerate is named
// changerate_*, such a word in a PromQL expression is a metric name (label
// names and values are not changerate_*: the tests fail on one that would
// be), and its selector's matchers, if any, follow it in braces.
var (
	selectorRE = regexp.MustCompile(`\b(changerate_[a-zA-Z0-9_:]*)\s*(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
)

// targetLabels are added by Prometheus (the scrape target), not by the
// programs.
var targetLabels = []string{"namespace", "pod", "job", "instance", "service", "container", "endpoint"}

// ExprRefs returns the metric references of one PromQL expression.
func ExprRefs(where, expr string) []Ref {
	var out []Ref
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		r := Ref{Where: where, Metric: m[1], Labels: map[string]string{}}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if mm[2] == "=" && !strings.Contains(mm[3], "$") && !slices.Contains(targetLabels, mm[1]) {
				r.Labels[mm[1]] = mm[3]
			}
		}
		out = append(out, r)
	}
	return out
}

// Root returns the module's root directory (the first parent of the
// working directory holding go.mod).
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("monitoringtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert  string `json:"alert"`
			Record string `json:"record"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

// Refs returns the metric references of every rules file and dashboard of
// the deploy bundle (root/deploy): YAML documents of kind PrometheusRule or
// with top-level groups (a Prometheus rules file), and JSON files with
// panels (Grafana dashboards). It fails tb when it finds no rule or no
// dashboard (the scan would be broken).
func Refs(tb testing.TB, root string) []Ref {
	tb.Helper()
	var out []Ref
	rules, dashboards := 0, 0
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch filepath.Ext(p) {
		case ".yaml", ".yml":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, doc := range splitYAML(b) {
				var obj struct {
					Kind string     `json:"kind"`
					Spec ruleGroups `json:"spec"`
					ruleGroups
				}
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					continue // not a rules document (the decoding tests of deploy/k8s check every object)
				}
				g := obj.ruleGroups
				if obj.Kind == "PrometheusRule" {
					g = obj.Spec
				} else if obj.Kind != "" {
					continue
				}
				for _, gr := range g.Groups {
					for _, r := range gr.Rules {
						name := "alert " + r.Alert
						if r.Alert == "" {
							name = "record " + r.Record
						}
						rules++
						out = append(out, ExprRefs(name+" ("+rel+")", r.Expr)...)
					}
				}
			}
		case ".json":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var dash struct {
				Panels []struct {
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			if json.Unmarshal(b, &dash) != nil || len(dash.Panels) == 0 {
				return nil
			}
			dashboards++
			for _, p := range dash.Panels {
				for _, tg := range p.Targets {
					out = append(out, ExprRefs("dashboard panel "+p.Title+" ("+rel+")", tg.Expr)...)
				}
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if rules == 0 || dashboards == 0 || len(out) == 0 {
		tb.Fatalf("monitoringtest: found %d rules and %d dashboards under %s/deploy with %d metric references: the scan is broken",
			rules, dashboards, root, len(out))
	}
	return out
}

func splitYAML(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// Series is a gathered registry: the metrics of each family.
type Series map[string]*dto.MetricFamily

// Gather gathers g.
func Gather(tb testing.TB, g prometheus.Gatherer) Series {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := Series{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// ErrMissing is wrapped by Check's errors.
var ErrMissing = errors.New("no series")

// Check returns an error wrapping ErrMissing unless s has a series of r's
// metric with r's label values (a histogram's _bucket, _sum and _count are
// its family's).
func (s Series) Check(r Ref) error {
	mf, ok := s[r.Metric]
	if !ok {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, cut := strings.CutSuffix(r.Metric, suf); cut && s[base] != nil && s[base].GetType() == dto.MetricType_HISTOGRAM {
				mf, ok = s[base], true
			}
		}
	}
	if !ok || len(mf.GetMetric()) == 0 {
		return fmt.Errorf("%s: %w of %s", r.Where, ErrMissing, r.Metric)
	}
	for _, m := range mf.GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := r.Labels[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match == len(r.Labels) {
			return nil
		}
	}
	return fmt.Errorf("%s: %w %s", r.Where, ErrMissing, r)
}
