package stream

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers c on reg and returns it, or returns the collector
// already registered under the same descriptor (so that two sinks or two
// sources in one process share their metrics). A nil reg registers nothing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("stream: registering metrics: %w", err)
	}
	return c, nil
}

// Latency buckets from 100µs to ~13s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 18)

// Batch-size buckets from 1 to 16384 messages.
var batchBuckets = prometheus.ExponentialBuckets(1, 2, 15)

type sinkMetrics struct {
	written  *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  prometheus.Histogram
	batchLen prometheus.Histogram
}

func newSinkMetrics(reg prometheus.Registerer) (*sinkMetrics, error) {
	var m sinkMetrics
	var err error
	if m.written, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_messages_written_total",
		Help: "Messages acknowledged by Kafka, by topic.",
	}, []string{"topic"})); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_write_errors_total",
		Help: "Messages whose write to Kafka failed, by topic.",
	}, []string{"topic"})); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "changerate_kafka_write_duration_seconds",
		Help:    "Duration of Sink.Write calls (until all messages are acknowledged), in seconds.",
		Buckets: latencyBuckets,
	})); err != nil {
		return nil, err
	}
	if m.batchLen, err = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "changerate_kafka_write_batch_messages",
		Help:    "Messages per Sink.Write call.",
		Buckets: batchBuckets,
	})); err != nil {
		return nil, err
	}
	return &m, nil
}

type sourceMetrics struct {
	read          *prometheus.CounterVec
	lag           *prometheus.GaugeVec
	fetchErrors   *prometheus.CounterVec
	latency       prometheus.Histogram
	batchLen      prometheus.Histogram
	generation    prometheus.Gauge
	rebalances    prometheus.Counter
	claims        prometheus.Gauge
	commitErrs    prometheus.Counter
	fetchBuffered prometheus.Gauge
}

func newSourceMetrics(reg prometheus.Registerer) (*sourceMetrics, error) {
	var m sourceMetrics
	var err error
	if m.read, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_messages_read_total",
		Help: "Messages fetched from Kafka, by topic.",
	}, []string{"topic"})); err != nil {
		return nil, err
	}
	if m.lag, err = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "changerate_kafka_consumer_lag_messages",
		Help: "High watermark minus the next offset to fetch, per owned partition, after the latest fetch.",
	}, []string{"topic", "partition"})); err != nil {
		return nil, err
	}
	if m.fetchErrors, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changerate_kafka_fetch_errors_total",
		Help: "Failed fetch or offset requests, by topic and kind (transient errors are retried).",
	}, []string{"topic", "kind"})); err != nil {
		return nil, err
	}
	if m.latency, err = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "changerate_kafka_fetch_duration_seconds",
		Help:    "Duration of fetch requests to Kafka (including long-poll waits), in seconds.",
		Buckets: latencyBuckets,
	})); err != nil {
		return nil, err
	}
	if m.batchLen, err = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "changerate_kafka_fetch_batch_messages",
		Help:    "Messages returned by one non-empty fetch request.",
		Buckets: batchBuckets,
	})); err != nil {
		return nil, err
	}
	if m.fetchBuffered, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changerate_kafka_fetch_buffered_bytes",
		Help: "Bytes of the fetch budget (KafkaConfig.FetchBufferBytes) held by fetch requests and by fetched messages not yet returned to the handlers.",
	})); err != nil {
		return nil, err
	}
	if m.generation, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changerate_kafka_group_generation",
		Help: "Current consumer-group generation of this member.",
	})); err != nil {
		return nil, err
	}
	if m.rebalances, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changerate_kafka_group_generations_total",
		Help: "Consumer-group generations joined by this member (one per rebalance).",
	})); err != nil {
		return nil, err
	}
	if m.claims, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changerate_kafka_owned_partitions",
		Help: "Partitions currently owned by this member.",
	})); err != nil {
		return nil, err
	}
	if m.commitErrs, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changerate_kafka_commit_errors_total",
		Help: "Failed offset commits to the consumer group (lag monitoring only).",
	})); err != nil {
		return nil, err
	}
	return &m, nil
}
