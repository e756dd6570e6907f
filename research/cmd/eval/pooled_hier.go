package main

import (
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/research/pooled"
)

// Site priors over time (estimators/pooled_hier.go): can a prior that
// knows the site's history meet the pooled target on php/doc-en without
// breaking it on the simulated sites?
//
// Candidates, each with one hyper-parameter, the decay w of the site's
// history (the observed period weighted 1, the period h back w^h):
//
//   - hist: the gamma prior fitted on the decayed history;
//   - drift: hist's prior inflated by the site's period-to-period variance
//     of log level (eq. H1–H2);
//   - three: hist's prior with its mean shrunk towards the level of all
//     sites of the same periods (eq. H3);
//   - persistent: a page's rate in one period is its lasting rate θ times
//     a burst multiplier of the period (the gamma-Poisson layer of
//     estimators/pooled_nb.go): the site prior is one of lasting rates,
//     its spread the cross-covariance of consecutive periods of the same
//     pages, the bursts' dispersion their excess variance, its mean hist's
//     (or three's: persistent + three-level mean).
//
// w is chosen on a training split (php/doc-en: the directories of one half
// of a hash split, phpHalf; simulated: sites of another random stream) and
// every candidate is reported on the other half (test), under the
// protocol with room for the history before the observed year (hierPHP).

type hierKind int

const (
	hierHist hierKind = iota
	hierDrift
	hierThree
	hierPersistent
	hierPersistentThree
	// hierPersistentCC is persistent with the former spread (the site's
	// own cross-covariance of consecutive periods): not a candidate, the
	// comparison of the fix.
	hierPersistentCC
)

var hierKinds = []struct {
	kind hierKind
	name string
}{{hierHist, "hist (decayed history)"}, {hierDrift, "drift (history + level variance)"}, {hierThree, "three-level (history + shrink to all sites)"},
	{hierPersistent, "persistent (lasting rates + bursts per period)"},
	{hierPersistentThree, "persistent + three-level mean"}}

// hierDecays is the grid of the decay w chosen on the training split.
var hierDecays = []float64{0, 0.25, 0.5, 0.75, 1}

// hierYears is the number of earlier periods the history holds.
const hierYears = 3

// hierPHP is the php/doc-en protocol of the history candidates: phpHonest's
// design (selection, truth and observed windows disjoint) with the truth
// and selection before the observed year moved 3 years earlier, so that
// the hierYears years before the observed one are neither truth nor
// selection. (Under phpHonest itself those years are the truth's and the
// selection's: a history prior would read the truth.)
var hierPHP = phpProtocol{sel: []yearWin{{-6, -5}, {3, 4}}, tru: []yearWin{{-5, -3}, {1, 3}}, histYears: hierYears}

// sitePrior is one site's candidate prior with what the three-level
// candidate needs: the log level, its variance and the site's group.
type sitePrior struct {
	prior estimators.GammaPrior
	ok    bool
	level float64 // log of the decayed mean rate
	v     float64 // its variance (Poisson noise + the periods' deviations)
	group int
}

// hierSitePrior fits the candidate prior (kind, decay w) of one site from
// its prior population (the scored objects with evidence): period 0 is
// the observed window, period h the objects' hist[h−1].
func hierSitePrior(objs []pooledObj, kind hierKind, w float64) sitePrior {
	var periods [hierYears + 1]estimators.PoolStats
	var decayed estimators.PoolStats
	group := 0
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		group = o.group
		periods[0].Add(o.ev, 1)
		decayed.Add(o.ev, 1)
		for h, ev := range o.hist {
			if h >= hierYears {
				break
			}
			periods[h+1].Add(ev, 1)
			if wh := math.Pow(w, float64(h+1)); wh > 0 {
				decayed.Add(ev, wh)
			}
		}
	}
	p, ok := decayed.Prior()
	sp := sitePrior{prior: p, ok: ok, group: group}
	if !ok {
		return sp
	}
	var drift pooled.LevelDrift
	for h := hierYears; h >= 0; h-- {
		drift.AddPeriod(periods[h])
	}
	tau2, _ := drift.Var()
	if kind == hierDrift {
		sp.prior = pooled.WithLevelVar(p, tau2)
	}
	// The decayed level's variance: the periods' independent deviations
	// around the site's long-run level (variance τ²/2 each, so that two
	// consecutive periods differ by τ²) and the Poisson noise.
	var sw, sw2, swx, sw2x float64
	for h := 0; h <= hierYears; h++ {
		if !(periods[h].E > 0) {
			continue
		}
		wh := math.Pow(w, float64(h))
		sw += wh
		sw2 += wh * wh
		swx += wh * periods[h].X
		sw2x += wh * wh * periods[h].X
	}
	sp.level = math.Log(pooled.Mean(p))
	sp.v = tau2 / 2 * sw2 / (sw * sw)
	if swx > 0 {
		sp.v += sw2x / (swx * swx)
	}
	return sp
}

// hierPriors fits the candidate prior of every site; for three, each
// site's mean is shrunk towards its group's level (eq. H3, groupLevels).
func hierPriors(sets [][]pooledObj, kind hierKind, w float64) map[*pooledObj]sitePrior {
	out := map[*pooledObj]sitePrior{}
	var fitted []sitePrior
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		sp := hierSitePrior(objs, kind, w)
		out[&objs[0]] = sp
		fitted = append(fitted, sp)
	}
	if kind != hierThree {
		return out
	}
	groups := groupLevels(fitted)
	for k, sp := range out {
		if g, ok := groups[sp.group]; ok && sp.ok {
			sp.prior = g.shrink(sp.prior, sp.level, sp.v)
			out[k] = sp
		}
	}
	return out
}

// groupLevel is eq. H3's population of one group (calendar): the level
// of all its sites lg and the spread of their long-run levels ω².
type groupLevel struct{ lg, omega2 float64 }

// groupLevels fits each group's eq. H3 population by moments over the
// sites with a prior: lg the mean of their levels ℓ_s, ω² = var(ℓ_s) −
// mean(v_s) (clipped at 0). Groups with fewer than 2 such sites are
// absent (their sites keep their own level).
func groupLevels(sps []sitePrior) map[int]groupLevel {
	type acc struct{ n, s, s2, v float64 }
	accs := map[int]*acc{}
	for _, sp := range sps {
		if !sp.ok {
			continue
		}
		a := accs[sp.group]
		if a == nil {
			a = &acc{}
			accs[sp.group] = a
		}
		a.n++
		a.s += sp.level
		a.s2 += sp.level * sp.level
		a.v += sp.v
	}
	out := map[int]groupLevel{}
	for g, a := range accs {
		if a.n < 2 {
			continue
		}
		lg := a.s / a.n
		out[g] = groupLevel{lg, math.Max(0, (a.s2-a.n*lg*lg)/(a.n-1)-a.v/a.n)}
	}
	return out
}

// shrink is p with its mean moved to eq. H3's posterior level of a site
// whose level is level with variance v.
func (g groupLevel) shrink(p estimators.GammaPrior, level, v float64) estimators.GammaPrior {
	return pooled.WithMean(p, math.Exp(pooled.ShrinkLevel(level, v, g.lg, g.omega2)))
}

// periodPairs are the moments of consecutive periods of the same objects
// of the site's prior population (pooled.DispersionStats over the
// pairs (period h+1, period h)).
func periodPairs(objs []pooledObj) pooled.DispersionStats {
	var ds pooled.DispersionStats
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		prev := o.ev
		for h, ev := range o.hist {
			if h >= hierYears {
				break
			}
			if ev.E > 0 && prev.E > 0 {
				ds.Add(ev, prev)
			}
			prev = ev
		}
	}
	return ds
}

// inPrior says whether the object feeds its site's candidate prior: the
// scored objects with evidence, or every object with evidence when
// priorAll is set (allPages).
func (o *pooledObj) inPrior() bool { return o.evOK && (o.scored || o.priorAll) }

// allPages is a copy of sets whose every object with evidence feeds the
// candidate priors (as an aggregator sees a site: all its pages), the
// scored objects unchanged.
func allPages(sets [][]pooledObj) [][]pooledObj {
	out := make([][]pooledObj, len(sets))
	for i, objs := range sets {
		if objs == nil {
			continue
		}
		out[i] = append([]pooledObj(nil), objs...)
		for j := range out[i] {
			out[i][j].priorAll = true
		}
	}
	return out
}

// siteGroup is the group (calendar) of the site's prior population.
func siteGroup(objs []pooledObj) int {
	for _, o := range objs {
		if o.inPrior() {
			return o.group
		}
	}
	return 0
}

// persistentPrior is the persistent candidate's site prior: the lasting
// rates' gamma from the whole periods' moments of the decayed history
// (hist with w) net of the bursts (eq. H4, GammaPrior.Lasting) with the
// dispersion k per period pooled over the group's sites (eq. H5), its mean
// moved to mean when mean > 0 (three-level). ok is false when the site
// has no consecutive periods' moments (the same sites as before the fix).
func persistentPrior(objs []pooledObj, w, mean, k float64) (pooled.NBPrior, bool) {
	if _, ok := periodPairs(objs).Prior(); !ok {
		return pooled.NBPrior{}, false
	}
	sp := hierSitePrior(objs, hierHist, w)
	if !sp.ok {
		return pooled.NBPrior{}, false
	}
	g := pooled.Lasting(sp.prior, k)
	if mean > 0 {
		g = pooled.WithMean(g, mean)
	}
	return pooled.NBPrior{GammaPrior: g, K: k}, true
}

// persistentPriorCC is the former persistent prior (the comparison of
// the fix): the lasting rates' spread and the dispersion from the site's
// own cross-covariance of consecutive periods (periodPairs), the mean
// hist's (or mean when mean > 0).
func persistentPriorCC(objs []pooledObj, w, mean float64) (pooled.NBPrior, bool) {
	nb, ok := periodPairs(objs).Prior()
	if !ok {
		return nb, false
	}
	if mean > 0 {
		nb.GammaPrior = pooled.WithMean(nb.GammaPrior, mean)
	} else if sp := hierSitePrior(objs, hierHist, w); sp.ok {
		nb.GammaPrior = pooled.WithMean(nb.GammaPrior, pooled.Mean(sp.prior))
	}
	return nb, true
}

// burstPools is eq. H5's pooled dispersion of every group of the sets.
func burstPools(sets [][]pooledObj) map[int]float64 {
	pools := map[int]*pooled.BurstPool{}
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		g := siteGroup(objs)
		if pools[g] == nil {
			pools[g] = &pooled.BurstPool{}
		}
		pools[g].Add(periodPairs(objs))
	}
	out := map[int]float64{}
	for g, p := range pools {
		out[g] = p.K()
	}
	return out
}

// siteDrift is the site's LevelDrift (eq. H1) over its prior
// population's periods.
func siteDrift(objs []pooledObj) pooled.LevelDrift {
	var periods [hierYears + 1]estimators.PoolStats
	for _, o := range objs {
		if !o.inPrior() {
			continue
		}
		periods[0].Add(o.ev, 1)
		for h, ev := range o.hist {
			if h < hierYears {
				periods[h+1].Add(ev, 1)
			}
		}
	}
	var d pooled.LevelDrift
	for h := hierYears; h >= 0; h-- {
		d.AddPeriod(periods[h])
	}
	return d
}

// siteTau2 is the site's τ² (eq. H1) over its prior population's periods.
func siteTau2(objs []pooledObj) float64 {
	t, _ := siteDrift(objs).Var()
	return t
}

// groupTau2 is τ² (eq. H1) pooled over the sites of a group: their
// LevelDrift sums added (the sites of one calendar share the variance of
// their levels' steps; one site's three steps make a noisy τ̂²). The
// returned function gives a site its group's τ².
func groupTau2(sets [][]pooledObj) func([]pooledObj) float64 {
	sums := map[int]*pooled.LevelDrift{}
	for _, objs := range sets {
		if len(objs) == 0 {
			continue
		}
		d := siteDrift(objs)
		g := siteGroup(objs)
		if sums[g] == nil {
			sums[g] = &pooled.LevelDrift{}
		}
		sums[g].N += d.N
		sums[g].SS += d.SS
		sums[g].Noise += d.Noise
	}
	return func(objs []pooledObj) float64 {
		d := sums[siteGroup(objs)]
		if d == nil {
			return 0
		}
		t, _ := d.Var()
		return t
	}
}

// hierScoreDrift is hierScore with the estimate made the next period's
// rate under the site's drift (pooledScore.tau2Of): the drift in the
// prediction, not in the prior.
func hierScoreDrift(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64) *pooledScore {
	return hierScoreWith(sets, cfg, kind, w, siteTau2)
}

// hierScore scores the sets with the candidate's priors.
func hierScore(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64) *pooledScore {
	return hierScoreWith(sets, cfg, kind, w, nil)
}

func hierScoreWith(sets [][]pooledObj, cfg *estimators.Config, kind hierKind, w float64, tau2Of func([]pooledObj) float64) *pooledScore {
	s := newPooledScore()
	s.priorScored = true
	s.tau2Of = tau2Of
	if kind == hierPersistent || kind == hierPersistentThree || kind == hierPersistentCC {
		var three map[*pooledObj]sitePrior
		if kind == hierPersistentThree {
			three = hierPriors(sets, hierThree, w)
		}
		ks := burstPools(sets)
		s.nbOf = func(objs []pooledObj) (pooled.NBPrior, bool) {
			mean := 0.0
			if sp, ok := three[&objs[0]]; ok && sp.ok {
				mean = pooled.Mean(sp.prior)
			}
			if kind == hierPersistentCC {
				return persistentPriorCC(objs, w, mean)
			}
			return persistentPrior(objs, w, mean, ks[siteGroup(objs)])
		}
		for _, objs := range sets {
			if len(objs) > 0 {
				s.addSite(objs, cfg)
			}
		}
		return s
	}
	priors := hierPriors(sets, kind, w)
	s.priorOf = func(objs []pooledObj) (estimators.GammaPrior, bool) {
		sp := priors[&objs[0]]
		return sp.prior, sp.ok
	}
	for _, objs := range sets {
		if len(objs) > 0 {
			s.addSite(objs, cfg)
		}
	}
	return s
}
