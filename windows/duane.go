package windows

import "math"

// DuanePlot is the current window's Duane plot as far as the O(1) state
// describes it (001 §3.3–3.4): the plot is y = ln MTBU_c(t_i) = ln(t_i/i)
// against x = ln t_i for the window's points (local times t_i since the
// window origin), and the least-squares line y = ln α + γ·x. The points
// themselves are not kept; their count, mean and spread of x, the last
// point and the fitted line are.
type DuanePlot struct {
	Origin    float64 // window origin t(0), seconds since the epoch
	Points    int64   // n
	Last      float64 // t_n, seconds after Origin
	MeanLogT  float64 // X̄ = (1/n) Σ ln t_i
	SDLogT    float64 // √(Σ (X_i − X̄)²/n)
	MeanLogI  float64 // L̄ = ln n!/n; (X̄, X̄ − L̄) lies on the fitted line
	Slope     float64 // γ
	LogAlpha  float64 // ln α
	HasFit    bool    // n ≥ 3 with distinct points: Slope and LogAlpha set
	HasPoints bool    // n ≥ 1
}

// Duane returns the current window's Duane plot. It does not allocate.
func (s *Segmenter) Duane() DuanePlot {
	w := &s.w
	p := DuanePlot{Origin: w.origin, Points: int64(w.n), Last: float64(w.x), MeanLogT: float64(w.mx),
		MeanLogI: meanLogIndex(w.n), HasPoints: w.n > 0 && w.x > 0}
	if w.n > 0 && w.m2 > 0 {
		p.SDLogT = math.Sqrt(float64(w.m2) / float64(w.n))
	}
	p.Slope, p.LogAlpha, p.HasFit = w.duane()
	return p
}
