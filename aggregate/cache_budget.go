package aggregate

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCacheBytes is the default of Config.CacheBytes (the aggregator's
// CHANGERATE_CACHE_BYTES): 256 MiB of cached object states for the whole
// process, about 1,300,000 objects at the ~200 bytes that a cached object
// takes (EntryOverheadBytes plus the slab slot of its name and encoded
// state; BenchmarkProcessorCacheMemory: 166 bytes accounted, 185 of heap
// in use per object with 1,000,000 objects of a live crawl).
//
// The aggregator's heap is the cache plus the batches in flight
// (BatchHeapBytes) plus the Go runtime; cmd/aggregator sets GOMEMLIMIT
// from the container's memory limit so that the collector keeps the heap
// under it. A memory limit of at least MinMemoryLimitBytes (768 MiB) leaves
// the default cache that headroom; deploy/ tests check their limits
// against it.
const DefaultCacheBytes int64 = 256 << 20

// BatchHeapBytes is the heap the aggregator takes besides the cache in the
// default configuration: the batches in flight (at most InflightBytes,
// DefaultInflightBytes), the messages fetched ahead of the partitions (at
// most as much again, stream.KafkaConfig.FetchBufferBytes), a fetched
// batch per partition waiting for the in-flight budget (at most BatchSize
// messages, and a sixth of the budget's worth of batch footprint: about
// 1 MB where every observation publishes, up to 7 MB of a history
// replay's 20,000), the objects a batch decodes while it is prepared, and
// the query API's index of up to 200,000 objects (about 400 bytes each).
// With 12 partitions that is about 130 MB live and up to 200 MB in a replay;
// the constant allows 256 MiB, and deploy/ tests check the manifests'
// limits against it.
const BatchHeapBytes int64 = 256 << 20

// MinMemoryLimitBytes is the smallest container memory limit that fits the
// default configuration with headroom: the default cache and the batches
// in flight, plus half again for the collector (GOMEMLIMIT is 90% of the
// limit, and a heap held close to it makes the collector run constantly).
const MinMemoryLimitBytes = (DefaultCacheBytes + BatchHeapBytes) * 3 / 2

// corrupt reports a stored state that does not decode: a bug or an
// incompatible deployment. The object starts afresh rather than halting
// the partition forever.
func (w *worker) corrupt(name string, err error) {
	w.p.metrics.corrupt.Inc()
	w.log.Error("corrupt object state; starting it afresh", "object", name, "err", err)
}

// registerCacheBytes registers changerate_aggregator_cache_bytes, the bytes
// the object caches account for (what CacheBytes bounds).
func registerCacheBytes(reg prometheus.Registerer, b *cacheBudget) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "changerate_aggregator", Name: "cache_bytes",
		Help: "Bytes of object state the in-process caches hold, as accounted against CACHE_BYTES (encoded states, names and bookkeeping)."},
		func() float64 { return float64(b.used.Load()) })
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("aggregate: register cache_bytes: %w", err)
	}
	return nil
}
