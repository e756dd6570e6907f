package aggregate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// exposition is what the text format of reg's /metrics shows of its
// histograms: each family's name, help and type, and each histogram's
// labels, buckets (upper bound, cumulative count), count and sum.
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		fmt.Fprintf(&b, "%s %q %v\n", mf.GetName(), mf.GetHelp(), mf.GetType())
		for _, m := range mf.GetMetric() {
			fmt.Fprintf(&b, "  %v", m.GetLabel())
			h := m.GetHistogram()
			for _, bk := range h.GetBucket() {
				fmt.Fprintf(&b, " le=%v:%d", bk.GetUpperBound(), bk.GetCumulativeCount())
			}
			fmt.Fprintf(&b, " count=%d sum=%v\n", h.GetSampleCount(), h.GetSampleSum())
		}
	}
	return b.String()
}

// TestSizeHistogramIsPrometheusHistogram: the batched state_bytes
// histogram exports, byte for byte, what the prometheus.Histogram it
// replaces exports after observing the same sizes one by one: the
// buckets' edges (0, 16, 17, 320, 321), sizes far beyond the last
// bucket, and a thousand random ones, added in batches of 1 to 300, with
// an empty batch among them.
func TestSizeHistogramIsPrometheusHistogram(t *testing.T) {
	const ns = "changerate_aggregator"
	want, got := prometheus.NewRegistry(), prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "state_bytes", Help: "Encoded size of written object states.", Buckets: prometheus.LinearBuckets(16, 16, 20)})
	want.MustRegister(h)
	sh := newSizeHistogram(ns + "_state_bytes")
	got.MustRegister(sh)
	if a, b := exposition(t, want), exposition(t, got); a != b {
		t.Fatalf("empty: got\n%s\nwant\n%s", b, a)
	}
	sizes := []int{0, 1, 15, 16, 17, 31, 32, 33, 319, 320, 321, 5000, 1 << 20}
	r := rand.New(rand.NewPCG(35, 2))
	for range 1000 {
		sizes = append(sizes, r.IntN(400))
	}
	for i := 0; i < len(sizes); {
		n := min(1+r.IntN(300), len(sizes)-i)
		if i == 13 {
			n = 0
		}
		var c sizeCounts
		for _, s := range sizes[i : i+n] {
			h.Observe(float64(s))
			c.add(s)
		}
		sh.add(&c)
		i += n
		if a, b := exposition(t, want), exposition(t, got); a != b {
			t.Fatalf("after %d sizes: got\n%s\nwant\n%s", i, b, a)
		}
	}
}
