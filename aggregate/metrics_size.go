package aggregate

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// changerate_aggregator_state_bytes, the encoded size of written object
// states, is a histogram whose observations each worker counts for its
// batch (sizeCounts) and adds once per batch, instead of one
// prometheus.Histogram.Observe per written state: in the live shape every
// observation writes a state, and Observe's atomic operations on counters
// that every partition's goroutine shares were 1–3 % of the aggregator's
// CPU. The series are those of a prometheus.Histogram with
// prometheus.LinearBuckets(sizeBucketWidth, sizeBucketWidth,
// sizeBuckets), the one it replaces: a size s falls in the first bucket
// whose upper bound is ≥ s (Prometheus's le), above the last in +Inf; the
// sizes are whole bytes, so the sum is an exact integer (a float64 sum
// of them is exact below 2⁵³ too).

const (
	sizeBucketWidth = 16
	sizeBuckets     = 20
)

// sizeCounts is one batch's state sizes: per bucket (the last is +Inf)
// and their sum.
type sizeCounts struct {
	n   [sizeBuckets + 1]uint32
	sum uint64
}

// add counts a state of size bytes.
func (c *sizeCounts) add(size int) {
	i := sizeBuckets
	if size <= sizeBucketWidth {
		i = 0
	} else if b := (size+sizeBucketWidth-1)/sizeBucketWidth - 1; b < sizeBuckets {
		i = b
	}
	c.n[i]++
	c.sum += uint64(max(size, 0))
}

// sizeHistogram is the collector of changerate_aggregator_state_bytes.
type sizeHistogram struct {
	desc  *prometheus.Desc
	upper [sizeBuckets]float64
	n     [sizeBuckets + 1]atomic.Uint64
	sum   atomic.Uint64
}

// newSizeHistogram is the collector of the histogram named name.
func newSizeHistogram(name string) *sizeHistogram {
	h := &sizeHistogram{desc: prometheus.NewDesc(name, "Encoded size of written object states.", nil, nil)}
	for i, u := range prometheus.LinearBuckets(sizeBucketWidth, sizeBucketWidth, sizeBuckets) {
		h.upper[i] = u
	}
	return h
}

// add adds a batch's counts (and leaves c as it was).
func (h *sizeHistogram) add(c *sizeCounts) {
	for i, n := range c.n {
		if n > 0 {
			h.n[i].Add(uint64(n))
		}
	}
	h.sum.Add(c.sum)
}

func (h *sizeHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect exports the counts as a histogram; its count is the buckets'
// total (+Inf's included), so that the buckets never exceed it while a
// batch is being added.
func (h *sizeHistogram) Collect(ch chan<- prometheus.Metric) {
	buckets := make(map[float64]uint64, sizeBuckets)
	var cum uint64
	for i, u := range h.upper {
		cum += h.n[i].Load()
		buckets[u] = cum
	}
	cum += h.n[sizeBuckets].Load()
	ch <- prometheus.MustNewConstHistogram(h.desc, cum, float64(h.sum.Load()), buckets)
}
