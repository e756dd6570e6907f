package ntoulas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// RoundRobin downloads pages in a fixed global order (site by site, page by
// page), continuing where the previous cycle stopped (§2.1 policy 1).
type RoundRobin struct {
	site, page int
}

// Cycle downloads the next budget pages of w in round-robin order.
func (r *RoundRobin) Cycle(w World, budget int) Result {
	var res Result
	total := 0
	for i := 0; i < w.Sites(); i++ {
		total += w.Pages(i)
	}
	if total == 0 {
		return res
	}
	if budget > total {
		budget = total
	}
	for len(res.Downloads) < budget {
		if r.site >= w.Sites() {
			r.site, r.page = 0, 0
		}
		if r.page >= w.Pages(r.site) {
			r.site++
			r.page = 0
			continue
		}
		ch := w.Changed(r.site, r.page)
		res.Downloads = append(res.Downloads, Download{Site: r.site, Page: r.page, Changed: ch})
		if ch {
			res.Changed++
		}
		r.page++
	}
	return res
}

// Frequency is the change-frequency-based policy (§2.1 policy 2, [Cho &
// Garcia-Molina]): it keeps per-page history (visits, detected changes, last
// visit cycle), visits never-visited pages first in round-robin order and
// then the pages with the highest estimated probability of having changed
// since their last visit, 1 − exp(−λ̂·Δ), with λ̂ per cycle from the CGM
// improved estimator −log((n−X+0.5)/(n+0.5))/Ī over the page's visits.
// The first visit of a page only establishes a baseline and is counted as
// unchanged in the history.
type Frequency struct {
	pages  [][]pageHist
	cursor RoundRobin
	cycle  int
}

type pageHist struct {
	seen      bool
	last      int     // cycle of the last visit
	n, x      int     // intervals observed, changed intervals
	totalSpan float64 // sum of observed intervals (cycles)
}

// Cycle plans and performs one cycle of budget downloads.
func (f *Frequency) Cycle(w World, budget int) Result {
	f.cycle++
	if f.pages == nil {
		f.pages = make([][]pageHist, w.Sites())
		for i := range f.pages {
			f.pages[i] = make([]pageHist, w.Pages(i))
		}
	}
	var res Result
	visit := func(i, p int) {
		ch := w.Changed(i, p)
		h := &f.pages[i][p]
		if h.seen {
			h.n++
			h.totalSpan += float64(f.cycle - h.last)
			if ch {
				h.x++
			}
		}
		h.seen = true
		h.last = f.cycle
		res.Downloads = append(res.Downloads, Download{Site: i, Page: p, Changed: ch})
		if ch {
			res.Changed++
		}
	}
	// unvisited pages first, round-robin
	type cand struct {
		i, p int
		pr   float64
	}
	var cands []cand
	unseen := 0
	for i := range f.pages {
		for p := range f.pages[i] {
			h := f.pages[i][p]
			if !h.seen {
				unseen++
				continue
			}
			pr := 1.0
			if h.n > 0 {
				r := -math.Log((float64(h.n-h.x) + 0.5) / (float64(h.n) + 0.5))
				lambda := r / (h.totalSpan / float64(h.n))
				pr = 1 - math.Exp(-lambda*float64(f.cycle-h.last))
			}
			cands = append(cands, cand{i, p, pr})
		}
	}
	for unseen > 0 && len(res.Downloads) < budget {
		r := &f.cursor
		if r.site >= len(f.pages) {
			r.site, r.page = 0, 0
		}
		if r.page >= len(f.pages[r.site]) {
			r.site++
			r.page = 0
			continue
		}
		if !f.pages[r.site][r.page].seen {
			visit(r.site, r.page)
			unseen--
		}
		r.page++
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].pr > cands[b].pr })
	for _, c := range cands {
		if len(res.Downloads) >= budget {
			break
		}
		visit(c.i, c.p)
	}
	return res
}

// Policy is a one-cycle sampling policy (Greedy, Proportional, Adaptive).
type Policy func(World, Config, *rand.Rand) (Result, error)

// Subset is subset sampling under low resources (§3.5): the sites are
// split into consecutive groups of about GroupPages pages; each cycle runs
// the policy on the next group only, round-robin over groups.
type Subset struct {
	// GroupPages is the target number of pages per group; must be > 0.
	GroupPages int
	groups     [][]int
	next       int
}

type subWorld struct {
	w     World
	sites []int
}

func (s subWorld) Sites() int               { return len(s.sites) }
func (s subWorld) Pages(i int) int          { return s.w.Pages(s.sites[i]) }
func (s subWorld) Changed(i, page int) bool { return s.w.Changed(s.sites[i], page) }

// Cycle runs policy on the next group of sites of w.
func (s *Subset) Cycle(w World, cfg Config, policy Policy, rng *rand.Rand) (Result, error) {
	if s.GroupPages <= 0 {
		return Result{}, fmt.Errorf("%w: Subset.GroupPages %d must be > 0", ErrInvalid, s.GroupPages)
	}
	if s.groups == nil {
		var g []int
		acc := 0
		for _, i := range rng.Perm(w.Sites()) {
			g = append(g, i)
			acc += w.Pages(i)
			if acc >= s.GroupPages {
				s.groups = append(s.groups, g)
				g, acc = nil, 0
			}
		}
		if len(g) > 0 {
			s.groups = append(s.groups, g)
		}
	}
	if len(s.groups) == 0 {
		return Result{}, nil
	}
	g := s.groups[s.next%len(s.groups)]
	s.next++
	res, err := policy(subWorld{w, g}, cfg, rng)
	if err != nil {
		return res, err
	}
	for k := range res.Downloads {
		res.Downloads[k].Site = g[res.Downloads[k].Site]
	}
	return res, nil
}

// Fairness tracks Fairness(i) of §4.7: pages changed and visited up to
// cycle i over pages changed up to cycle i ("changed" = at least once).
type Fairness struct {
	changed, visited map[[2]int]bool
}

// Observe records the cycle's changed pages (every page that changed in the
// cycle, visited or not) and its downloads.
func (f *Fairness) Observe(changed [][2]int, res Result) {
	if f.changed == nil {
		f.changed, f.visited = map[[2]int]bool{}, map[[2]int]bool{}
	}
	for _, k := range changed {
		f.changed[k] = true
	}
	for _, d := range res.Downloads {
		f.visited[[2]int{d.Site, d.Page}] = true
	}
}

// Value returns the current Fairness (1 when nothing changed yet).
func (f *Fairness) Value() float64 {
	if len(f.changed) == 0 {
		return 1
	}
	n := 0
	for k := range f.changed {
		if f.visited[k] {
			n++
		}
	}
	return float64(n) / float64(len(f.changed))
}
