// Package ntoulas computes per-cycle download plans for a fixed budget over
// sites (Cho & Ntoulas, "Effective Change Detection using Sampling"):
// round-robin, change-frequency-based, proportional, greedy and adaptive
// (Algorithm 3.1 with α and k) sampling policies, subset sampling for low
// resources, the ChangeRatio and Fairness metrics, the exact expected
// ChangeRatio of the two-site example (Fig. 1) and the optimal sample size
// (Theorem 2 and the √(Nr) rule of thumb).
//
// A download cycle is modelled by a World that answers, for a page that the
// policy downloads (samples), whether it changed. Sampling a page costs one
// download and a sampled page is not downloaded again in the same cycle
// (§3.1). Policies are pure functions of the World, the Config and the
// *rand.Rand; stateful policies (RoundRobin, Frequency, Subset) keep their
// state in their own value and are not safe for concurrent use.
package ntoulas

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/changerate/changerate/plan"
)

// ErrInvalid is wrapped by every Validate error of this package.
var ErrInvalid = errors.New("ntoulas: invalid config")

// World is the state of the sources in one download cycle.
type World interface {
	// Sites returns the number of sites.
	Sites() int
	// Pages returns the number of pages of a site.
	Pages(site int) int
	// Changed reports whether the page changed (is worth downloading). A
	// policy calls it only for pages it downloads.
	Changed(site, page int) bool
}

// Config holds the policy parameters. The zero value of every field means
// its documented default (WithDefaults fills them in; the policies do so
// before they read it); Validate lists every problem at once.
type Config struct {
	// Budget is R, the number of downloads (samples included) per cycle;
	// must be >= 0. Default 0: nothing is downloaded.
	Budget int
	// SampleSize is s, the pages sampled per site by Greedy and
	// Proportional. Default 10 (§4.2).
	SampleSize int
	// K is the adaptive policy's per-iteration sample size. Default 10
	// (§4.6).
	K int
	// Alpha is the adaptive policy's confidence level in (0, 1). Default
	// 0.9 (§4.6).
	Alpha float64
}

// WithDefaults returns c with the default of every zero field filled in.
func (c Config) WithDefaults() Config {
	if c.SampleSize == 0 {
		c.SampleSize = 10
	}
	if c.K == 0 {
		c.K = 10
	}
	if c.Alpha == 0 {
		c.Alpha = 0.9
	}
	return c
}

// Validate reports every problem of c (with defaults filled in) at once;
// each error wraps ErrInvalid and names its field.
func (c Config) Validate() error {
	d := c.WithDefaults()
	var errs []error
	if d.Budget < 0 {
		errs = append(errs, fmt.Errorf("%w: Budget %d < 0", ErrInvalid, d.Budget))
	}
	if d.SampleSize < 0 {
		errs = append(errs, fmt.Errorf("%w: SampleSize %d < 0", ErrInvalid, d.SampleSize))
	}
	if d.K < 0 {
		errs = append(errs, fmt.Errorf("%w: K %d < 0", ErrInvalid, d.K))
	}
	if !(d.Alpha > 0 && d.Alpha < 1) {
		errs = append(errs, fmt.Errorf("%w: Alpha %v must be in (0,1)", ErrInvalid, d.Alpha))
	}
	return errors.Join(errs...)
}

// Download is one page fetched in a cycle.
type Download struct {
	Site, Page int
	// Sample is true when the page was fetched as a sample.
	Sample bool
	// Changed is the World's answer for the page.
	Changed bool
}

// Result is a cycle's outcome.
type Result struct {
	// Downloads lists every page fetched, samples included, at most once.
	Downloads []Download
	// Changed counts the downloads that had changed.
	Changed int
	// Sampled counts the downloads that were samples.
	Sampled int
}

// ChangeRatio is downloaded-and-changed over downloaded (§2.2), 0 when
// nothing was downloaded.
func (r *Result) ChangeRatio() float64 {
	if len(r.Downloads) == 0 {
		return 0
	}
	return float64(r.Changed) / float64(len(r.Downloads))
}

// cycle tracks one cycle's downloads: per site a lazily shuffled order of
// its pages, so that "the next random page" is a partial Fisher–Yates step.
type cycle struct {
	w      World
	rng    *rand.Rand
	budget int
	perm   map[int][]int
	used   []int // pages taken per site
	res    Result
}

func newCycle(w World, budget int, rng *rand.Rand) *cycle {
	return &cycle{w: w, rng: rng, budget: budget, perm: map[int][]int{}, used: make([]int, w.Sites())}
}

func (c *cycle) remaining(site int) int { return c.w.Pages(site) - c.used[site] }

// take fetches the next random unfetched page of site; false when the site
// or the budget is exhausted.
func (c *cycle) take(site int, sample bool) (changed, ok bool) {
	if c.budget <= 0 || c.remaining(site) <= 0 {
		return false, false
	}
	p, ok := c.perm[site]
	if !ok {
		n := c.w.Pages(site)
		p = make([]int, n)
		for i := range p {
			p[i] = i
		}
		c.perm[site] = p
	}
	u := c.used[site]
	j := u + c.rng.IntN(len(p)-u)
	p[u], p[j] = p[j], p[u]
	page := p[u]
	c.used[site]++
	c.budget--
	changed = c.w.Changed(site, page)
	c.res.Downloads = append(c.res.Downloads, Download{Site: site, Page: page, Sample: sample, Changed: changed})
	if changed {
		c.res.Changed++
	}
	if sample {
		c.res.Sampled++
	}
	return changed, true
}

// takeN fetches up to n pages of site (not samples); returns how many.
func (c *cycle) takeN(site, n int) int {
	got := 0
	for got < n {
		if _, ok := c.take(site, false); !ok {
			break
		}
		got++
	}
	return got
}

// sampleAll samples s pages from every site in random order until the
// budget runs out; returns per-site sample counts and changed counts.
func (c *cycle) sampleAll(s int) (n, x []int) {
	m := c.w.Sites()
	n, x = make([]int, m), make([]int, m)
	order := c.rng.Perm(m)
	for _, i := range order {
		for k := 0; k < s; k++ {
			ch, ok := c.take(i, true)
			if !ok {
				break
			}
			n[i]++
			if ch {
				x[i]++
			}
		}
	}
	return n, x
}

func frac(x, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(x) / float64(n)
}

// Greedy samples SampleSize pages from each site, then downloads all
// remaining pages of the site with the highest fraction of changed samples,
// then the next, until the budget is spent (§3.2). Ties are broken at random.
func Greedy(w World, cfg Config, rng *rand.Rand) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.WithDefaults()
	c := newCycle(w, cfg.Budget, rng)
	n, x := c.sampleAll(cfg.SampleSize)
	order := rng.Perm(w.Sites())
	sort.SliceStable(order, func(a, b int) bool { return frac(x[order[a]], n[order[a]]) > frac(x[order[b]], n[order[b]]) })
	for _, i := range order {
		if c.budget == 0 {
			break
		}
		c.takeN(i, c.remaining(i))
	}
	return c.res, nil
}

// Proportional samples SampleSize pages from each site and allocates the
// remaining budget to sites in proportion to their changed-sample counts
// (§3.2; Example 2), capped by the pages left in each site, with the excess
// re-allocated. When no sample changed, the rest is allocated in proportion
// to the pages left.
func Proportional(w World, cfg Config, rng *rand.Rand) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.WithDefaults()
	c := newCycle(w, cfg.Budget, rng)
	_, x := c.sampleAll(cfg.SampleSize)
	m := w.Sites()
	weight := make([]float64, m)
	sum := 0.0
	for i := range weight {
		weight[i] = float64(x[i])
		sum += weight[i]
	}
	if sum == 0 {
		for i := range weight {
			weight[i] = float64(c.remaining(i))
		}
	}
	alloc := plan.Apportion(c.budget, weight, func(i int) int { return c.remaining(i) })
	for i, a := range alloc {
		c.takeN(i, a)
	}
	return c.res, nil
}

// Wilson returns the Wilson score interval of a binomial proportion with
// x successes in n trials at two-sided confidence level conf; (0, 1) when
// n = 0.
func Wilson(x, n int, conf float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	z := normQuantile(0.5 + conf/2)
	p := float64(x) / float64(n)
	nn := float64(n)
	d := 1 + z*z/nn
	centre := (p + z*z/(2*nn)) / d
	half := z / d * math.Sqrt(p*(1-p)/nn+z*z/(4*nn*nn))
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// normQuantile is the standard normal quantile (Acklam's rational
// approximation refined by one Newton step; |error| < 1e-12).
func normQuantile(p float64) float64 {
	if p <= 0 {
		return math.Inf(-1)
	}
	if p >= 1 {
		return math.Inf(1)
	}
	// Newton on Φ(z) = p starting from a good initial guess.
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	for i := 0; i < 2; i++ {
		e := 0.5*math.Erfc(-z/math.Sqrt2) - p
		z -= e * math.Sqrt(2*math.Pi) * math.Exp(z*z/2)
	}
	return z
}

// Adaptive is Algorithm 3.1: while budget remains, sample K more pages from
// every undecided site, estimate ρ_i = X_i/n_i with its 100·Alpha% Wilson
// interval (l_i, h_i), compute the threshold ρ_t as the estimate of the
// undecided site at which the remaining budget would run out when sites are
// taken in decreasing order of estimate, drop sites with h_i < ρ_t and
// download all remaining pages of sites with ρ_t < l_i. When every site is
// decided or exhausted and budget remains, it is spent greedily on the
// sites in decreasing order of estimate.
func Adaptive(w World, cfg Config, rng *rand.Rand) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.WithDefaults()
	c := newCycle(w, cfg.Budget, rng)
	m := w.Sites()
	n, x := make([]int, m), make([]int, m)
	undecided := rng.Perm(m)
	est := func(i int) float64 { return frac(x[i], n[i]) }
	for c.budget > 0 && len(undecided) > 0 {
		// [3]-[6] sample k pages from each undecided site.
		for _, i := range undecided {
			for k := 0; k < cfg.K; k++ {
				ch, ok := c.take(i, true)
				if !ok {
					break
				}
				n[i]++
				if ch {
					x[i]++
				}
			}
		}
		// drop exhausted sites
		keep := undecided[:0]
		for _, i := range undecided {
			if c.remaining(i) > 0 {
				keep = append(keep, i)
			}
		}
		undecided = keep
		if c.budget == 0 || len(undecided) == 0 {
			break
		}
		// [7] threshold from the distribution of estimates.
		sorted := append([]int(nil), undecided...)
		sort.SliceStable(sorted, func(a, b int) bool { return est(sorted[a]) > est(sorted[b]) })
		rhoT := -1.0 // budget covers every undecided site
		acc := 0
		for _, i := range sorted {
			acc += c.remaining(i)
			if acc >= c.budget {
				rhoT = est(i)
				break
			}
		}
		if rhoT < 0 {
			for _, i := range sorted {
				c.takeN(i, c.remaining(i))
			}
			break
		}
		// [8]-[10]
		keep = undecided[:0]
		var download []int
		for _, i := range undecided {
			lo, hi := Wilson(x[i], n[i], cfg.Alpha)
			switch {
			case hi < rhoT:
				// discard
			case rhoT < lo:
				download = append(download, i)
			default:
				keep = append(keep, i)
			}
		}
		undecided = keep
		sort.SliceStable(download, func(a, b int) bool { return est(download[a]) > est(download[b]) })
		for _, i := range download {
			c.takeN(i, c.remaining(i))
		}
	}
	if c.budget > 0 {
		order := rng.Perm(m)
		sort.SliceStable(order, func(a, b int) bool { return est(order[a]) > est(order[b]) })
		for _, i := range order {
			if c.budget == 0 {
				break
			}
			c.takeN(i, c.remaining(i))
		}
	}
	return c.res, nil
}

// Oracle downloads changed pages first (it knows them all), then unchanged
// ones: the upper bound of §4.4. It calls Changed for every page.
func Oracle(w World, budget int) Result {
	var res Result
	var rest []Download
	for i := 0; i < w.Sites(); i++ {
		for p := 0; p < w.Pages(i); p++ {
			if w.Changed(i, p) {
				if len(res.Downloads) < budget {
					res.Downloads = append(res.Downloads, Download{Site: i, Page: p, Changed: true})
					res.Changed++
				}
			} else if len(rest) < budget {
				rest = append(rest, Download{Site: i, Page: p})
			}
		}
	}
	for _, d := range rest {
		if len(res.Downloads) >= budget {
			break
		}
		res.Downloads = append(res.Downloads, d)
	}
	return res
}
