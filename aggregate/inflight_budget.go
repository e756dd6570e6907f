package aggregate

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/changerate/changerate/stream"
)

// DefaultInflightBytes is the default of Config.InflightBytes (the
// aggregator's CHANGERATE_INFLIGHT_BYTES): 16 MiB of batches in flight for
// the whole process, whatever the number of partitions it owns. In make
// bench's live-crawl shape (every observation publishes an estimate of
// about 1 KB) that is about 8,000 observations in flight, which keeps two
// cores busy. More is not faster there: 32 MiB and 64 MiB ran at 176,000–
// 182,000 observations/s against 16 MiB's 189,000–190,000, with 10–15 %
// more aggregator CPU per observation (larger batches touch more memory)
// and 0.9–1.7 KB more peak RSS per object (100,000 objects, two runs
// each, with the fetch-ahead buffer at half the budget). More cores may
// need more.
const DefaultInflightBytes int64 = 16 << 20

// FetchAheadBytes is the fetch-ahead buffer of a Kafka source
// (stream.KafkaConfig.FetchBufferBytes) that goes with an in-flight budget
// of inflight bytes: as much again, so that one option also bounds what is
// fetched but not yet handled. Each busy partition's fetch takes
// KAFKA_FETCH_MAX_BYTES (1 MiB) of it before it is sent, so the buffer must
// hold a fetch for every partition a member owns, and a batch fills from
// what is buffered: with half the budget (8 MiB) at most 8 of make bench's
// 12 partitions had a fetch in flight or ready, a history replay's batches
// held about 3,100 messages, and it ran at 466,000–500,000 observations/s
// where 16 MiB ran at 523,000–539,000 with 8 % less CPU per observation
// (two alternating rounds, two runs each). 0 (an unbounded budget): 0, the
// source's own default.
func FetchAheadBytes(inflight int64) int64 {
	if inflight <= 0 {
		return 0
	}
	return inflight
}

// The in-flight budget bounds the memory of the batches between their
// fetch and their commit, over all the partitions of a Processor
// (Config.InflightBytes): a partition's handler acquires an estimate of a
// batch's bytes (estimate) before it prepares the batch, adjusts
// the amount to the prepared batch's footprint without waiting (a surplus
// is released, a shortfall taken only if free), and the batch's goroutine
// releases it once the batch is committed or failed. Waiting is FIFO
// (golang.org/x/sync/semaphore), so a large batch is not overtaken for
// ever; a batch larger than the whole budget takes all of it, and so
// proceeds alone once nothing else is in flight.

// inflightBudget is Config.InflightBytes in force. A nil sem means
// unbounded (only counted).
type inflightBudget struct {
	sem  *semaphore.Weighted
	size int64
	held atomic.Int64
	wait atomic.Int64 // nanoseconds handlers waited for budget
	// perMessage is the footprint per input message of the batches
	// prepared lately (learn), in bytes.
	perMessage atomic.Int64
}

func newInflightBudget(size int64) *inflightBudget {
	b := &inflightBudget{size: size}
	b.perMessage.Store(inflightOutputPerMessage)
	if size > 0 {
		b.sem = semaphore.NewWeighted(size)
	}
	return b
}

// clamp bounds n to [1, size] (to n if unbounded).
func (b *inflightBudget) clamp(n int64) int64 {
	n = max(n, 1)
	if b.sem != nil {
		n = min(n, b.size)
	}
	return n
}

// acquire waits until n bytes (at most the whole budget) are free and
// takes them; it returns the amount taken, or ctx's error.
func (b *inflightBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = b.clamp(n)
	if b.sem != nil && !b.sem.TryAcquire(n) {
		t0 := time.Now()
		err := b.sem.Acquire(ctx, n)
		b.wait.Add(int64(time.Since(t0)))
		if err != nil {
			return 0, err
		}
	}
	b.held.Add(n)
	return n, nil
}

// resize turns a hold of held bytes into one of want bytes without
// waiting: it releases a surplus, and takes a shortfall only if it is free
// (otherwise the batch keeps held: the budget is exceeded by at most the
// estimate's error). It returns the new hold.
func (b *inflightBudget) resize(held, want int64) int64 {
	want = b.clamp(want)
	switch {
	case want < held:
		b.release(held - want)
		return want
	case want > held && (b.sem == nil || b.sem.TryAcquire(want-held)):
		b.held.Add(want - held)
		return want
	}
	return held
}

// release returns n bytes (n ≤ what the caller holds).
func (b *inflightBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.held.Add(-n)
	if b.sem != nil {
		b.sem.Release(n)
	}
}

// Per-message terms of estimate: inflightPrepPerMessage is the decoded
// observation with its strings while the batch is prepared;
// inflightOutputPerMessage is what a prepared batch is first expected to
// hold per input message, its footprint (outputs and state writes): in the
// live-crawl shape, an estimate record of about 1 KB with its message
// header, and the encoded state. The budget then learns the footprint per
// message from the batches prepared (learn).
const (
	inflightPrepPerMessage   = 512
	inflightOutputPerMessage = 1024
)

// estimate is what a batch of msgs is expected to hold while it is
// prepared and in flight, before its footprint is known: the fetched
// messages (referenced until prepare returns), the decoded observations,
// and the footprint per message learned from the batches before.
//
// The footprint depends on the input: in the live-crawl shape every
// observation publishes an estimate of about 1 KB and a batch holds about
// 1,250 bytes per message; in make bench's history replay one observation
// in ten publishes (EMIT_INTERVAL holds the others back) and a batch holds
// about 85 bytes per message (both read from
// changerate_aggregator_inflight_bytes_per_message). Charging every batch
// the live shape's footprint would let a replay prepare fewer batches at
// once than the same memory holds.
func (b *inflightBudget) estimate(msgs []stream.Message) int64 {
	n := int64(len(msgs)) * (inflightPrepPerMessage + messageSize + b.perMessage.Load())
	for i := range msgs {
		n += int64(len(msgs[i].Key) + len(msgs[i].Value))
	}
	return n
}

// learnWindow is the memory of learn, in input messages: a batch of n
// messages weighs n against learnWindow for the batches before.
const learnWindow = 20000

// learn updates the footprint per message from a batch of n input
// messages whose outputs and states take footprint bytes (the used part
// of batchWork.footprint):
// the mean per message of the batches prepared lately, each weighted by
// its messages (old·W + footprint) / (W + n), W = learnWindow. Weighing by
// messages keeps a small batch with many outputs (the reorder buffer
// releasing what it held, an idle partition's flush) from setting the
// charge of the large ones; a change of the input shows within a few
// large batches. Until then a batch may hold more than it was charged:
// resize takes the shortfall if it is free and otherwise exceeds the
// budget by it.
func (b *inflightBudget) learn(n int, footprint int64) {
	if n <= 0 {
		return
	}
	for {
		old := b.perMessage.Load()
		next := max((old*learnWindow+footprint)/(learnWindow+int64(n)), 1)
		if next == old || b.perMessage.CompareAndSwap(old, next) {
			return
		}
	}
}

// minBatchLimit is the least batchLimit returns: below it a batch's
// fixed costs (a state commit, a produce request) would dominate.
const minBatchLimit = 1000

// batchShares bounds a batch's footprint to 1/batchShares of the
// in-flight budget (batchLimit).
const batchShares = 6

// batchLimit is the most messages the next batch may take: most, and no
// more than make a footprint of a sixth of the budget at the footprint per
// message learned so far; at least minBatchLimit. While it is prepared a
// batch is charged its messages and decoded observations too (estimate):
// about 1.7 times its footprint where every observation publishes, so a
// batch at the bound takes under a third of the budget, and two
// partitions' batches can be prepared at once (one per core of a
// two-core pod) while others are written and committed. A live-crawl input
// (about 1,250 bytes per message) gets batches of at most about 2,200
// messages with the default budget; a history replay (about 85 bytes) is
// bounded by BatchSize and by what its fetches have returned. Larger
// batches fold more of an object's observations into one state write,
// while where every observation publishes larger batches ran slower (make
// bench's live shape: a bound of half the budget, about 6,700 messages,
// cost 5–8 % of the observations per second; with the fetch-ahead buffer
// at the whole budget, a bound of a third ran at 172,000 observations/s and
// a sixth at 190,000 with the same CPU per observation: at a third, only
// one batch at a time fitted the budget while it was prepared).
func (b *inflightBudget) batchLimit(most int) int {
	if b.sem == nil {
		return most
	}
	lim := max(b.size/batchShares/max(b.perMessage.Load(), 1), minBatchLimit)
	return int(min(lim, int64(most)))
}

// registerInflight registers the budget's gauge and wait counter.
func registerInflight(reg prometheus.Registerer, b *inflightBudget) error {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "changerate_aggregator", Name: "inflight_bytes",
			Help: "Bytes of the batches between fetch and commit, as accounted against INFLIGHT_BYTES."},
			func() float64 { return float64(b.held.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "changerate_aggregator", Name: "inflight_bytes_per_message",
			Help: "Footprint per input message (outputs and state writes) of the batches prepared lately, as the in-flight budget learned it: what a batch is charged per message besides the message and its decoded observation, and what bounds a batch to a sixth of INFLIGHT_BYTES."},
			func() float64 { return float64(b.perMessage.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "changerate_aggregator", Name: "inflight_wait_seconds_total",
			Help: "Time partition handlers waited for the in-flight budget (INFLIGHT_BYTES) before preparing a batch."},
			func() float64 { return float64(b.wait.Load()) / 1e9 }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("aggregate: register the in-flight budget's metrics: %w", err)
		}
	}
	return nil
}
