package aggregate

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
)

// metrics are the Processor's Prometheus metrics, registered on the
// registerer given to NewProcessor.
type metrics struct {
	observations *prometheus.CounterVec // by kind
	outcomes     *prometheus.CounterVec // applied, duplicate, late, no_information
	late         *prometheus.CounterVec // reordered (applied at the latest time), dropped
	deadLetters  *prometheus.CounterVec // by reason
	rejected     *prometheus.CounterVec // outputs the sink rejected, by topic and reason
	alerts       *prometheus.CounterVec // by kind
	candidates   *prometheus.CounterVec // confirmed shifts by kind and what became of them (alerts.go)
	estimates    *prometheus.CounterVec // by kind
	cache        *prometheus.CounterVec // hit, miss
	retries      *prometheus.CounterVec
	fenced       *prometheus.CounterVec
	corrupt      prometheus.Counter
	outputs      prometheus.Counter
	committed    prometheus.Counter
	batchSize    prometheus.Histogram
	batchLatency prometheus.Histogram
	sinkLatency  prometheus.Histogram
	storeLatency *prometheus.HistogramVec
	stateBytes   prometheus.Histogram
	nextOffset   *prometheus.GaugeVec
	cachedObjs   *prometheus.GaugeVec
}

type partitionGauges struct{ next, cached prometheus.Gauge }

func (m *metrics) partition(p state.Partition) partitionGauges {
	id := strconv.Itoa(int(p.ID))
	return partitionGauges{next: m.nextOffset.WithLabelValues(p.Topic, id), cached: m.cachedObjs.WithLabelValues(p.Topic, id)}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "changerate_aggregator"
	lat := prometheus.ExponentialBuckets(0.0001, 2, 18)
	m := &metrics{
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "observations_in_total", Help: "Observations decoded, by kind."}, []string{"kind"}),
		outcomes:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "observations_outcome_total", Help: "What applying an observation did: applied, duplicate, late, no_information."}, []string{"outcome"}),
		late:         prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "late_events_total", Help: "Out-of-order observations: reordered (applied at the object's latest time) or dropped (older than the tolerance)."}, []string{"action"}),
		deadLetters:  prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "dead_letters_total", Help: "Messages sent to the dead-letter topic, by reason."}, []string{"reason"}),
		rejected:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "outputs_rejected_total", Help: "Output records the sink refused permanently, by topic and the sink's reason (e.g. MESSAGE_TOO_LARGE); each is replaced by a dead letter (reason output_rejected), except rejected dead letters (topic = the dead-letter topic), which stop the partition."}, []string{"topic", "reason"}),
		alerts:       prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "alerts_total", Help: "Rate-shift alerts published, by kind."}, []string{"kind"}),
		candidates:   prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "alert_candidates_total", Help: "Confirmed rate shifts by kind and outcome: alerted (in an object or site alert), learning (site profile still learning), mixed_clock (change point before the profile), small_effect (below ALERT_MIN_RATIO or ALERT_MIN_EVENTS), not_discovery (adjusted p-value above ALERT_FDR), overflow (beyond the candidates held per period)."}, []string{"kind", "outcome"}),
		estimates:    prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "estimates_out_total", Help: "Estimate records published, by kind."}, []string{"kind"}),
		cache:        prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_lookups_total", Help: "Object cache lookups: hit or miss (a miss reads the store)."}, []string{"result"}),
		retries:      prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total", Help: "Retried output writes and state commits."}, []string{"op"}),
		fenced:       prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "fenced_commits_total", Help: "Commits refused by the store: epoch (partition lost) or offset (stale view); takeover counts claims refused and then taken over (a restarted consumer group); rewound counts idle checks that found the stored offset behind the last commit (the store lost writes)."}, []string{"reason"}),
		corrupt:      prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "corrupt_states_total", Help: "Stored object states that could not be decoded and were started afresh."}),
		outputs:      prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "output_records_total", Help: "Output records written (estimates, reports, alerts, dead letters)."}),
		committed:    prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "messages_committed_total", Help: "Input messages whose batch was committed to the store."}),
		batchSize:    prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_size", Help: "Messages per batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 16)}),
		batchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_seconds", Help: "Time to process and commit one batch.", Buckets: lat}),
		sinkLatency:  prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "output_write_seconds", Help: "Time to write one batch's outputs (Kafka produce latency).", Buckets: lat}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "store_seconds", Help: "State store latency by operation.", Buckets: lat}, []string{"op"}),
		stateBytes:   prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "state_bytes", Help: "Encoded size of written object states.", Buckets: prometheus.LinearBuckets(16, 16, 20)}),
		nextOffset:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "next_offset", Help: "Next input offset committed to the store, per partition."}, []string{"topic", "partition"}),
		cachedObjs:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cached_objects", Help: "Objects held in the in-process cache, per partition."}, []string{"topic", "partition"}),
	}
	for _, c := range []prometheus.Collector{m.observations, m.outcomes, m.late, m.deadLetters, m.rejected, m.alerts, m.candidates, m.estimates, m.cache,
		m.retries, m.fenced, m.corrupt, m.outputs, m.committed, m.batchSize, m.batchLatency, m.sinkLatency, m.storeLatency,
		m.stateBytes, m.nextOffset, m.cachedObjs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("aggregate: register metrics: %w", err)
		}
	}
	for _, k := range []string{records.EstimateChange, records.EstimateAccess} {
		for _, o := range candidateOutcomes {
			m.candidates.WithLabelValues(k, o)
		}
	}
	return m, nil
}
