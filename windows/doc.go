// Package windows estimates localized rates of update of Web objects by
// segmenting each object's update points into consistent windows, following
// "Estimating the rate of Web page updates" (seed 001, §1.2–§5), online and in
// O(1) state per object.
//
// Update points (§1.2). A Segmenter receives either exact update times
// (Segmenter.Event: an access, or a new Last-Modified date, the last change
// before a visit; earlier unobserved changes are ignored) or
// existence-of-change visits (Segmenter.Visit: a change seen at a visit is placed
// at the middle of the visit interval). Both yield one sequence t(0) < t(1) <
// … of update points, modelled as a non-homogeneous Poisson process with
// intensity λ(t) (§2).
//
// Windows (§4, Definition 1). The sequence is cut into windows whose rate is
// constant, increasing or decreasing. A window's local time starts at the
// update point before its first point, t(0) = 0. Its state comes from the
// Crow-AMSAA trend test 2·Σ ln(t_n/t_i) ~ χ²_{2(n−1)} (Config.TrendLevel);
// windows are closed by a CUSUM discrepancy with a threshold (Config.Threshold)
// and a conditional binomial test; see Segmenter for the exact rule and Config
// for the defaults, calibrated by simulation (docs/windows-eval.md).
//
// Estimators (§3), all from O(1) running sums of the window:
//
//   - intuitive (§3.1): λ(t) = N(t)/t, MTBU(t) = t/N(t);
//   - Weibull (§3.2): β̃ = (n−2)/Σ ln(t_n/t_i) (eq. 5 with Lemma 1's (n−2)/n
//     correction), η̃ = t_n/n^{1/β̃} (eq. 4), and the unbiased intensity
//     λ̌(t) = ((n−3)n/(n−2))·β̃·t^{β̃−1}/t_n^{β̃} (eq. 3);
//   - Duane (§3.3–3.4): least-squares slope γ of log MTBU_c(t_i) = log(t_i/i)
//     on log t_i (eq. 6), MTBU_c(t) = α·t^γ, λ(t) = t^{−γ}/α.
//
// The estimators are compared by the MSE of §3.5: online, each Segmenter keeps
// the one-step-ahead form (∇(i) = MTBU(t(i−1)) − (t(i) − t(i−1)) with the fit
// of the points before t(i)) and reports the rate of the best one;
// RetrospectiveMSE computes the paper's after-the-fact form for a stored
// window. The predicted next update point is t_next = t_cur + α·MTBU(t_cur)
// with α = 0.7 for decreasing windows (§5).
//
// Seasonal baselines (seasonal.go). A Profile learns a site's daily and
// weekly cycle as a periodic non-homogeneous Poisson intensity (Matloff
// §5.5) with per-hour-of-day and per-day-of-week factors, eq. (S1)–(S2),
// and maps real time to operational time Λ(t), eq. (S3), under which the
// cycle is homogeneous. A Segmenter fed Λ(t) instead of t tests observed counts
// against the counts expected under the profile.
//
// The package is pure: no I/O, clocks or goroutines; times are float64
// seconds since the Unix epoch and rates are per second. A Segmenter is a plain
// value with a compact, lossless binary encoding (AppendBinary,
// DecodeBinary) for external state stores.
package windows
