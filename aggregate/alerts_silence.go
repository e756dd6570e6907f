package aggregate

import (
	"math"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/windows"
)

// Established rates and silences (issue 36).

// Established reports whether a rate seen as points update points over a
// span (in the stream's clock) is an established rate that a drop lasting
// gap can be alerted against: at least cfg.MinEvents points (the rate's
// relative standard error 1/√n is then ≤ 35 %, so a halving is about two
// standard errors away), over a span at least as long as the gap. The
// second condition is what a first burst of edits lacks: a rate seen for
// five hours says nothing about what is normal over eleven days, and any
// bursty process (a file edited in sessions) shows a "drop" after every
// session when its short sessions are taken as its rate.
func Established(points int64, span, gap float64, cfg *AlertConfig) bool {
	return points >= cfg.MinEvents && span >= gap && span > 0
}

// SilenceTest is the test name of a silence alert: an object whose changes
// stopped (see SilenceAlert).
const SilenceTest = "silence"

// SilenceP is the p-value of no update point in (last, now] of a window of
// points update points in (origin, last] (stream clock): under a common
// rate, given the points in (origin, now], each falls in the gap with
// probability q = (now − last)/(now − origin), so P(none) = (1 − q)^points,
// the conditional binomial test of windows.Segmenter with k = 0.
func SilenceP(points int64, origin, last, now float64) float64 {
	if points <= 0 || !(now > last) || !(last > origin) {
		return 1
	}
	return math.Pow((last-origin)/(now-origin), float64(points))
}

// SilenceAlert builds the candidate of a page that stopped changing: its
// change window w (stream clock; prof converts it to real time, nil: real
// time) had points update points over (origin, last] and none since, and
// the silence test's p-value crossed cfg.StrictPValue between the
// object's previous observation prevOp and this one at now (real) / nowOp
// (stream clock), so a silence is a candidate once. ok is false when the
// rate was not established (Established) or the p-value did not cross.
func SilenceAlert(object string, sum windows.Summary, last, prevOp, nowOp, now float64, prof opClock, cfg *AlertConfig) (records.Alert, bool) {
	origin := sum.Start
	span, gap := last-origin, nowOp-last
	if !Established(sum.Points, span, gap, cfg) {
		return records.Alert{}, false
	}
	p := SilenceP(sum.Points, origin, last, nowOp)
	if p > cfg.StrictPValue || SilenceP(sum.Points, origin, last, prevOp) <= cfg.StrictPValue {
		return records.Alert{}, false
	}
	toReal := func(l float64) float64 { return l }
	a := records.Alert{Object: object, Site: Site(object), Kind: records.EstimateChange, Test: SilenceTest, PValue: p}
	a.Scope, a.Baseline = records.AlertScopeObject, "flat"
	if prof != nil && prof.Active() {
		a.Baseline, toReal = "seasonal", prof.Real
	}
	rate := float64(sum.Points) / span // per stream second
	exp := rate * gap
	realLast := toReal(last)
	a.AsOf = timeOf(now)
	a.WindowStart, a.WindowEnd = ptr(timeOf(realLast)), ptr(timeOf(now))
	a.Expected, a.Ratio = ptr(exp), ptr(0.0)
	if d := now - realLast; d > 0 {
		a.ObservedRate, a.ExpectedRate = ptr(0.0), ptr(exp/d)
	}
	if d := realLast - toReal(origin); d > 0 {
		a.RateBefore = float64(sum.Points) / d
	}
	a.Before = *WindowRecord(sum)
	a.Before.Start, a.Before.NextUpdate, a.Before.RatePerS = timeOf(toReal(origin)), nil, ptr(a.RateBefore)
	a.After = records.Window{State: windows.Forming.String(), Start: timeOf(realLast)}
	return a, exp >= float64(cfg.MinEvents)
}
