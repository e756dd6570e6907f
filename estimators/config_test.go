package estimators

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"Level", func(c *Config) { c.Level = 1 }},
		{"MinIntervals", func(c *Config) { c.MinIntervals = -1 }},
		{"RegularCV", func(c *Config) { c.RegularCV = math.NaN() }},
		{"MinLastModFraction", func(c *Config) { c.MinLastModFraction = 2 }},
		{"BetaAlpha", func(c *Config) { c.BetaAlpha = -1 }},
		{"BetaBeta", func(c *Config) { c.BetaBeta = math.Inf(1) }},
		{"Classes", func(c *Config) { c.Classes = make([]float64, MaxClasses+1) }},
		{"Classes[1]", func(c *Config) { c.Classes = []float64{1, -1} }},
		{"Schedule", func(c *Config) { c.Schedule = "x" }},
		{"CGMRatio", func(c *Config) { c.CGMRatio = -1 }},
		{"LMMaxChanges", func(c *Config) { c.LMMaxChanges = -1 }},
		{"LMTargetInterval", func(c *Config) { c.LMTargetInterval = -1 }},
		{"LMMaxRatio", func(c *Config) { c.LMMaxRatio = -1 }},
		{"NoLMMaxChanges", func(c *Config) { c.NoLMMaxChanges = -1 }},
		{"NoLMSoftMaxInterval", func(c *Config) { c.NoLMSoftMaxInterval = -1 }},
		{"NoLMMaxRatio", func(c *Config) { c.NoLMMaxRatio = -1 }},
		{"MinInterval", func(c *Config) { c.MinInterval = -1 }},
		{"MaxInterval", func(c *Config) { c.MaxInterval = 1 }},
		{"InitialInterval", func(c *Config) { c.InitialInterval = -1 }},
		{"StaleProbability", func(c *Config) { c.StaleProbability = 1 }},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: err = %v, want ErrConfig naming the field", c.name, err)
		}
	}
	cfg := DefaultConfig()
	near(t, "z(0.95)", cfg.z(), 1.959963984540054, 1e-12)
}

// TestConfigDefaults pins the defaults the zero value means and checks
// that Validate reports every problem at once.
func TestConfigDefaults(t *testing.T) {
	want := Config{
		Level:               0.95,
		MinIntervals:        2,
		RegularCV:           0.2,
		MinLastModFraction:  0.5,
		BetaAlpha:           1,
		BetaBeta:            1,
		Classes:             []float64{1.0 / 3600, 1.0 / 86400, 1.0 / 604800, 1.0 / 2592000},
		Schedule:            ScheduleMalcolm,
		CGMRatio:            1.5,
		LMMaxChanges:        100,
		LMTargetInterval:    86400,
		LMMaxRatio:          5,
		NoLMMaxChanges:      100,
		NoLMSoftMaxInterval: 172800,
		NoLMMaxRatio:        3,
		MinInterval:         600,
		MaxInterval:         2592000,
		InitialInterval:     86400,
		StaleProbability:    0.1,
		EventPriorExposure:  43200,
	}
	if got := (Config{}).WithDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Config{}.WithDefaults() =\n%+v\nwant\n%+v", got, want)
	}
	if got := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig() =\n%+v\nwant\n%+v", got, want)
	}
	var zero Config
	if err := zero.Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	set := Config{Level: 0.9, MinLastModFraction: AnyLastMod, StopAtMaxChanges: true}.WithDefaults()
	if set.Level != 0.9 || set.MinLastModFraction != AnyLastMod || !set.StopAtMaxChanges || set.MinIntervals != 2 {
		t.Errorf("WithDefaults changed set fields: %+v", set)
	}
	if err := set.Validate(); err != nil {
		t.Errorf("AnyLastMod: %v", err)
	}
	bad := Config{Level: 2, MinIntervals: -1, Schedule: "x"}
	err := bad.Validate()
	for _, field := range []string{"Level", "MinIntervals", "Schedule"} {
		if !strings.Contains(err.Error(), "estimators: invalid config: "+field) {
			t.Errorf("Validate = %v; want an error naming %s", err, field)
		}
	}
}

func TestEstimatesList(t *testing.T) {
	var e Estimates
	for i := 0; i < MaxEstimates+3; i++ {
		e.add(Estimate{Key: KeyNaive, Rate: float64(i)})
	}
	if e.Len() != MaxEstimates {
		t.Errorf("len %d", e.Len())
	}
	if x, ok := e.Get(KeyNaive); !ok || x.Rate != 0 {
		t.Errorf("get %+v", x)
	}
	e.Reset()
	if _, ok := e.Get(KeyNaive); ok || e.Len() != 0 {
		t.Error("reset")
	}
	defer func() {
		if recover() == nil {
			t.Error("At out of range: no panic")
		}
	}()
	e.At(0)
}
