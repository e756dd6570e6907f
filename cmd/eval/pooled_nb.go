package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/sim"
)

// The over-dispersed pooled variant (estimators.PooledNB) is judged by the
// same target as the Poisson one: ≥ 15 % lower median |log| than the best
// single paper estimator with fewer than 5 changes, no worse with more,
// 93–97 % coverage.

func pooledNBChecks(s *pooledScore) []check {
	k0, b0 := s.bestSingle(0)
	k1, b1 := s.bestSingle(1)
	p0, p1 := quantile(s.errs[0]["pooled_nb"], 0.5), quantile(s.errs[1]["pooled_nb"], 0.5)
	return []check{
		atMost(fmt.Sprintf("pooled_nb / best single (%s), < 5 changes", k0), p0/b0, 0.85, "the target: ≥ 15 % lower median |log|"),
		atMost(fmt.Sprintf("pooled_nb / best single (%s), ≥ 5 changes", k1), p1/b1, 1.02, "no worse: within the 2 % sampling error of a median"),
		within("coverage of the 95 % intervals, < 5 changes", s.coverageNB(0), 0.93, 0.97, "the target 93–97 %"),
		within("coverage of the 95 % intervals, ≥ 5 changes", s.coverageNB(1), 0.93, 0.97, "the target 93–97 %"),
	}
}

func pooledNBOurs(s *pooledScore) string {
	k0, b0 := s.bestSingle(0)
	p0 := quantile(s.errs[0]["pooled_nb"], 0.5)
	k1, b1 := s.bestSingle(1)
	p1 := quantile(s.errs[1]["pooled_nb"], 0.5)
	return fmt.Sprintf("< 5 changes: pooled_nb %s vs %s %s (%s lower); ≥ 5: pooled_nb %s vs %s %s; coverage %s / %s; sites' burst dispersion 1/k: median %.2f, 90th percentile %.2f",
		f3(p0), k0, f3(b0), pct(1-p0/b0), f3(p1), k1, f3(b1), pct(s.coverageNB(0)), pct(s.coverageNB(1)), quantile(s.invK, 0.5), quantile(s.invK, 0.9))
}

// phpPooledYearBefore is the php/doc-en evaluation of the over-dispersed
// prior fitted at the year scale: every page is crawled weekly over the
// year before the observed window as well, and the site's dispersion is
// fitted from the two adjacent years (estimators.DispersionStats with a =
// the year before, b = the observed year; k_w = k). The truth must then be
// disjoint from both years: (start−D−H, start−D] ∪ (start+D, start+D+H].
// The single estimators see the observed year only, as before.
func phpPooledYearBefore(e *Env, pages map[string][]float64, cfg *estimators.Config, D, H float64, days bool) *pooledScore {
	const day = 86400.0
	sites, names := phpSites(pages)
	var starts []float64
	for s := 1041379200.0 + H + D; s+D+H < 1755000000; s += 548 * day {
		starts = append(starts, s)
	}
	if e.Quick {
		starts = starts[:min(len(starts), 3)]
	}
	type job struct {
		site  string
		start float64
	}
	var jobs []job
	for _, n := range names {
		for _, s := range starts {
			jobs = append(jobs, job{n, s})
		}
	}
	out := make([][]pooledObj, len(jobs))
	parallel(len(jobs), e.Procs, func(ji int) {
		j := jobs[ji]
		var objs []pooledObj
		for _, p := range sites[j.site] {
			ev := pages[p]
			if len(ev) == 0 || ev[0] > j.start-D-H || ev[len(ev)-1] < j.start+D+H {
				continue
			}
			if days {
				ev = firstPerDay(ev)
			}
			n := sim.Count(ev, j.start-D-H, j.start-D) + sim.Count(ev, j.start+D, j.start+D+H)
			vt := sim.Regular{Interval: 7 * day}.Times(nil, j.start, j.start+D, nil)
			o := observeObject(ev, vt, false, cfg)
			before := sim.Regular{Interval: 7 * day}.Times(nil, j.start-D, j.start, nil)
			a, aok := halfEvidence(ev, before, false, cfg)
			o.evA, o.evB, o.halvesOK = a, o.ev, aok && o.evOK
			o.truth, o.scored = float64(n)/(2*H), n >= 3
			objs = append(objs, o)
		}
		if len(objs) >= 20 {
			out[ji] = objs
		}
	})
	s := newPooledScore()
	s.priorScored, s.nbParts = true, 1
	s.whole = newPooledScore()
	s.whole.priorScored, s.whole.nbParts, s.whole.nbWholePrior = true, 1, true
	for _, objs := range out {
		if objs != nil {
			s.addSite(objs, cfg)
			s.whole.addSite(objs, cfg)
		}
	}
	return s
}

// level is the scored objects' observed-window count against their truth
// rate times exposure (1 when the window is as active as the truth).
func (s *pooledScore) level() float64 { return s.sumX / s.sumTE }

// levelAll is level over every object, scored or not.
func (s *pooledScore) levelAll() float64 { return s.sumXAll / s.sumTEAll }

// pooledNBCause explains the over-dispersed variant's result on php from
// the numbers: the fitted dispersion and the observed window's level.
func pooledNBCause(yb, ctl *pooledScore) string {
	return fmt.Sprintf("not over-dispersion: fitted from the observed windows (halves, or the year before and the observed year) the sites' burst dispersion 1/k has median %.2f "+
		"and 90th percentile %.2f, so the gamma-Poisson likelihood is nearly the Poisson one; the level is what differs: the scored pages' observed-year evidence "+
		"counts %.2f of what their truth rates predict (%.2f in the stationary control, whose truth is the rate that generates its windows). Pages are scored for "+
		"activity in the truth years (≥ 3 changes); over every page of the same sites, scored or not, the level is %.2f, so %s. A prior "+
		"fitted on the observed windows (as it must be, without the truth) cannot see that shift, and moving its mean by the shift would tune on the truth.",
		quantile(yb.invK, 0.5), quantile(yb.invK, 0.9), yb.level(), ctl.level(), yb.levelAll(), levelWhy(yb.level(), yb.levelAll()))
}

// pooledNBSimCause: the experiment behind a difference of the
// over-dispersed variant on simulated sites: the same sites with the gamma
// prior of the whole windows (PoolStats) and the dispersion of the halves
// (whole). When that meets every coverage target the halves' moment σ̂²
// (their cross-covariance) is the cause.
func pooledNBSimCause(s, whole *pooledScore) string {
	for g := 0; g < 2; g++ {
		if c := whole.coverageNB(g); c < 0.93 || c > 0.97 {
			return ""
		}
	}
	return fmt.Sprintf("the prior's spread: the halves' cross-covariance σ̂² gives coverage %s / %s; the same sites with the whole windows' gamma prior "+
		"(PoolStats, as `pooled`) and the halves' dispersion give %s / %s with median errors %s / %s, so the layer of bursts is not the cause, the "+
		"noisier moment estimate of σ² is (the simulated sites have no bursts: fitted 1/k median %.2f)",
		pct(s.coverageNB(0)), pct(s.coverageNB(1)), pct(whole.coverageNB(0)), pct(whole.coverageNB(1)),
		f3(quantile(whole.errs[0]["pooled_nb"], 0.5)), f3(quantile(whole.errs[1]["pooled_nb"], 0.5)), quantile(s.invK, 0.5))
}

// levelWhy names what the two levels say: the selection on the truth years
// (all pages near 1, scored pages below) or a history less active in the
// observed years overall.
func levelWhy(scored, all float64) string {
	if math.Abs(all-1) <= 0.1 && scored < 0.9 {
		return "the shift comes from scoring pages for activity in the truth years: real changes cluster over years, so the pages selected for busy truth years have quieter observed years (regression to the mean, which the stationary control's fixed rates cannot show)"
	}
	return fmt.Sprintf("the observed years are themselves less active than the years around them (all pages %.2f, scored pages %.2f), beyond the selection", all, scored)
}

// firstPerDay keeps the first change of every UTC day: a history of change
// days, the granularity of CGM §6.3's daily snapshots (several commits in a
// day are one change to anyone who looks at most daily).
func firstPerDay(ev []float64) []float64 {
	out := make([]float64, 0, len(ev))
	last := math.Inf(-1)
	for _, t := range ev {
		if d := math.Floor(t / 86400); d != last {
			out = append(out, t)
			last = d
		}
	}
	return out
}

// atomShare is the share of xs within 5·10⁻⁴ of their median: how much of
// a median comes from one repeated value (discrete estimates against
// discrete truths).
func atomShare(xs []float64) float64 {
	m := quantile(xs, 0.5)
	if len(xs) == 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return math.NaN()
	}
	n := 0
	for _, x := range xs {
		if math.Abs(x-m) <= 5e-4 {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}
