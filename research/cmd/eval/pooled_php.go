package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
)

// phpProtocol says how php/doc-en pages are selected, observed and
// judged: windows are offsets from a start in years, the observed window is
// (start, start+1 y] (weekly crawler, no Last-Modified).
type phpProtocol struct {
	// sel is where a page is selected (CGM §6.3: at least 3 changes and
	// fewer than one per 3 days); tru is where its truth rate is counted.
	// A protocol is honest when sel and tru are disjoint from each other
	// and from the observed window (and from before, the dispersion's
	// year).
	sel, tru []yearWin
	// obs are the observed windows (default the year (start, start+1 y]).
	// Several windows are crawled as one: they are laid end to end from
	// start (the time between them cut out), and the weekly crawler visits
	// that virtual window.
	obs []yearWin
	// before fits the over-dispersed variant's dispersion on the year
	// before the observed one and the observed one (k_w = k); otherwise on
	// the observed year's halves.
	before bool
	// control replaces every page by a Poisson process at its truth rate
	// (a stationary php); days keeps one change per UTC day. countTruth
	// (with control) judges by the simulated count in the truth windows,
	// as on the real pages, instead of the generating rate.
	control, days, countTruth bool
	// priorAll fits a site's prior on every page of it (as the aggregator
	// does); otherwise on the selected pages only.
	priorAll bool
	// oracleLevel: pooledScore.oracleLevel (diagnostic).
	oracleLevel bool
	// histYears > 0 fits a site's prior on its selected pages' observed
	// year and the histYears years before it (each page-year one object):
	// the site's longer history, as an aggregator running for years has
	// seen it. The truth and selection windows must then avoid those years.
	histYears int
	// oneSite makes the whole manual one site per start (the aggregator's
	// grouping: one host); otherwise a site is a directory (phpSites).
	oneSite bool
	// half keeps the directories of one half of a fixed split (1: train,
	// 2: test, phpHalf); 0 keeps all.
	half int
}

type yearWin struct{ a, b float64 }

// observed is pr.obs or the default observed year.
func (pr phpProtocol) observed() []yearWin {
	if len(pr.obs) == 0 {
		return []yearWin{{0, 1}}
	}
	return pr.obs
}

// contiguousObs says whether the observed window is the one window
// (start, start+b]: the crawler then reads the real timeline.
func (pr phpProtocol) contiguousObs() bool {
	o := pr.observed()
	return len(o) == 1 && o[0].a == 0
}

// laidEnd returns the changes of ev inside the windows ws (years from
// start) with the windows laid end to end from start, and the virtual
// window's length in seconds.
func laidEnd(ev []float64, start float64, ws []yearWin) ([]float64, float64) {
	const y = 365 * 86400.0
	var out []float64
	off := 0.0
	for _, w := range ws {
		a, b := start+w.a*y, start+w.b*y
		i := sort.Search(len(ev), func(i int) bool { return ev[i] > a })
		for ; i < len(ev) && ev[i] <= b; i++ {
			out = append(out, start+off+(ev[i]-a))
		}
		off += b - a
	}
	return out, off
}

// phpInterleaved is the protocol whose observed and truth windows are
// mirror images with respect to the selection windows: 4K+1 consecutive
// blocks of unit years from start, selection on the even blocks, the
// observed windows the blocks 1, 5, 9, … and the truth windows the blocks 3,
// 7, 11, …. The reflection of the span about its centre maps block i to
// block 4K−i: selection onto selection, observed onto truth and back, so
// for a stationary, time-reversible change process (a Gaussian log-rate
// with any autocorrelation, Poisson changes given it) the selected pages'
// observed and truth windows have the same joint law with the selection
// windows: the selection lifts both equally.
func phpInterleaved(k int, unit float64) phpProtocol {
	var pr phpProtocol
	for i := 0; i <= 4*k; i++ {
		w := yearWin{float64(i) * unit, float64(i+1) * unit}
		switch i % 4 {
		case 0, 2:
			pr.sel = append(pr.sel, w)
		case 1:
			pr.obs = append(pr.obs, w)
		case 3:
			pr.tru = append(pr.tru, w)
		}
	}
	return pr
}

// phpMonths is the interleaved protocol of the pooled php/doc-en
// evaluation: months, 12 observed (one year crawled), 12 truth, 25
// selection months over 4 years and a month.
var phpMonths = phpInterleaved(12, 1.0/12)

func (w yearWin) String() string { return fmt.Sprintf("(start%+g y, start%+g y]", w.a, w.b) }

func winsString(ws []yearWin) string {
	var p []string
	for _, w := range ws {
		p = append(p, w.String())
	}
	return strings.Join(p, " ∪ ")
}

// phpHonest is the php/doc-en protocol of the pooled evaluation: the
// selection window, the truth window and the observed year are disjoint.
var phpHonest = phpProtocol{
	sel: []yearWin{{-3, -2}, {3, 4}},
	tru: []yearWin{{-2, 0}, {1, 3}},
}

// phpSelectOnTruth is the former protocol: pages selected on their truth
// count (the selection and the truth are the same window).
var phpSelectOnTruth = phpProtocol{
	sel: []yearWin{{-2, 0}, {1, 3}},
	tru: []yearWin{{-2, 0}, {1, 3}},
}

// phpObjSets crawls every page of every site at several starts (every 18
// months) under protocol pr: one object set per site and start (nil when
// it has fewer than 20 pages).
func phpObjSets(e *Env, pages map[string][]float64, cfg *estimators.Config, pr phpProtocol) [][]pooledObj {
	const day = 86400.0
	const y = 365 * day
	sites, names := phpSites(pages)
	if pr.oneSite {
		var all []string
		for _, n := range names {
			all = append(all, sites[n]...)
		}
		sites, names = map[string][]string{"php/doc-en": all}, []string{"php/doc-en"}
	}
	lo, hi := protocolSpan(pr)
	if pr.contiguousObs() {
		lo, hi = math.Min(lo, -1), math.Max(hi, 1)
	}
	count := func(ev []float64, st float64, ws []yearWin) (n int, span float64) {
		n, span = countWins(ev, st, ws)
		return n, span * y
	}
	starts := phpStarts(pr, e.Quick)
	obsSpan := pr.observed()[0].b * y
	if !pr.contiguousObs() {
		_, obsSpan = laidEnd(nil, 0, pr.observed())
	}
	type job struct {
		site  string
		start float64
		group int // index of start
	}
	var jobs []job
	for _, n := range names {
		if pr.half != 0 && phpHalf(n) != pr.half {
			continue
		}
		for si, s := range starts {
			jobs = append(jobs, job{n, s, si})
		}
	}
	out := make([][]pooledObj, len(jobs))
	parallel(len(jobs), e.Procs, func(ji int) {
		j := jobs[ji]
		var objs []pooledObj
		rng := sim.NewRand(e.Seed, 1700000+uint64(ji))
		for _, p := range sites[j.site] {
			ev := pages[p]
			if len(ev) == 0 || ev[0] > j.start+lo*y || ev[len(ev)-1] < j.start+hi*y {
				continue
			}
			if pr.days {
				ev = firstPerDay(ev)
			}
			ks, spanS := count(ev, j.start, pr.sel)
			kt, spanT := count(ev, j.start, pr.tru)
			truth := float64(kt) / spanT
			if pr.control {
				truth = math.Max(float64(kt), 0.5) / spanT
				ev = sim.Poisson{Rate: truth}.Events(rng, (hi-lo)*y, nil)
				for i := range ev {
					ev[i] += j.start + lo*y
				}
				ks, _ = count(ev, j.start, pr.sel)
				if pr.countTruth {
					kt, _ = count(ev, j.start, pr.tru)
					truth = float64(kt) / spanT
				}
			}
			vt := sim.Regular{Interval: 7 * day}.Times(nil, j.start, j.start+obsSpan, nil)
			oev := ev
			if !pr.contiguousObs() {
				oev, _ = laidEnd(ev, j.start, pr.observed())
			}
			o := observeObject(oev, vt, false, cfg)
			o.ocount, o.ospan = sim.Count(oev, j.start, j.start+obsSpan), obsSpan
			if pr.before {
				before := sim.Regular{Interval: 7 * day}.Times(nil, j.start-y, j.start, nil)
				a, aok := halfEvidence(ev, before, false, cfg)
				o.evA, o.evB, o.halvesOK = a, o.ev, aok && o.evOK
			}
			for h := 1; h <= pr.histYears; h++ {
				vh := sim.Regular{Interval: 7 * day}.Times(nil, j.start-float64(h)*y, j.start-float64(h-1)*y, nil)
				hx, ok := halfEvidence(ev, vh, false, cfg)
				if !ok {
					hx = estimators.Evidence{} // no data: PoolStats.Add skips it, the index stays the year's
				}
				o.hist = append(o.hist, hx)
			}
			if pr.histYears > 0 && pr.contiguousObs() {
				phpSpans(&o, ev, j.start, pr.histYears, cfg)
			}
			o.truth, o.f, o.group = truth, 1/(7*day), j.group
			if !pr.control || pr.countTruth {
				o.tcount, o.tspan = kt, spanT
			}
			o.scored = ks >= 3 && float64(ks)/spanS < 1/(3*day)
			objs = append(objs, o)
		}
		if len(objs) >= 20 {
			out[ji] = objs
		}
	})
	return out
}

// phpStarts are the starts of pr: every 18 months from the first whose
// windows begin after 2003-01-01, the last whose windows end before
// mid-2025 (3 in quick mode).
func phpStarts(pr phpProtocol, quick bool) []float64 {
	const day = 86400.0
	const y = 365 * day
	lo, hi := protocolSpan(pr)
	if pr.contiguousObs() {
		lo, hi = math.Min(lo, -1), math.Max(hi, 1)
	}
	var starts []float64
	for s := 1041379200.0 - lo*y; s+hi*y < 1755000000; s += 548 * day {
		starts = append(starts, s)
	}
	if quick {
		starts = starts[:min(len(starts), 3)]
	}
	return starts
}

// phpPooled crawls every page of every site at several starts (every 18
// months) under protocol pr and scores the selected pages.
func phpPooled(e *Env, pages map[string][]float64, cfg *estimators.Config, pr phpProtocol) *pooledScore {
	s := newPooledScore()
	s.priorScored, s.oracleLevel, s.histPrior = !pr.priorAll, pr.oracleLevel, pr.histYears > 0
	if pr.before {
		s.nbParts = 1
	}
	for _, objs := range phpObjSets(e, pages, cfg, pr) {
		if objs != nil {
			s.addSite(objs, cfg)
		}
	}
	return s
}

// phpSites groups php/doc-en pages into sites by their first two path
// segments (e.g. "en/reference"); names lists, sorted, the sites with at
// least 20 pages (each site's pages sorted), the ones a prior is fitted for.
func phpSites(pages map[string][]float64) (sites map[string][]string, names []string) {
	sites = map[string][]string{}
	for p := range pages {
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 3 {
			continue
		}
		k := parts[0] + "/" + parts[1]
		sites[k] = append(sites[k], p)
	}
	for k, v := range sites {
		if len(v) >= 20 {
			sort.Strings(v)
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return sites, names
}

// phpHalf is the half (1 or 2) of a fixed split of the directories: the
// parity of the FNV-1a hash of the directory's name. Choices are made on
// half 1 (train) and reported on half 2 (test).
func phpHalf(site string) int {
	h := fnv.New32a()
	h.Write([]byte(site))
	return 1 + int(h.Sum32()%2)
}
