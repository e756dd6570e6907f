package query_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
)

// TestConfigDefaults pins the defaults the zero values mean and checks that
// Validate reports every problem at once, naming the fields.
func TestConfigDefaults(t *testing.T) {
	want := query.Config{Timeout: query.DefaultTimeout, MaxRequestBytes: query.DefaultMaxRequestBytes,
		DefaultLimit: query.DefaultLimit, MaxLimit: query.DefaultMaxLimit, Profile: parse.ProfileChangerate,
		Plan: query.PlanConfig{MinRevisit: query.DefaultMinRevisit, MaxRevisit: query.DefaultMaxRevisit,
			Budget: query.DefaultPlanBudget, Period: query.DefaultPlanPeriod, MaxBudget: query.DefaultMaxBudget}}
	if got := (query.Config{}).WithDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Config{}.WithDefaults() =\n%+v\nwant\n%+v", got, want)
	}
	if got := (query.IndexConfig{}).WithDefaults(); got != (query.IndexConfig{MaxObjects: query.DefaultIndexObjects, MaxAlerts: query.DefaultIndexAlerts}) {
		t.Errorf("IndexConfig{}.WithDefaults() = %+v", got)
	}
	for _, err := range []error{(query.Config{}).Validate(), (query.IndexConfig{}).Validate(), (query.PlanConfig{}).Validate()} {
		if err != nil {
			t.Errorf("zero value: %v", err)
		}
	}
	err := query.Config{Timeout: -1, MaxRequestBytes: 10, Profile: "x", Plan: query.PlanConfig{Period: -1}}.Validate()
	for _, field := range []string{"query: Timeout", "query: MaxRequestBytes", "query: Profile", "query: Plan.Period"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate = %v; want %q", err, field)
		}
	}
	err = query.IndexConfig{MaxObjects: -1, MaxAlerts: -1}.Validate()
	for _, field := range []string{"query: Index.MaxObjects", "query: Index.MaxAlerts"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("IndexConfig.Validate = %v; want %q", err, field)
		}
	}
}
