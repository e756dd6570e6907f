package main

import (
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
)

// checkExactRelMSE is the exact √MSE/λ of λ̌ = −ln(1 − M/n) (Matloff eq. 3)
// over the runs where it exists (M < n), M ~ Bin(n, 1 − e^{−λ}), τ = 1:
// a binomial sum, no simulation.
func checkExactRelMSE(n int, lam float64) float64 {
	pmf := binomPMF(n, 1-math.Exp(-lam))
	s, w := 0.0, 0.0
	for m := 0; m < n; m++ {
		d := -math.Log(1-float64(m)/float64(n)) - lam
		s += pmf[m] * d * d
		w += pmf[m]
	}
	if w == 0 {
		return math.NaN()
	}
	return math.Sqrt(s/w) / lam
}

// hatAsymRelSE is λ̂'s asymptotic √Var/λ (eq. 15 via the project's
// estimators.MatloffLastModSE) at the expected number of non-empty periods
// m = n(1 − e^{−λ}), τ = 1.
func hatAsymRelSE(n int, lam float64) float64 {
	m := int64(math.Round(float64(n) * (1 - math.Exp(-lam))))
	return estimators.MatloffLastModSE(lam, 1, m) / lam
}

// matloffCause is the experiment behind a Matloff Fig. 1–2 difference. It
// replaces each simulated curve by its analytic counterpart: λ̌ by its exact
// binomial sum (which also checks the simulation of the project's λ̌: the
// largest deviation in standard errors is returned), λ̂ by its asymptotic
// variance (eq. 15). It returns the crossover with exact λ̌ against
// simulated λ̂, with both analytic, and λ̂'s excess of simulated over
// asymptotic √MSE at the paper's crossover.
type matloffCauseResult struct {
	maxZ                float64 // max |simulated − exact| / SE over the grid, λ̌
	crossExactSim       float64 // exact λ̌ against simulated λ̂
	crossAnalytic       float64 // exact λ̌ against asymptotic λ̂
	hatExcess, atLambda float64 // simulated/asymptotic √MSE of λ̂ − 1 at the paper's λ
}

func matloffCause(n, reps int, lams, simCheck, simHat []float64, paper float64) matloffCauseResult {
	exact := make([]float64, len(lams))
	asym := make([]float64, len(lams))
	res := matloffCauseResult{}
	for i, l := range lams {
		exact[i] = checkExactRelMSE(n, l)
		asym[i] = hatAsymRelSE(n, l)
		// SE of a simulated √MSE ≈ √MSE/√(2·reps) (normal approximation).
		if se := exact[i] / math.Sqrt(2*float64(reps)); se > 0 && !math.IsNaN(simCheck[i]) {
			res.maxZ = math.Max(res.maxZ, math.Abs(simCheck[i]-exact[i])/se)
		}
	}
	res.crossExactSim = crossover(lams, exact, simHat)
	res.crossAnalytic = crossover(lams, exact, asym)
	i := nearest(lams, paper)
	res.atLambda = lams[i]
	res.hatExcess = simHat[i]/asym[i] - 1
	return res
}

// text explains the difference from the numbers: which replacement moves the
// crossover onto the paper's value (within tol), if any.
func (c matloffCauseResult) text(paper, ours, tol float64) string {
	s := fmt.Sprintf("λ̌'s exact √MSE (binomial sum) agrees with our simulation of the project's λ̌ within %.1f SE at every λ, and with exact λ̌ the crossover stays at %.2f, "+
		"so neither λ̌'s code nor simulation noise moves it; ", c.maxZ, c.crossExactSim)
	if math.Abs(c.crossAnalytic-paper) <= tol && math.Abs(ours-paper) > tol {
		return s + fmt.Sprintf("with λ̂'s asymptotic variance (eq. 15) in place of its simulated MSE the crossover is %.2f, the paper's %.1f: λ̂'s finite-sample √MSE is %+.1f %% "+
			"above its asymptotic value at λ = %.1f, which moves the crossing to %.2f. The paper's curve behaves like λ̂'s asymptotic error (or a λ̂ with less finite-sample error than the MLE of eq. 5 solved exactly).",
			c.crossAnalytic, paper, 100*c.hatExcess, c.atLambda, ours)
	}
	if math.Abs(c.crossAnalytic-ours) <= tol && math.Abs(c.crossAnalytic-paper) > tol {
		return s + fmt.Sprintf("with λ̂'s asymptotic variance (eq. 15) as well, the crossover of the paper's two formulas, computed without any simulation, is %.2f "+
			"(λ̂'s simulated √MSE %+.1f %% from asymptotic at λ = %.1f): ours within the grid step and %.2f from the paper's \"approximately 3.0\". "+
			"The estimators' own crossing is where we find it; the paper's value is a reading of its simulated figure, not a property of the estimators or of our code.",
			c.crossAnalytic, 100*c.hatExcess, c.atLambda, math.Abs(c.crossAnalytic-paper))
	}
	return s + fmt.Sprintf("with λ̂'s asymptotic variance (eq. 15) the crossover is %.2f (λ̂'s simulated √MSE %+.1f %% from asymptotic at λ = %.1f), which does not reach the paper's %.1f either",
		c.crossAnalytic, 100*c.hatExcess, c.atLambda, paper)
}
