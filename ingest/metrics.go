package ingest

import (
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/parse"
)

type metrics struct {
	lines        *prometheus.CounterVec
	observations *prometheus.CounterVec
	rejects      *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	bytes        *prometheus.CounterVec
	batchSize    prometheus.Histogram
	writeSeconds prometheus.Histogram
	checkpoints  prometheus.Counter
	writeRetries prometheus.Counter
	canonical    *prometheus.CounterVec
	lostFiles    prometheus.Counter
}

// RegisterMetrics registers ingest's metrics on reg with the series of
// format at 0 (see newMetrics). Run and RunSource register them as well
// (sharing collectors already registered), but only when they start: a
// command that serves reg before calling them (the /metrics of a --follow
// run) calls RegisterMetrics first, so that a scrape never finds the
// counters missing.
func RegisterMetrics(reg prometheus.Registerer, format string) {
	newMetrics(reg, format)
}

// rejectReasons are the known reason labels of rejects_total: the parsers'
// and ingest's own.
var rejectReasons = func() []string {
	r := slices.Clone(parse.RejectReasons)
	for _, own := range []string{ReasonTooLong, ReasonTooLarge, ReasonCorrupt, ReasonOutputRejected, ReasonNoFormat} {
		if !slices.Contains(r, own) {
			r = append(r, own)
		}
	}
	return r
}()

// newMetrics returns ingest's metrics, registered on reg unless it is nil,
// with the series of format (lines, observations, bytes, and rejects for
// each known reason) created at 0: an alert or dashboard on rate() sees
// them before the first line, and a run whose every line is rejected moves
// rejects_total up from 0 instead of making it appear at its final value.
// With FormatAuto the series created are those of FormatUnknown (the lines
// of inputs that no format accepts); each input's format gets its series
// when it is detected (touch).
func newMetrics(reg prometheus.Registerer, format string) *metrics {
	m := &metrics{
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_lines_total",
			Help: "Input lines (or WARC records) read, by format."}, []string{"format"}),
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_observations_total",
			Help: "Observations written (acknowledged by the sink, counted by DeliverySink), by format."}, []string{"format"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_rejects_total",
			Help: "Rejected input lines (sent to the dead-letter output), by format and reason."}, []string{"format", "reason"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_skipped_total",
			Help: "Well-formed input lines without an observation (comments, CONNECT, ...), by format and reason."}, []string{"format", "reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_bytes_total",
			Help: "Input bytes read (after decompression), by format."}, []string{"format"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "changerate_ingest_batch_messages",
			Help: "Messages per sink write.", Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "changerate_ingest_sink_write_seconds",
			Help: "Latency of one sink write (until acknowledged).", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "changerate_ingest_checkpoints_total",
			Help: "Checkpoint files written."}),
		writeRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "changerate_ingest_write_retries_total",
			Help: "Sink writes retried after a transient failure (Kafka unreachable, a topic missing, a timeout)."}),
		lostFiles: prometheus.NewCounter(prometheus.CounterOpts{Name: "changerate_ingest_lost_files_total",
			Help: "Followed files rotated or deleted while ingest was stopped whose unread rest was not found beside them (see the warning naming the file)."}),
		canonical: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "changerate_ingest_url_canonicalisations_total",
			Help: "URLs canonicalised, by format and path: cache (seen before), fast (already canonical), library (WHATWG parser; the slow path)."},
			[]string{"format", "path"}),
	}
	if reg != nil {
		m.register(reg)
	}
	if format == FormatAuto {
		format = FormatUnknown
	}
	m.touch(format)
	return m
}

// touch creates the series of format at 0 (lines, observations, bytes,
// and rejects for each known reason), if they are not there yet.
func (m *metrics) touch(format string) {
	m.lines.WithLabelValues(format)
	m.observations.WithLabelValues(format)
	m.bytes.WithLabelValues(format)
	for _, r := range rejectReasons {
		m.rejects.WithLabelValues(format, r)
	}
}

// register registers m's collectors on reg, taking over those already
// registered.
func (m *metrics) register(reg prometheus.Registerer) {
	m.lines = register(reg, m.lines)
	m.observations = register(reg, m.observations)
	m.rejects = register(reg, m.rejects)
	m.skipped = register(reg, m.skipped)
	m.bytes = register(reg, m.bytes)
	m.batchSize = register(reg, m.batchSize)
	m.writeSeconds = register(reg, m.writeSeconds)
	m.checkpoints = register(reg, m.checkpoints)
	m.writeRetries = register(reg, m.writeRetries)
	m.canonical = register(reg, m.canonical)
	m.lostFiles = register(reg, m.lostFiles)
}

// register registers c, or returns the collector already registered under
// the same name (a second Run on one registry shares the counters).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
	}
	return c
}
