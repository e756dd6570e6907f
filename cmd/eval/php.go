package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/sim"
	"github.com/changerate/changerate/windows"
)

// bulkThreshold: commits touching at least this many files are mass edits
// (reformatting, licence, tooling), not page changes (SOURCE.txt).
const bulkThreshold = 200

// readPHP returns the true change times of every page, bulk commits removed.
func readPHP(dir string) (map[string][]float64, int, error) {
	f, err := os.Open(filepath.Join(dir, "php-doc-en-history", "git-file-changes.tsv.gz"))
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, 0, err
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

type realCase struct {
	page  string
	start float64
	truth float64
}

func phpSection(e *Env) {
	r := e.R
	r.H(2, "Real change histories: php/doc-en (27 years, 21,248 pages)")
	pages, bulk, err := readPHP(e.Data)
	if err != nil {
		r.P("Skipped: %v (pass --data).", err)
		return
	}
	const day = 86400.0
	names := make([]string, 0, len(pages))
	for k := range pages {
		names = append(names, k)
	}
	sort.Strings(names)
	r.P("True change times: one change per (file, commit) from `git log`, with the %d commits that touch ≥ %d files removed (mass edits, SOURCE.txt). "+
		"For each observation length D we sample (page, start) pairs uniformly among pages alive for D (start between the page's first and last change) "+
		"and keep those with at least one true change in the observed window (start, start+D] and at least 3 in the surrounding (start−D, start+2D]; "+
		"the true rate is the count in (start−D, start+2D] / 3D, the page's rate with a complete history around the window (CGM's \"projected frequency\"). "+
		"(Using the count inside the observed window itself as the truth would make `naive` under daily visits exact by construction.) A crawler visits from start: daily, weekly, or irregularly (Poisson, mean 3 days), "+
		"seeing changed/unchanged and, in the LM rows, the true Last-Modified. Score: |log(estimate/true)| (an estimate of 0 counts as ∞), "+
		"bias = mean(estimate/true) − 1, coverage of the 95 %% interval, and the share of cases where the estimator is closer to the truth than `naive` (ties count half).",
		bulk, bulkThreshold)
	cfg := newEstConfig()
	wcfg := windows.DefaultConfig()
	lengths := []float64{90, 365}
	type sched struct {
		name string
		s    sim.Schedule
	}
	scheds := []sched{{"daily", sim.Regular{Interval: day}}, {"weekly", sim.Regular{Interval: 7 * day}}, {"irregular (Poisson, mean 3 d)", sim.PoissonVisits{Rate: 1 / (3 * day)}}}
	nCases := e.reps(10000, 400)
	allScores := map[[2]int]map[string]*realScore{}
	var headline [][]string
	for di, D := range lengths {
		rng := sim.NewRand(e.Seed, 700+uint64(di))
		var cases []realCase
		for tries := 0; len(cases) < nCases && tries < 200*nCases; tries++ {
			p := names[rng.IntN(len(names))]
			ev := pages[p]
			if len(ev) < 3 || ev[len(ev)-1]-ev[0] < D*day {
				continue
			}
			start := ev[0] + rng.Float64()*(ev[len(ev)-1]-ev[0]-D*day)
			n := sim.Count(ev, start-D*day, start+2*D*day)
			if n < 3 || sim.Count(ev, start, start+D*day) < 1 {
				continue
			}
			cases = append(cases, realCase{p, start, float64(n) / (3 * D * day)})
		}
		for si, sc := range scheds {
			scores := map[string]*realScore{}
			for _, k := range realKeys {
				scores[k] = &realScore{}
			}
			chunk := make([]map[string]*realScore, len(cases))
			parallel(len(cases), e.Procs, func(ci int) {
				cs := cases[ci]
				ev := pages[cs.page]
				vrng := sim.NewRand(e.Seed, uint64(800000+di*100000+si*10000+ci))
				vt := sc.s.Times(vrng, cs.start, cs.start+D*day, nil)
				obs := sim.Observe(ev, vt, true, nil)
				var lm, nolm estimators.Change
				var wl, wn windows.Stream
				lastLM := math.Inf(-1)
				for _, v := range obs {
					lm.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed, LastModified: v.LastModified, HasLastModified: true})
					nolm.Visit(estimators.Visit{Time: v.Time, Changed: v.Changed})
					if v.LastModified > lastLM && v.LastModified > cs.start {
						wl.Event(v.LastModified, &wcfg)
						lastLM = v.LastModified
					} else if v.First {
						wl.Event(v.Time, &wcfg) // origin of the window
						lastLM = v.Time
					}
					wn.Visit(v.Time, v.Changed, &wcfg)
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
				if s := wl.Current(asOf, &wcfg); s.HasRate {
					got["window (LM)"] = estimators.Estimate{Key: "window (LM)", Rate: s.Rate}
				}
				if s := wn.Current(asOf, &wcfg); s.HasRate {
					got["window (no LM)"] = estimators.Estimate{Key: "window (no LM)", Rate: s.Rate}
				}
				loc := map[string]*realScore{}
				naiveErr := math.Inf(1)
				if n, ok := got[estimators.KeyNaive]; ok && n.Rate > 0 {
					naiveErr = math.Abs(math.Log(n.Rate / cs.truth))
				}
				for _, k := range realKeys {
					s := &realScore{}
					loc[k] = s
					x, ok := got[k]
					if !ok {
						s.absent++
						continue
					}
					le := math.Inf(1)
					if x.Rate > 0 {
						le = math.Abs(math.Log(x.Rate / cs.truth))
					}
					s.errs = append(s.errs, le)
					if x.Rate > 0 {
						s.logs = append(s.logs, math.Log(x.Rate/cs.truth))
					} else {
						s.logs = append(s.logs, math.Inf(-1))
					}
					s.ratio.add(x.Rate / cs.truth)
					if x.HasCI {
						s.ciN++
						if x.Lo <= cs.truth && cs.truth <= x.Hi {
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
				chunk[ci] = loc
			})
			for _, loc := range chunk {
				for k, s := range loc {
					t := scores[k]
					t.errs = append(t.errs, s.errs...)
					t.logs = append(t.logs, s.logs...)
					t.ratio.n += s.ratio.n
					t.ratio.s += s.ratio.s
					t.ratio.s2 += s.ratio.s2
					t.ciIn += s.ciIn
					t.ciN += s.ciN
					t.beat += s.beat
					t.tie += s.tie
					t.vsN += s.vsN
					t.absent += s.absent
				}
			}
			allScores[[2]int{di, si}] = scores
			r.H(3, fmt.Sprintf("%s visits, D = %.0f days (%d cases)", sc.name, D, len(cases)))
			var rows [][]string
			for _, k := range realKeys {
				s := scores[k]
				cov := "—"
				if s.ciN > 0 {
					cov = pct(float64(s.ciIn) / float64(s.ciN))
				}
				beat := "—"
				if s.vsN > 0 && k != estimators.KeyNaive {
					beat = pct((float64(s.beat) + 0.5*float64(s.tie)) / float64(s.vsN))
				}
				rows = append(rows, []string{k, f3(quantile(s.errs, 0.5)), f3(quantile(s.errs, 0.9)), pct(math.Exp(quantile(s.logs, 0.5)) - 1), pct(s.ratio.mean() - 1), cov, beat, fmt.Sprint(s.absent)})
			}
			r.Table([]string{"estimator", "median |log ratio|", "p90 |log ratio|", "median bias", "mean bias", "95 % CI coverage", "beats naive", "absent"}, rows)
			if D == 365 || (D == 90 && si == 1) {
				b := scores["best (LM)"]
				bn := scores["best (no LM)"]
				ci := scores[estimators.KeyCGMImproved]
				headline = append(headline, []string{fmt.Sprintf("%s, %.0f d", sc.name, D), f3(quantile(b.errs, 0.5)), f3(quantile(bn.errs, 0.5)),
					f3(quantile(scores[estimators.KeyNaive].errs, 0.5)), pct((float64(ci.beat) + 0.5*float64(ci.tie)) / float64(max(1, ci.vsN)))})
			}
		}
	}
	r.H(3, "Headline")
	r.Table([]string{"crawler", "median |log| best (LM)", "median |log| best (no LM)", "median |log| naive", "cgm_improved beats naive"}, headline)
	e.php = allScores
	var tie string
	if s, ok := allScores[[2]int{0, 1}]; ok {
		ci := s[estimators.KeyCGMImproved]
		tie = pct(float64(ci.tie) / float64(max(1, ci.vsN)))
		r.Verdict("CGM §6.3 (real data)", "cgm_improved closer than naive on 83 % of pages (daily history, weekly crawler)",
			fmt.Sprintf("weekly crawler, 90 days: %s (ties %s)", pct((float64(ci.beat)+0.5*float64(ci.tie))/float64(max(1, ci.vsN))), tie),
			"differs: different regime (r ≪ 1 here, see text)")
	}
	r.P("php/doc-en pages change rarely compared with the visit frequency (most have r = λ/f ≪ 1 under daily visits), the regime where every estimator " +
		"is nearly unbiased and `naive` and `cgm_improved` almost coincide; the differences show under weekly and irregular visits and for the estimators that use Last-Modified.")
}
