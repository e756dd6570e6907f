package records

import "time"

// Estimate kinds.
const (
	EstimateChange = "change"
	EstimateAccess = "access"
)

// Estimate is the value of the compacted "estimates" topic (key = object and
// kind): the current rate of the object's changes or accesses.
type Estimate struct {
	Object string    `json:"object"`
	Site   string    `json:"site,omitempty"`
	Kind   string    `json:"kind"` // EstimateChange or EstimateAccess
	AsOf   time.Time `json:"as_of"`
	// RatePerS is the best estimate, chosen by Estimator; absent when no
	// estimator is defined yet.
	RatePerS  *float64 `json:"rate_per_s,omitempty"`
	Estimator string   `json:"estimator,omitempty"`
	// CI95 is the 95% confidence interval of RatePerS, when its estimator
	// has one.
	CI95 *[2]float64 `json:"ci95,omitempty"`
	// Estimates holds every applicable estimator's rate, by key.
	Estimates map[string]float64 `json:"estimates,omitempty"`
	// Intervals holds the 95% confidence interval of every estimator that
	// has one, by key.
	Intervals    map[string][2]float64 `json:"intervals,omitempty"`
	Observations int64                 `json:"observations"`
	Changes      int64                 `json:"changes"`
	// Gone is true when the object's latest visits answered "gone" (HTTP
	// 404 or 410) and no later visit saw content: the object was deleted,
	// or never existed. A gone object has no published rate, TTL or next
	// visit; the estimators of the content seen before, if any, remain.
	Gone   bool    `json:"gone,omitempty"`
	Window *Window `json:"window,omitempty"`
	// NextVisit is the recommended next visit (change estimates).
	NextVisit *time.Time `json:"next_visit,omitempty"`
	// TTLS is the recommended cache TTL in seconds (change estimates).
	TTLS *float64 `json:"ttl_s,omitempty"`
	// PlanEvidence, PlanPrior and PlanOmega are what /v1/plan plans the
	// object on (change estimates of visited objects in a population with
	// a prior): its evidence [X, E] (changes, exposure in seconds), its
	// site's prior [α₀, β₀] (shape, rate per second) and ω (the site's
	// choice by its visits' predictive likelihood) as of the record; the
	// plan takes λ ~ Gamma(α₀ + ωX, β₀ + ωE) with the site's latest prior
	// and ω (estimators/tempered.go T1–T3). RatePerS and CI95 are not
	// affected.
	PlanEvidence *[2]float64 `json:"plan_evidence,omitempty"`
	PlanPrior    *[2]float64 `json:"plan_prior,omitempty"`
	PlanOmega    *float64    `json:"plan_omega,omitempty"`
}

// Window describes the object's current consistent window (001 §4).
type Window struct {
	State  string    `json:"state"` // "constant", "increasing", "decreasing" or "forming"
	Start  time.Time `json:"start"`
	Points int64     `json:"points"`
	// WeibullBeta and WeibullEta are the unbiased Weibull fit (001 §3.2).
	WeibullBeta *float64 `json:"weibull_beta,omitempty"`
	WeibullEta  *float64 `json:"weibull_eta_s,omitempty"`
	// DuaneSlope is the least-squares slope of the Duane plot (001 §3.3).
	DuaneSlope *float64 `json:"duane_slope,omitempty"`
	// RatePerS is the window's best rate at AsOf.
	RatePerS *float64 `json:"rate_per_s,omitempty"`
	// Model names the fit RatePerS comes from ("intuitive", "weibull", "duane").
	Model string `json:"model,omitempty"`
	// NextUpdate is the predicted next update point (001 §5).
	NextUpdate *time.Time `json:"next_update,omitempty"`
}

// AccessReport is one record of the "access-reports" topic: the object's
// access rate over one reporting period, measured directly (the count) and
// estimated from indirect data (Matloff) where snapshots were seen.
type AccessReport struct {
	Object      string    `json:"object"`
	Site        string    `json:"site,omitempty"`
	PeriodStart time.Time `json:"period_start"`
	AsOf        time.Time `json:"as_of"` // end of the reporting period
	// Accesses is the number of accesses seen in the period.
	Accesses int64 `json:"accesses"`
	// RatePerS is Accesses divided by the period length.
	RatePerS float64 `json:"rate_per_s"`
	// CI95 is the exact Poisson (Garwood) interval of RatePerS.
	CI95 [2]float64 `json:"ci95"`
	// Estimates holds the long-run direct and indirect estimators, by key.
	Estimates map[string]float64    `json:"estimates,omitempty"`
	Intervals map[string][2]float64 `json:"intervals,omitempty"`
}
