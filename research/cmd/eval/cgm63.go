package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/sim"
)

// cgm63 replicates CGM §6.3 on php/doc-en: daily change history over a
// 4-month monitoring period, pages that changed less than once in three
// days and at least 3 times, projected frequency X/T from the daily
// history, a simulated weekly crawler on the same history; the paper's
// statistics are the share of pages where cgm_improved is closer to the
// projected frequency than naive (83 %) and the mean bias (≈ 15 % against
// more than 35 %).
func cgm63(e *Env, pages map[string][]float64, names []string) {
	r := e.R
	const day = 86400.0
	const period = 126 // days: February 17 to June 24, 1999
	cfg := newEstConfig()
	r.H(3, "CGM §6.3 replicated: daily history, weekly crawler")
	// Monitoring periods: consecutive 126-day periods from 2001 (after the
	// CVS import years) to the end of the history.
	first, last := 978307200.0, 0.0 // 2001-01-01
	for _, ev := range pages {
		if n := len(ev); n > 0 && ev[n-1] > last {
			last = ev[n-1]
		}
	}
	type res struct {
		imp, nai, proj float64
	}
	var real, pois []res
	rng := sim.NewRand(e.Seed, 630)
	for start := first; start+period*day <= last; start += period * day {
		for _, p := range names {
			days := changeDays(pages[p], start, period)
			x := countTrue(days)
			if x < 3 || float64(x)/period >= 1.0/3 {
				continue
			}
			proj := float64(x) / (period * day)
			imp, nai := weeklyCrawl(days, start, cfg)
			real = append(real, res{imp, nai, proj})
			// Poisson control: the same page as a Poisson process with its
			// projected frequency, through the same selection and crawler.
			for {
				ev := sim.Poisson{Rate: proj}.Events(rng, period*day, nil)
				for i := range ev {
					ev[i] += start
				}
				sd := changeDays(ev, start, period)
				sx := countTrue(sd)
				if sx < 3 || float64(sx)/period >= 1.0/3 {
					continue // the paper's selection applies to the control too
				}
				si, sn := weeklyCrawl(sd, start, cfg)
				pois = append(pois, res{si, sn, float64(sx) / (period * day)})
				break
			}
		}
		if e.Quick && len(real) > 3000 {
			break
		}
	}
	type summary struct {
		closer, biasImp, biasNai float64
		exact                    float64 // share where naive equals the projected frequency
		n                        int
		byReg                    [len4]float64
		nReg                     [len4]int
	}
	sum := func(rs []res) summary {
		var s summary
		var bi, bn moments
		var closer [len4]float64
		for _, x := range rs {
			ei, en := math.Abs(math.Log(x.imp/x.proj)), math.Abs(math.Log(x.nai/x.proj))
			c := 0.0
			switch {
			case ei < en:
				c = 1
			case ei == en:
				c = 0.5
			}
			s.closer += c
			if math.Abs(x.nai/x.proj-1) < 1e-9 {
				s.exact++
			}
			bi.add(x.imp/x.proj - 1)
			bn.add(x.nai/x.proj - 1)
			g := regimeOf(x.proj*7*day, nil)[0]
			closer[g] += c
			s.nReg[g]++
		}
		s.n = len(rs)
		s.closer /= float64(max(1, s.n))
		s.exact /= float64(max(1, s.n))
		s.biasImp, s.biasNai = bi.mean(), bn.mean()
		for g := range closer {
			s.byReg[g] = closer[g] / float64(max(1, s.nReg[g]))
		}
		return s
	}
	sr, sp := sum(real), sum(pois)
	var rows [][]string
	for _, x := range []struct {
		name string
		s    summary
	}{{"php/doc-en (real history)", sr}, {"Poisson control (same projected rates, same selection)", sp}} {
		row := []string{x.name, fmt.Sprint(x.s.n), pct(x.s.closer), pct(x.s.biasImp), pct(x.s.biasNai)}
		for g := 0; g < len4; g++ {
			row = append(row, fmt.Sprintf("%s (%d)", pct(x.s.byReg[g]), x.s.nReg[g]))
		}
		rows = append(rows, row)
	}
	hdr := []string{"data", "pages × periods", "cgm_improved closer than naive", "mean bias cgm_improved", "mean bias naive"}
	for g := 0; g < len4; g++ {
		hdr = append(hdr, "closer, "+regimes[g].name)
	}
	r.P("The paper's selection on its own daily history: for each 126-day period (the paper's February 17 – June 24) from 2001 on, the days with at least one " +
		"change form the daily history; pages with fewer than one change per 3 days and at least 3 changes are kept, and their projected frequency is " +
		"X/T from that history. A crawler visits once a week on the same history (18 visit intervals), and the project's `naive` and `cgm_improved` estimate " +
		"the rate. The Poisson control replaces each selected page by a Poisson process with its projected frequency and applies the same selection and crawler: " +
		"the difference between the two rows is what the real pages' change pattern (not the regime, which both rows share) does to the estimators. " +
		"Regimes by r = projected frequency × 7 days (cases in parentheses).")
	r.Table(hdr, rows)
	se := 2 * math.Sqrt(0.83*0.17/float64(max(1, sr.n)))
	r.Verdict("CGM §6.3 (real data)", "cgm_improved closer to the projected frequency than naive on 83 % of pages; mean bias ≈ 15 % against more than 35 % for naive",
		fmt.Sprintf("closer on %s of %d page-periods; mean bias %s against %s", pct(sr.closer), sr.n, pct(sr.biasImp), pct(sr.biasNai)),
		[]check{
			near("share where cgm_improved is closer", sr.closer, 0.83, 0.005+se, "the paper's rounding ± 2·SE (binomial)"),
			near("|mean bias| of cgm_improved", math.Abs(sr.biasImp), 0.15, 0.05, "\"about 15 %\": ± 5 points"),
			atLeast("|mean bias| of naive", math.Abs(sr.biasNai), 0.35, "\"more than 35 %\""),
		},
		fmt.Sprintf("the regime: %d of the %d selected php page-periods have r = λ/f < 0.3 (CGM's pages changed far more often), and there `naive` equals the "+
			"projected frequency exactly whenever no two change days fall in one crawler week (%s of all page-periods: the paper's truth is the same data's X/T), "+
			"so `cgm_improved`, which corrects upwards, cannot be closer; in 0.3 ≤ r < 1 it is closer on %s of %d page-periods, the paper's 83 %%. "+
			"The Poisson control (same rates, selection, crawler) shows the same regime dependence (%s overall, %s at 0.3 ≤ r < 1), so it is not a property of php's change pattern.",
			sr.nReg[0], sr.n, pct(sr.exact), pct(sr.byReg[1]), sr.nReg[1], pct(sp.closer), pct(sp.byReg[1])))
}

const len4 = 4 // the four disjoint regimes of r

// changeDays marks the days of [start, start+period days) with a change.
func changeDays(ev []float64, start float64, period int) []bool {
	const day = 86400.0
	d := make([]bool, period)
	for _, t := range ev {
		if t < start || t >= start+float64(period)*day {
			continue
		}
		d[int((t-start)/day)] = true
	}
	return d
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// weeklyCrawl visits the daily history at days 0, 7, 14, ...: a visit sees
// a change when a day of the past week changed. It returns the project's
// cgm_improved and naive estimates (per second).
func weeklyCrawl(days []bool, start float64, cfg *estimators.Config) (imp, nai float64) {
	const day = 86400.0
	var c estimators.Change
	c.Visit(estimators.Visit{Time: start})
	for k := 7; k <= len(days); k += 7 {
		ch := false
		for d := k - 7; d < k; d++ {
			ch = ch || days[d]
		}
		c.Visit(estimators.Visit{Time: start + float64(k)*day, Changed: ch})
	}
	var out estimators.Estimates
	c.Estimate(start+float64(len(days)/7*7)*day, cfg, &out)
	i, _ := out.Get(estimators.KeyCGMImproved)
	n, _ := out.Get(estimators.KeyNaive)
	return i.Rate, n.Rate
}
