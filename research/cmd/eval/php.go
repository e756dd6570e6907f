package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/windows"
)

// bulkThreshold: commits touching at least this many files are mass edits
// (reformatting, licence, tooling), not page changes (SOURCE.txt).
const bulkThreshold = 200

// readPHP returns the true change times of every page, bulk commits removed.
func readPHP(dir string) (map[string][]float64, int, error) {
	return readChanges(filepath.Join(dir, "php-doc-en-history", "git-file-changes.tsv.gz"))
}

// readChanges reads a changes TSV (path<TAB>unix time per change, gzip or
// plain): the change times of every path, commits touching bulkThreshold
// paths or more removed, same-second duplicates merged.
func readChanges(path string) (map[string][]float64, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var zr io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, 0, err
		}
		zr = gz
	}
	type row struct {
		path string
		t    float64
	}
	var rows []row
	perCommit := map[float64]int{}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, '\t')
		if i < 0 {
			continue
		}
		t, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		rows = append(rows, row{line[:i], t})
		perCommit[t]++
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	bulk := 0
	for _, n := range perCommit {
		if n >= bulkThreshold {
			bulk++
		}
	}
	out := map[string][]float64{}
	for _, r := range rows {
		if perCommit[r.t] >= bulkThreshold {
			continue
		}
		out[r.path] = append(out[r.path], r.t)
	}
	for k, v := range out {
		sort.Float64s(v)
		// same-second duplicates are one change
		u := v[:0]
		for i, x := range v {
			if i == 0 || x != v[i-1] {
				u = append(u, x)
			}
		}
		out[k] = u
	}
	return out, bulk, nil
}

// realKeys are the estimators scored on real data; "best" is the
// package's own choice, "window" the windows/ rate of the current window.
var realKeys = []string{
	estimators.KeyNaive, estimators.KeyCGMImproved, estimators.KeyBayesBeta, estimators.KeyCGMIrregularMLE,
	estimators.KeyCGMLastMod, estimators.KeyMalcolmLastMod, estimators.KeyMalcolmNoLastMod,
	"best (LM)", "best (no LM)", "window (LM)", "window (no LM)",
}

type realScore struct {
	errs           []float64 // |log(est/true)|, +Inf for 0
	logs           []float64 // log(est/true), −Inf for 0
	ratio          moments   // est/true
	ciIn, ciN      int
	beat, tie, vsN int
	absent         int
}

func (s *realScore) merge(o *realScore) {
	s.errs = append(s.errs, o.errs...)
	s.logs = append(s.logs, o.logs...)
	s.ratio.n += o.ratio.n
	s.ratio.s += o.ratio.s
	s.ratio.s2 += o.ratio.s2
	s.ciIn += o.ciIn
	s.ciN += o.ciN
	s.beat += o.beat
	s.tie += o.tie
	s.vsN += o.vsN
	s.absent += o.absent
}

// score adds one case: x the estimate (ok false: absent), truth the true
// rate, naiveErr |log(naive/truth)| of the same case.
func (s *realScore) score(x estimators.Estimate, ok bool, truth, naiveErr float64) {
	if !ok {
		s.absent++
		return
	}
	le := math.Inf(1)
	lg := math.Inf(-1)
	if x.Rate > 0 {
		lg = math.Log(x.Rate / truth)
		le = math.Abs(lg)
	}
	s.errs = append(s.errs, le)
	s.logs = append(s.logs, lg)
	s.ratio.add(x.Rate / truth)
	if x.HasCI {
		s.ciN++
		if x.Lo <= truth && truth <= x.Hi {
			s.ciIn++
		}
	}
	s.vsN++
	switch {
	case le < naiveErr:
		s.beat++
	case le == naiveErr:
		s.tie++
	}
}

func (s *realScore) beatShare() float64 {
	return (float64(s.beat) + 0.5*float64(s.tie)) / float64(max(1, s.vsN))
}

func (s *realScore) coverage() float64 {
	if s.ciN == 0 {
		return math.NaN()
	}
	return float64(s.ciIn) / float64(s.ciN)
}

// regimes of r = λ/f: where estimators differ is r ≥ 0.5.
var regimes = []struct {
	name   string
	lo, hi float64
}{{"r < 0.3", 0, 0.3}, {"0.3 ≤ r < 1", 0.3, 1}, {"1 ≤ r < 3", 1, 3}, {"r ≥ 3", 3, math.Inf(1)}, {"r ≥ 0.5", 0.5, math.Inf(1)}}

// regimeOf lists the regimes (indices) that r belongs to.
func regimeOf(r float64, dst []int) []int {
	for i, g := range regimes {
		if r >= g.lo && r < g.hi {
			dst = append(dst, i)
		}
	}
	return dst
}

// realCase is one (page, observed window) with its truth.
type realCase struct {
	page  string
	start float64
	truth float64 // changes per second in the disjoint truth history
	r     float64 // truth / visit frequency
}

// observeAll runs one crawler over (start, start+D] of ev and returns every
// estimate by key (the paper estimators with and without Last-Modified, the
// best of each, the windows' rates).
func observeAll(ev []float64, vt []float64, start float64, cfg *estimators.Config, wcfg *windows.Config) (map[string]estimators.Estimate, *estimators.Change) {
	obs := sim.Observe(ev, vt, true, nil)
	var lm, nolm estimators.Change
	var wl, wn windows.Segmenter
	lastLM := math.Inf(-1)
	for _, v := range obs {
		lm.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed, LastModified: v.LastModified, HasLastModified: true})
		nolm.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed})
		if v.LastModified > lastLM && v.LastModified > start {
			wl.Event(v.LastModified, wcfg)
			lastLM = v.LastModified
		} else if v.First {
			wl.Event(v.Time, wcfg) // origin of the window
			lastLM = v.Time
		}
		wn.Visit(v.Time, v.Changed, wcfg)
	}
	asOf := obs[len(obs)-1].Time
	got := map[string]estimators.Estimate{}
	var out estimators.Estimates
	if b, ok := lm.Estimate(asOf, cfg, &out); ok {
		b.Key = "best (LM)"
		got[b.Key] = b
	}
	for i := 0; i < out.Len(); i++ {
		x := out.At(i)
		if x.Key == estimators.KeyCGMLastMod || x.Key == estimators.KeyMalcolmLastMod {
			got[x.Key] = x
		}
	}
	if b, ok := nolm.Estimate(asOf, cfg, &out); ok {
		b.Key = "best (no LM)"
		got[b.Key] = b
	}
	for i := 0; i < out.Len(); i++ {
		x := out.At(i)
		if _, dup := got[x.Key]; !dup {
			got[x.Key] = x
		}
	}
	if s := wl.Current(asOf, wcfg); s.HasRate {
		got["window (LM)"] = estimators.Estimate{Key: "window (LM)", Rate: s.Rate}
	}
	if s := wn.Current(asOf, wcfg); s.HasRate {
		got["window (no LM)"] = estimators.Estimate{Key: "window (no LM)", Rate: s.Rate}
	}
	return got, &nolm
}

type phpSched struct {
	name string
	s    sim.Schedule
	f    float64 // mean visit frequency, per second
}

func phpSection(e *Env) {
	r := e.R
	r.H(2, "Real change histories: php/doc-en (27 years, 21,248 pages)")
	pages, bulk, err := readPHP(e.Data)
	if err != nil {
		r.P("Skipped: %v (pass --data).", err)
		e.dataMissing = append(e.dataMissing, err.Error())
		return
	}
	e.phpPages = pages
	const day = 86400.0
	names := make([]string, 0, len(pages))
	for k := range pages {
		names = append(names, k)
	}
	sort.Strings(names)
	cgm63(e, pages, names)

	r.H(3, "Accuracy by regime of r = λ/f, truth disjoint from the observed window")
	const D = 90.0
	r.P("True change times: one change per (file, commit) from `git log`, with the %d commits that touch ≥ %d files removed (mass edits, SOURCE.txt). "+
		"A case is a page and an observed window (start, start+D], D = %.0f days, drawn uniformly among the pages whose history spans (start−2D, start+3D] "+
		"(first change before start−2D, last after start+3D). The **truth** is the page's rate in the history *before and after* the observed window, "+
		"(number of changes in (start−2D, start] and (start+D, start+3D]) / 4D, required to count at least 3 changes; nothing about the observed window's content "+
		"is used to select a case. Cases are drawn until each regime of r = truth/f (f the crawler's mean visit frequency) has its quota (or the draws run out), "+
		"so the regimes where estimators differ (r ≥ 0.5) are not swamped by quiet pages. A crawler visits from start: daily, weekly, or irregularly "+
		"(Poisson, mean 3 days), seeing changed/unchanged and, for the LM rows, the true Last-Modified. Cells: median |log(estimate/truth)| "+
		"(an estimate of 0 counts as ∞), then the 95 %% interval's coverage where the estimator has one. The truth is itself a count of ≥ 3 "+
		"over 4D, so part of every error is the truth's own noise, the same for every estimator; and because cases are sorted into regimes by that noisy truth, "+
		"the high-r regimes hold cases whose truth count came out high (regression to the mean): there every estimator of the observed window reads low.", bulk, bulkThreshold, D)
	cfg := newEstConfig()
	wcfg := windows.DefaultConfig()
	scheds := []phpSched{
		{"daily", sim.Regular{Interval: day}, 1 / day},
		{"weekly", sim.Regular{Interval: 7 * day}, 1 / (7 * day)},
		{"irregular (Poisson, mean 3 d)", sim.PoissonVisits{Rate: 1 / (3 * day)}, 1 / (3 * day)},
	}
	quota := e.reps(1500, 150)
	e.php = map[int][]map[string]*realScore{}
	for si, sc := range scheds {
		cases := drawCases(e, pages, names, D*day, sc.f, quota, uint64(700+si))
		byReg := make([]map[string]*realScore, len(regimes))
		for i := range byReg {
			byReg[i] = map[string]*realScore{}
			for _, k := range realKeys {
				byReg[i][k] = &realScore{}
			}
		}
		local := make([]map[string]*realScore, len(cases))
		parallel(len(cases), e.Procs, func(ci int) {
			cs := cases[ci]
			vrng := sim.NewRand(e.Seed, uint64(800000+si*100000+ci))
			vt := sc.s.Times(vrng, cs.start, cs.start+D*day, nil)
			got, _ := observeAll(pages[cs.page], vt, cs.start, cfg, &wcfg)
			naiveErr := math.Inf(1)
			if n, ok := got[estimators.KeyNaive]; ok && n.Rate > 0 {
				naiveErr = math.Abs(math.Log(n.Rate / cs.truth))
			}
			loc := map[string]*realScore{}
			for _, k := range realKeys {
				x, ok := got[k]
				loc[k] = &realScore{}
				loc[k].score(x, ok, cs.truth, naiveErr)
			}
			local[ci] = loc
		})
		var counts [8]int
		for ci, loc := range local {
			for _, g := range regimeOf(cases[ci].r, nil) {
				counts[g]++
				for k, s := range loc {
					byReg[g][k].merge(s)
				}
			}
		}
		e.php[si] = byReg
		r.H(4, fmt.Sprintf("%s visits, D = %.0f days", sc.name, D))
		hdr := []string{"estimator"}
		for g, rg := range regimes {
			hdr = append(hdr, fmt.Sprintf("%s (%d cases)", rg.name, counts[g]))
		}
		var rows [][]string
		for _, k := range realKeys {
			row := []string{k}
			for g := range regimes {
				s := byReg[g][k]
				cell := f3(quantile(s.errs, 0.5))
				if c := s.coverage(); !math.IsNaN(c) {
					cell += " (" + pct(c) + ")"
				}
				if s.absent > 0 {
					cell += fmt.Sprintf(" [%d absent]", s.absent)
				}
				row = append(row, cell)
			}
			rows = append(rows, row)
		}
		r.Table(hdr, rows)
	}
	if reg, ok := e.php[1]; ok {
		med := func(g int, k string) string { return f3(quantile(reg[g][k].errs, 0.5)) }
		r.P("Reading the tables (weekly crawler): at r < 0.3 most observed windows show no change, so every estimator that reads 0 then scores ∞ "+
			"and the medians are those of `bayes_beta` (%s) and the windows; at r ≥ 0.5 `naive` misses changes (median |log| %s) and `cgm_improved` (%s), "+
			"`cgm_irregular_mle` (%s) and `cgm_lastmod` (%s) pull ahead; the package's rule gives %s without and %s with Last-Modified there.",
			med(0, estimators.KeyBayesBeta), med(4, estimators.KeyNaive), med(4, estimators.KeyCGMImproved), med(4, estimators.KeyCGMIrregularMLE),
			med(4, estimators.KeyCGMLastMod), med(4, "best (no LM)"), med(4, "best (LM)"))
	}
}

// drawCases samples (page, start) uniformly among pages whose history spans
// (start−2L, start+3L] and keeps those with ≥ 3 changes in the disjoint truth
// history (start−2L, start] ∪ (start+L, start+3L], until every regime has
// quota cases or the draws run out. Nothing in (start, start+L] is read.
func drawCases(e *Env, pages map[string][]float64, names []string, L, f float64, quota int, stream uint64) []realCase {
	rng := sim.NewRand(e.Seed, stream)
	var cases []realCase
	var have [8]int
	full := func() bool {
		for g := 0; g < 4; g++ {
			if have[g] < quota {
				return false
			}
		}
		return true
	}
	var eligible []string
	for _, p := range names {
		ev := pages[p]
		if len(ev) >= 3 && ev[len(ev)-1]-ev[0] > 5*L {
			eligible = append(eligible, p)
		}
	}
	if len(eligible) == 0 {
		return nil
	}
	for tries := 0; !full() && tries < 400*quota; tries++ {
		p := eligible[rng.IntN(len(eligible))]
		ev := pages[p]
		start := ev[0] + 2*L + rng.Float64()*(ev[len(ev)-1]-ev[0]-5*L)
		n := sim.Count(ev, start-2*L, start) + sim.Count(ev, start+L, start+3*L)
		if n < 3 {
			continue
		}
		truth := float64(n) / (4 * L)
		c := realCase{page: p, start: start, truth: truth, r: truth / f}
		g := regimeOf(c.r, nil)[0]
		if have[g] >= quota {
			continue
		}
		have[g]++
		cases = append(cases, c)
	}
	return cases
}
