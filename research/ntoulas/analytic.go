package ntoulas

import (
	"fmt"
	"math"
	"sort"
)

// TwoSites is the setting of Fig. 1 and Example 2: two sites of Pages pages
// each, ChangedA and ChangedB of them changed, Budget downloads per cycle.
type TwoSites struct {
	Pages, ChangedA, ChangedB, Budget int
}

// Validate checks the setting.
func (t TwoSites) Validate() error {
	if t.Pages <= 0 || t.ChangedA < 0 || t.ChangedB < 0 || t.ChangedA > t.Pages || t.ChangedB > t.Pages ||
		t.Budget < 0 || t.Budget > 2*t.Pages {
		return fmt.Errorf("%w: two-site setting %+v", ErrInvalid, t)
	}
	return nil
}

// hypergeom returns P(X = k), X the number of changed pages among s drawn
// without replacement from n pages of which c changed.
func hypergeom(n, c, s int) []float64 {
	p := make([]float64, s+1)
	lc := func(a, b int) float64 {
		if b < 0 || b > a {
			return math.Inf(-1)
		}
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	den := lc(n, s)
	for k := 0; k <= s; k++ {
		p[k] = math.Exp(lc(c, k) + lc(n-c, s-k) - den)
	}
	return p
}

// Expected returns the exact expected ChangeRatio of the round-robin,
// greedy and proportional policies with sample size s from each site
// (Fig. 1, computed analytically by summing over the hypergeometric
// sample outcomes). Round-robin downloads Budget random pages of the union.
// Greedy breaks ties at random; proportional allocates the rest ∝ changed
// samples (equally when none changed), continuous shares, capped at the
// pages left with the excess moved to the other site.
func (t TwoSites) Expected(s int) (roundRobin, greedy, proportional float64, err error) {
	if err := t.Validate(); err != nil {
		return 0, 0, 0, err
	}
	if s < 0 || 2*s > t.Budget || s > t.Pages {
		return 0, 0, 0, fmt.Errorf("%w: sample size %d for %+v", ErrInvalid, s, t)
	}
	R, N := float64(t.Budget), float64(t.Pages)
	cA, cB := float64(t.ChangedA), float64(t.ChangedB)
	roundRobin = (cA + cB) / (2 * N)
	pa, pb := hypergeom(t.Pages, t.ChangedA, s), hypergeom(t.Pages, t.ChangedB, s)
	left := N - float64(s)
	rest := R - 2*float64(s)
	var eg, ep float64
	for xa, qa := range pa {
		for xb, qb := range pb {
			q := qa * qb
			if q == 0 {
				continue
			}
			// changed fraction of the unsampled pages of each site
			fa, fb := 0.0, 0.0
			if left > 0 {
				fa = (cA - float64(xa)) / left
				fb = (cB - float64(xb)) / left
			}
			base := float64(xa + xb)
			split := func(ra float64) float64 {
				rb := rest - ra
				return base + ra*fa + rb*fb
			}
			clamp := func(ra float64) float64 {
				ra = math.Min(math.Max(ra, rest-left), left)
				return ra
			}
			// greedy
			switch {
			case xa > xb:
				eg += q * split(clamp(rest))
			case xb > xa:
				eg += q * split(clamp(0))
			default:
				eg += q * 0.5 * (split(clamp(rest)) + split(clamp(0)))
			}
			// proportional
			share := 0.5
			if xa+xb > 0 {
				share = float64(xa) / float64(xa+xb)
			}
			ep += q * split(clamp(rest*share))
		}
	}
	return roundRobin, eg / R, ep / R, nil
}

// OptimalSampleSize is Theorem 2: s ≈ √(N·r·f(ρ_t) / (6(ρ̄_r − ρ̄))) with N
// the mean pages per site, r = R / total pages, f the density of site ρ
// values at the threshold ρ_t, ρ̄_r the mean ρ above the threshold and ρ̄
// the overall mean. Returns NaN unless ρ̄_r > ρ̄ and all inputs are positive.
func OptimalSampleSize(n, r, fAtRhoT, rhoBarR, rhoBar float64) float64 {
	if !(n > 0 && r > 0 && fAtRhoT > 0 && rhoBarR > rhoBar) {
		return math.NaN()
	}
	return math.Sqrt(n * r * fAtRhoT / (6 * (rhoBarR - rhoBar)))
}

// RuleOfThumb is the √(N·r) approximation of the optimal sample size (§3.3).
func RuleOfThumb(n, r float64) float64 { return math.Sqrt(n * r) }

// RhoSummary holds the quantities of Table 1 computed from site ρ values.
type RhoSummary struct {
	RhoT, FAtRhoT, RhoBarR, RhoBar float64
}

// SummariseRhos computes ρ_t (the ρ above which lie the top 100·r% of
// sites), f(ρ_t) (a histogram density with bins of width binWidth, as in
// Fig. 2/5), ρ̄_r and ρ̄ from per-site ρ values.
func SummariseRhos(rhos []float64, r, binWidth float64) RhoSummary {
	if len(rhos) == 0 || !(r > 0 && r <= 1) || !(binWidth > 0) {
		return RhoSummary{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	s := append([]float64(nil), rhos...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	top := int(math.Ceil(r * float64(len(s))))
	if top < 1 {
		top = 1
	}
	var out RhoSummary
	out.RhoT = s[top-1]
	sum, sumTop := 0.0, 0.0
	for i, v := range s {
		sum += v
		if i < top {
			sumTop += v
		}
	}
	out.RhoBar = sum / float64(len(s))
	out.RhoBarR = sumTop / float64(top)
	lo := math.Floor(out.RhoT/binWidth) * binWidth
	in := 0
	for _, v := range s {
		if v >= lo && v < lo+binWidth || (v == 1 && lo+binWidth >= 1 && v >= lo) {
			in++
		}
	}
	out.FAtRhoT = float64(in) / float64(len(s)) / binWidth
	return out
}
