package records

import "time"

// Alert is one record of the "alerts" topic: a rate shift of one object.
type Alert struct {
	Object string    `json:"object"`
	Site   string    `json:"site,omitempty"`
	Kind   string    `json:"kind"` // EstimateChange or EstimateAccess
	AsOf   time.Time `json:"as_of"`
	// RateBefore and RateAfter are the rates of the closed window and of the
	// new one, per second.
	RateBefore float64 `json:"rate_before_per_s"`
	RateAfter  float64 `json:"rate_after_per_s"`
	// Before and After are the two windows.
	Before Window `json:"window_before"`
	After  Window `json:"window_after"`
	// PValue is the probability, under "no shift", of a discrepancy at least
	// this large; Test names the test that gave it.
	PValue float64 `json:"p_value"`
	Test   string  `json:"test"`
	AlertDetail
}

// Alert scopes.
const (
	// AlertScopeObject: one object's rate shifted.
	AlertScopeObject = "object"
	// AlertScopeSite: several objects of one site shifted in the same
	// testing period; one alert lists them (TopObjects).
	AlertScopeSite = "site"
)

// Alert severities, from the effect size and the adjusted p-value (see
// aggregate.AlertConfig).
const (
	SeverityCritical = "critical"
	SeverityMajor    = "major"
	SeverityMinor    = "minor"
)

// AlertDetail is what makes an alert actionable: expected and
// observed counts and rates over the window since the change point, the
// baseline they were computed under, the p-value adjusted for the number of
// objects tested in the period, and a severity. It is embedded in Alert;
// every field is optional, and a consumer must accept an alert without
// them.
type AlertDetail struct {
	// Scope is AlertScopeObject or AlertScopeSite.
	Scope string `json:"scope,omitempty"`
	// WindowStart is the estimated change point and WindowEnd the update
	// point that confirmed the shift: Observed points fell in
	// (WindowStart, WindowEnd], Expected were expected under the baseline.
	WindowStart *time.Time `json:"window_start,omitempty"`
	WindowEnd   *time.Time `json:"window_end,omitempty"`
	Observed    int64      `json:"observed,omitempty"`
	Expected    *float64   `json:"expected,omitempty"`
	// ObservedRate and ExpectedRate are Observed and Expected over the
	// window's length (per second); Ratio = Observed/Expected.
	ObservedRate *float64 `json:"observed_rate_per_s,omitempty"`
	ExpectedRate *float64 `json:"expected_rate_per_s,omitempty"`
	Ratio        *float64 `json:"ratio,omitempty"`
	// Baseline is "seasonal" (expected counts under the site's learned
	// daily and weekly profile) or "flat" (a homogeneous rate).
	Baseline string `json:"baseline,omitempty"`
	// PAdjusted is the p-value adjusted for the Tested objects of the
	// testing period by Adjustment ("benjamini-hochberg": the smallest
	// false-discovery rate at which the alert is a discovery).
	PAdjusted  *float64 `json:"p_value_adjusted,omitempty"`
	Adjustment string   `json:"adjustment,omitempty"`
	Tested     int64    `json:"tested,omitempty"`
	// PeriodStart is the start of the testing period.
	PeriodStart *time.Time `json:"period_start,omitempty"`
	Severity    string     `json:"severity,omitempty"`
	// ObjectsShifted and TopObjects (site alerts): how many objects of
	// the site shifted in the period, and the most significant ones.
	ObjectsShifted int           `json:"objects_shifted,omitempty"`
	TopObjects     []AlertObject `json:"top_objects,omitempty"`
}

// AlertObject is one object listed in a site alert.
type AlertObject struct {
	Object       string     `json:"object"`
	Test         string     `json:"test"`
	Ratio        *float64   `json:"ratio,omitempty"`
	ObservedRate *float64   `json:"observed_rate_per_s,omitempty"`
	ExpectedRate *float64   `json:"expected_rate_per_s,omitempty"`
	PAdjusted    float64    `json:"p_value_adjusted"`
	WindowStart  *time.Time `json:"window_start,omitempty"`
}
