package main

import (
	"errors"
	"fmt"
)

// validateAlerts checks the seasonal-baseline and alert options, naming
// every invalid variable (aggregate.Model.Validate checks them again by
// field name).
func (c *config) validateAlerts() error {
	var errs []error
	bad := func(name, want string, got any) {
		errs = append(errs, fmt.Errorf("config: %s must be %s, got %v", opt(name), want, got))
	}
	if c.SeasonalLearning < 0 {
		bad("SEASONAL_LEARNING", "≥ 0 (0 disables seasonal baselines)", c.SeasonalLearning)
	}
	if !(c.SeasonalMinEvents >= 0) {
		bad("SEASONAL_MIN_EVENTS", "≥ 0", c.SeasonalMinEvents)
	}
	if !(c.SeasonalDecay > 0 && c.SeasonalDecay <= 1) {
		bad("SEASONAL_DECAY", "in (0, 1]", c.SeasonalDecay)
	}
	if c.AlertPeriod.Seconds() < 1 {
		bad("ALERT_PERIOD", "at least 1s", c.AlertPeriod)
	}
	if !(c.AlertFDR > 0 && c.AlertFDR <= 1) {
		bad("ALERT_FDR", "in (0, 1]", c.AlertFDR)
	}
	if !(c.AlertMinRatio >= 1) {
		bad("ALERT_MIN_RATIO", "≥ 1", c.AlertMinRatio)
	}
	if c.AlertMinEvents < 0 {
		bad("ALERT_MIN_EVENTS", "≥ 0", c.AlertMinEvents)
	}
	if c.AlertSiteObjects < 0 {
		bad("ALERT_SITE_OBJECTS", "≥ 0 (0 disables site alerts)", c.AlertSiteObjects)
	}
	if c.AlertSiteTop < 1 {
		bad("ALERT_SITE_TOP", "at least 1", c.AlertSiteTop)
	}
	return errors.Join(errs...)
}
