package aggregate

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// observation counts one decoded observation of kind k.
func (m *metrics) observation(k records.Kind) {
	switch k {
	case records.KindVisit:
		m.obsVisit.Inc()
	case records.KindAccess:
		m.obsAccess.Inc()
	default:
		m.observations.WithLabelValues(string(k)).Inc()
	}
}

// metrics are the Processor's Prometheus metrics, registered on the
// registerer given to NewProcessor.
type metrics struct {
	observations *prometheus.CounterVec // by kind
	outcomes     *prometheus.CounterVec // applied, duplicate, late, no_information
	sitemap      *prometheus.CounterVec // sitemap lastmods by use, checks by verdict (sitemap_trust.go)
	sitemapCheck *prometheus.CounterVec
	late         *prometheus.CounterVec // reordered (applied at the latest time), dropped
	deadLetters  *prometheus.CounterVec // by reason
	rejected     *prometheus.CounterVec // outputs the sink rejected, by topic and reason
	alerts       *prometheus.CounterVec // by kind
	candidates   *prometheus.CounterVec // confirmed shifts by kind and what became of them (alerts.go)
	estimates    *prometheus.CounterVec // by kind
	// The children of observations and estimates counted per record,
	// looked up once (initLabels).
	obsVisit, obsAccess, estChange, estAccess prometheus.Counter
	cache                                     *prometheus.CounterVec // hit, miss
	retries                                   *prometheus.CounterVec
	fenced                                    *prometheus.CounterVec
	corrupt                                   prometheus.Counter
	outputs                                   prometheus.Counter
	committed                                 prometheus.Counter
	batchSize                                 prometheus.Histogram
	batchLatency                              prometheus.Histogram
	sinkLatency                               prometheus.Histogram
	storeLatency                              *prometheus.HistogramVec
	stateBytes                                *sizeHistogram
	nextOffset                                *prometheus.GaugeVec
	cachedObjs                                *prometheus.GaugeVec
	eventLag                                  *eventLagCollector
	held                                      *prometheus.GaugeVec
}

// partitionGauges are a partition's series; metrics.forget deletes them
// when the partition leaves this member.
type partitionGauges struct {
	next, cached, held prometheus.Gauge
	newest             *atomic.Int64 // UnixNano of the newest committed observation; 0: none yet
}

func (m *metrics) partition(p state.Partition) partitionGauges {
	id := strconv.Itoa(int(p.ID))
	return partitionGauges{next: m.nextOffset.WithLabelValues(p.Topic, id), cached: m.cachedObjs.WithLabelValues(p.Topic, id),
		held: m.held.WithLabelValues(p.Topic, id), newest: m.eventLag.track(p)}
}

// forget deletes p's per-partition series: a partition that moved to
// another member must not be reported by this one (a frozen next_offset
// would look like a stopped partition, and sums over members would count
// it twice).
func (m *metrics) forget(p state.Partition) {
	id := strconv.Itoa(int(p.ID))
	m.nextOffset.DeleteLabelValues(p.Topic, id)
	m.cachedObjs.DeleteLabelValues(p.Topic, id)
	m.held.DeleteLabelValues(p.Topic, id)
	m.eventLag.forget(p)
}

// claimed sets, when the partition is claimed, the gauges that describe
// its stored state: next_offset to the stored next offset (next; none
// when it is -1, a partition never committed) and the newest event time to
// the stored reorder position's (rb), so that after a restart whose stored
// offsets are at the end of the input they read what is stored, not 0 and
// absent until the first new commit.
func (g partitionGauges) claimed(next int64, rb *reorderBuf) {
	if next >= 0 {
		g.next.Set(float64(next))
	}
	if rb != nil && rb.hasMax {
		g.committed(0, rb.maxSeen)
	}
}

// committed records the newest event time of a committed batch: of its
// applied observations (appliedNs, Unix ns; 0: none) and of those its
// reorder buffer holds (seenMs, Unix ms; committed with the batch as the
// buffer's position).
func (g partitionGauges) committed(appliedNs, seenMs int64) {
	newest := max(g.newest.Load(), appliedNs)
	if t := seenMs * int64(time.Millisecond); t > newest {
		newest = t
	}
	g.newest.Store(newest)
}

// Known label values, exported at 0 from the start so that rate() and
// alerts see a series before the first event (and an absent series means
// a scrape problem, not "nothing happened").
var (
	knownAlertKinds   = []string{records.EstimateChange, records.EstimateAccess}
	knownLateActions  = []string{"reordered", "applied_at_latest", "late_output"}
	knownDeadReasons  = []string{"decode", ReasonFuture, ReasonOutputRejected}
	knownRetryOps     = []string{"commit", "write outputs", "write dead letters", "claim", "load", "verify"}
	knownRejectReason = []string{"MESSAGE_TOO_LARGE", stream.ReasonExceedsBatchBytes, "RECORD_LIST_TOO_LARGE", "INVALID_RECORD"}
	knownFenced       = []string{"takeover", "rewound"}
)

// initLabels creates the known series of the labelled counters at 0; the
// output topics come from cfg.
func (m *metrics) initLabels(cfg Config) {
	m.obsVisit = m.observations.WithLabelValues(string(records.KindVisit))
	m.obsAccess = m.observations.WithLabelValues(string(records.KindAccess))
	m.estChange = m.estimates.WithLabelValues(records.EstimateChange)
	m.estAccess = m.estimates.WithLabelValues(records.EstimateAccess)
	for _, k := range knownAlertKinds {
		m.alerts.WithLabelValues(k)
		m.estimates.WithLabelValues(k)
	}
	for _, a := range knownLateActions {
		m.late.WithLabelValues(a)
	}
	for _, r := range knownDeadReasons {
		m.deadLetters.WithLabelValues(r)
	}
	for _, op := range knownRetryOps {
		m.retries.WithLabelValues(op)
	}
	for _, topic := range []string{cfg.EstimatesTopic, cfg.AccessReportsTopic, cfg.AlertsTopic, cfg.DeadLetterTopic, cfg.LateTopic} {
		for _, r := range knownRejectReason {
			m.rejected.WithLabelValues(topic, r)
		}
	}
	for _, r := range knownFenced {
		m.fenced.WithLabelValues(r)
	}
	for _, oc := range outcomeNames {
		if oc != Late.String() {
			m.outcomes.WithLabelValues(oc)
		}
	}
	for _, r := range []string{"hit", "miss"} {
		m.cache.WithLabelValues(r)
	}
	for _, u := range sitemapUseNames[1:] {
		m.sitemap.WithLabelValues(u)
	}
	for _, v := range verdictNames[1:] {
		m.sitemapCheck.WithLabelValues(v)
	}
}

// eventLagCollector exports changerate_aggregator_event_time_lag_seconds:
// per owned partition, the wall clock at scrape time minus the newest
// observation time committed, so the gauge keeps growing while a
// partition is stuck (a gauge set at commit time would freeze).
type eventLagCollector struct {
	desc  *prometheus.Desc
	now   func() time.Time
	mu    sync.Mutex
	parts map[state.Partition]*atomic.Int64
}

func newEventLagCollector(ns string, now func() time.Time) *eventLagCollector {
	return &eventLagCollector{
		desc: prometheus.NewDesc(ns+"_event_time_lag_seconds",
			"Wall clock minus the newest observation time committed, per owned partition (from the claim when the store holds the partition's reorder position, else absent until its first commit).",
			[]string{"topic", "partition"}, nil),
		now: now, parts: map[state.Partition]*atomic.Int64{},
	}
}

func (c *eventLagCollector) track(p state.Partition) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := new(atomic.Int64)
	c.parts[p] = v
	return v
}

func (c *eventLagCollector) forget(p state.Partition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.parts, p)
}

func (c *eventLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *eventLagCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, v := range c.parts {
		if n := v.Load(); n != 0 {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, now.Sub(time.Unix(0, n)).Seconds(), p.Topic, strconv.Itoa(int(p.ID)))
		}
	}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "changerate_aggregator"
	lat := prometheus.ExponentialBuckets(0.0001, 2, 18)
	m := &metrics{
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "observations_in_total", Help: "Observations decoded, by kind."}, []string{"kind"}),
		outcomes:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "observations_outcome_total", Help: "What applying an observation did: applied, duplicate, no_information (observations later than the allowed lateness are counted in late_events_total{action=\"late_output\"})."}, []string{"outcome"}),
		late:         prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "late_events_total", Help: "Out-of-order observations: reordered (arrived before the latest event time seen; put in order by the reorder buffer or applied at the object's latest time) applied_at_latest (older than its object's latest, within the allowed lateness: applied at that time), or late_output (older than its object's latest by more than the allowed lateness: written to the late topic)."}, []string{"action"}),
		deadLetters:  prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "dead_letters_total", Help: "Messages sent to the dead-letter topic, by reason."}, []string{"reason"}),
		rejected:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "outputs_rejected_total", Help: "Output records the sink refused permanently, by topic and the sink's reason (e.g. MESSAGE_TOO_LARGE); each is replaced by a dead letter (reason output_rejected), except rejected dead letters (topic = the dead-letter topic), which stop the partition."}, []string{"topic", "reason"}),
		alerts:       prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "alerts_total", Help: "Rate-shift alerts published, by kind."}, []string{"kind"}),
		candidates:   prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "alert_candidates_total", Help: "Confirmed rate shifts by kind and outcome: alerted (in an object or site alert), learning (site profile still learning), mixed_clock (change point before the profile), small_effect (below ALERT_MIN_RATIO or ALERT_MIN_EVENTS), not_discovery (adjusted p-value above ALERT_FDR), overflow (beyond the candidates held per period)."}, []string{"kind", "outcome"}),
		estimates:    prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "estimates_out_total", Help: "Estimate records published, by kind."}, []string{"kind"}),
		cache:        prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_lookups_total", Help: "Object cache lookups: hit or miss (a miss reads the store)."}, []string{"result"}),
		retries:      prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total", Help: "Retried output writes, state commits, state claims (at a partition's start and after a fenced commit) and state reads (at a partition's start and a batch's); idle checks of the stored offset skipped because the store failed (op: commit, write outputs, write dead letters, claim, load, verify)."}, []string{"op"}),
		fenced:       prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "fenced_commits_total", Help: "Fencing events of the aggregator beyond the store's refusals (those are changerate_state_commit_rejected_total): takeover counts claims refused and then taken over (a restarted consumer group); rewound counts idle checks that found the stored offset behind the last commit (the store lost writes)."}, []string{"reason"}),
		corrupt:      prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "corrupt_states_total", Help: "Stored object states that could not be decoded and were started afresh."}),
		outputs:      prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "output_records_total", Help: "Output records written (estimates, reports, alerts, dead letters)."}),
		committed:    prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "messages_committed_total", Help: "Input messages whose batch was committed to the store."}),
		batchSize:    prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_messages", Help: "Input messages per batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 16)}),
		batchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_seconds", Help: "Time to process and commit one batch.", Buckets: lat}),
		sinkLatency:  prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "output_write_seconds", Help: "Time to write one batch's outputs (Kafka produce latency).", Buckets: lat}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "store_seconds", Help: "State store latency by operation.", Buckets: lat}, []string{"op"}),
		stateBytes:   newSizeHistogram(ns + "_state_bytes"),
		nextOffset:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "next_offset", Help: "Next input offset committed to the store, per partition (the stored one from the claim on)."}, []string{"topic", "partition"}),
		cachedObjs:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cached_objects", Help: "Objects held in the in-process cache, per partition."}, []string{"topic", "partition"}),
		held:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "reorder_held_observations", Help: "Observations held in the partition's event-time reorder buffer (about LATE_TOLERANCE of input)."}, []string{"topic", "partition"}),
		eventLag:     newEventLagCollector(ns, time.Now),
		sitemap: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sitemap_lastmods_total",
			Help: "Sitemap lastmods (observations of format sitemap) by use: evidence (counted as Last-Modified), crawled (not counted: the URL's visits have digests), untrusted (not counted: the site's lastmods disagree with its visits)."}, []string{"use"}),
		sitemapCheck: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sitemap_checks_total",
			Help: "Checks of a sitemap lastmod against the visits of its URL: agree, disagree (moved without a digest change, or a digest change without a move), undecided."}, []string{"verdict"}),
	}
	for _, c := range []prometheus.Collector{m.observations, m.outcomes, m.late, m.deadLetters, m.rejected, m.alerts, m.candidates, m.estimates, m.cache,
		m.retries, m.fenced, m.corrupt, m.outputs, m.committed, m.batchSize, m.batchLatency, m.sinkLatency, m.storeLatency,
		m.stateBytes, m.nextOffset, m.cachedObjs, m.eventLag, m.held, m.sitemap, m.sitemapCheck} {
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
