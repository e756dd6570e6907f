package windows

import "math"

// The scan confirmation of rises (Config.ScanAlarms, issue 36).

// scanShiftRatio is the rise the scan's own CUSUM is tuned to
// (Config.ScanAlarms): under no shift its increments ln 4 − 3·e drift by
// ln 4 − 3 = −1.6 nats a point (−0.31 for 2×), so an excursion that a
// quiet stretch started is forgotten within a few points and the change
// point of a short burst is near its start.
const scanShiftRatio = 4

// lnScanShift is ln scanShiftRatio.
const lnScanShift = 1.3862943611198906

// scanExcursion is the pending excursion of the scan's CUSUM of rises of
// scanShiftRatio: its change point τ (local time, the point before the
// excursion) and its k pending points (0: none). Its discrepancy is not
// stored: it is that of the pending points against the rate of the window
// up to τ, S = k·ln 4 − 3·λ̂_τ·(x_n − τ), λ̂_τ = (n − k)/τ (the CUSUM with
// its reference frozen at τ).
type scanExcursion struct {
	tau float32
	k   uint32
}

// scanStep moves the scan's CUSUM to a new point at local time x (before
// it is added to the window) and reports whether the point is pending:
// the excursion goes on while S (with the point) stays > 0; else a new one
// starts at the window's last point when the point's own increment
// ln 4 − 3·e, e its expected count under the window's rate n/x_n, is > 0.
func (s *Segmenter) scanStep(x float64) bool {
	w := &s.w
	if e := &s.sc; e.k > 0 {
		if e.k < w.n && e.tau > 0 {
			rate := float64(w.n-e.k) / float64(e.tau)
			if float64(e.k+1)*lnScanShift-(scanShiftRatio-1)*rate*(x-float64(e.tau)) > 0 {
				return true
			}
		}
		*e = scanExcursion{}
	}
	if w.x > 0 && lnScanShift-(scanShiftRatio-1)*float64(w.n)/float64(w.x)*(x-float64(w.x)) > 0 {
		s.sc.tau = w.x
		return true
	}
	return false
}

// scanShift confirms the scan's own excursion (a CUSUM of rises of
// scanShiftRatio, which forgets a quiet past faster than the CUSUM tuned to
// ShiftRatio, so its change point is nearer a short burst's start) when
// the scan's test passes: the excursion is taken as the pending one and
// tested like it (MaxPValue, MinRatio); the CUSUM's own excursion is kept
// when it fails.
func (s *Segmenter) scanShift(t float64, cfg *Config) (Shift, bool) {
	if !(cfg.ScanAlarms > 0) || int(s.sc.k) < cfg.MinPoints || !s.scan(s.sc.tau, s.sc.k, cfg) {
		return Shift{}, false
	}
	save := *s
	// The Weibull statistics of the pending points and of the window up
	// to τ are not kept for the scan's excursion; they describe the
	// windows' shapes, not the test: A_pending is set to its expectation
	// k − 1 under a homogeneous rate (β = 1), and A_pre from
	// A = A_pre + (n−k)·ln(x_n/τ) + Σ_pending ln(x_n/x_i) with the last sum
	// taken as half its bound k·ln(x_n/τ).
	k, tau := s.sc.k, float64(s.sc.tau)
	l := math.Log(float64(s.w.x) / tau)
	apre := math.Max(0, float64(s.w.a)-(float64(s.w.n-k)+float64(k)/2)*l)
	s.dir, s.tau, s.k, s.ca, s.apre = dirUp, s.sc.tau, k, float32(k-1), float32(apre)
	if sh, ok := s.confirm(t, cfg); ok {
		return sh, true
	}
	*s = save
	return Shift{}, false
}

// secPerWeekScan is the horizon of Config.ScanAlarms, seconds.
const secPerWeekScan = 7 * 86400

// scanRatios are the rises the scan's likelihood-ratio mixture is over.
var scanRatios = [...]float64{2, 4, 8}

// lnScanRatios are their logarithms.
var lnScanRatios = [...]float64{math.Ln2, 2 * math.Ln2, 3 * math.Ln2}

// scan reports whether the excursion of k points after τ (local time) is
// confirmed by the scan (Config.ScanAlarms): ln M ≥ ln(λ̂·1 week/ScanAlarms),
// λ̂ = (n−k)/τ the rate of the window up to τ, μ = λ̂·(x_n − τ), and
// ln M = ln ⅓·Σ_ρ exp(k·ln ρ − (ρ−1)·μ) computed stably.
func (s *Segmenter) scan(tau float32, k uint32, cfg *Config) bool {
	if k >= s.w.n || !(tau > 0) {
		return false
	}
	rate := float64(s.w.n-k) / float64(tau)
	mu := rate * (float64(s.w.x) - float64(tau))
	kf := float64(k)
	if !(mu > 0) || kf <= mu {
		return false
	}
	var l [len(scanRatios)]float64
	mx := math.Inf(-1)
	for i, r := range scanRatios {
		l[i] = kf*lnScanRatios[i] - (r-1)*mu
		mx = math.Max(mx, l[i])
	}
	// ln M ≤ max_ρ ln L_ρ: most points stop here, before any exp
	thr := math.Log(rate * secPerWeekScan / cfg.ScanAlarms)
	if mx < thr {
		return false
	}
	sum := 0.0
	for _, v := range l {
		sum += math.Exp(v - mx)
	}
	lnM := mx + math.Log(sum/float64(len(scanRatios)))
	return lnM >= thr
}
