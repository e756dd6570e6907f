package e2e

import (
	"container/heap"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/changerate/changerate/records"
)

// The fault scenarios' workload arrives out of event-time order (issue
// 11): every observation is delayed by up to 40 minutes (within the
// aggregator's allowed lateness of 1h, so the partitions' reorder buffers
// put it back in order across batches) and one in 400 by 2 to 5 hours
// (applied on arrival or, if its object has moved on by more than 1h,
// written to the late topic). The oracle models the reorder buffer.

// disorder reorders w into arrival order.
func disorder(w *workload, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	type arr struct {
		at  int64
		idx int
	}
	arrs := make([]arr, len(w.Obs))
	for i := range w.Obs {
		d := r.Int64N(int64(40 * time.Minute))
		if r.IntN(400) == 0 {
			d = int64(2*time.Hour) + r.Int64N(int64(3*time.Hour))
		}
		arrs[i] = arr{w.Obs[i].Time.UnixNano() + d, i}
	}
	sort.SliceStable(arrs, func(i, j int) bool { return arrs[i].at < arrs[j].at })
	obs := make([]records.Observation, len(w.Obs))
	vals := make([][]byte, len(w.Obs))
	for k, a := range arrs {
		obs[k], vals[k] = w.Obs[a.idx], w.Values[a.idx]
	}
	w.Obs, w.Values = obs, vals
}

// heldObs is an observation in the oracle's model of a reorder buffer.
type heldObs struct{ t, off int64 }

type heldHeap []heldObs

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].off < h[j].off
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(heldObs)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// reorderModel is the oracle's independent model of a partition's reorder
// buffer (aggregate/reorder.go): the order in which the observations at
// offsets below next reach their objects, and the committed position.
type reorderModel struct {
	order      []int // indices into place, in application order
	latest, wm int64
	earliest   int64
	seen       bool
}

func modelReorder(times []int64, offs []int64, next int64, tol time.Duration) reorderModel {
	var m reorderModel
	var h heldHeap
	idxOf := map[int64]int{}
	tolMs := tol.Milliseconds()
	for i, t := range times {
		if offs[i] >= next {
			break
		}
		idxOf[offs[i]] = i
		if m.seen && t < m.latest-tolMs {
			m.order = append(m.order, i) // behind the watermark: at once
		} else {
			heap.Push(&h, heldObs{t, offs[i]})
			if !m.seen || t > m.latest {
				m.latest, m.seen = t, true
			}
		}
		for len(h) > 0 && h[0].t < m.latest-tolMs {
			x := heap.Pop(&h).(heldObs)
			m.order = append(m.order, idxOf[x.off])
		}
	}
	m.wm = m.latest - tolMs
	m.earliest = next
	for _, x := range h {
		m.earliest = min(m.earliest, x.off)
	}
	return m
}
