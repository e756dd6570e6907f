package estimators

import (
	"errors"
	"math"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"Level", func(c *Config) { c.Level = 1 }},
		{"MinIntervals", func(c *Config) { c.MinIntervals = 0 }},
		{"RegularCV", func(c *Config) { c.RegularCV = math.NaN() }},
		{"MinLastModFraction", func(c *Config) { c.MinLastModFraction = 2 }},
		{"BetaAlpha", func(c *Config) { c.BetaAlpha = 0 }},
		{"BetaBeta", func(c *Config) { c.BetaBeta = math.Inf(1) }},
		{"Classes", func(c *Config) { c.Classes = nil }},
		{"Classes[1]", func(c *Config) { c.Classes = []float64{1, -1} }},
		{"Schedule", func(c *Config) { c.Schedule = "x" }},
		{"CGMRatio", func(c *Config) { c.CGMRatio = 0 }},
		{"LMMaxChanges", func(c *Config) { c.LMMaxChanges = 0 }},
		{"LMTargetInterval", func(c *Config) { c.LMTargetInterval = -1 }},
		{"LMMaxRatio", func(c *Config) { c.LMMaxRatio = 0 }},
		{"NoLMMaxChanges", func(c *Config) { c.NoLMMaxChanges = 0 }},
		{"NoLMSoftMaxInterval", func(c *Config) { c.NoLMSoftMaxInterval = 0 }},
		{"NoLMMaxRatio", func(c *Config) { c.NoLMMaxRatio = 0 }},
		{"MinInterval", func(c *Config) { c.MinInterval = 0 }},
		{"MaxInterval", func(c *Config) { c.MaxInterval = 1 }},
		{"InitialInterval", func(c *Config) { c.InitialInterval = 0 }},
		{"StaleProbability", func(c *Config) { c.StaleProbability = 0 }},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", c.name, err)
		}
	}
	cfg := DefaultConfig()
	near(t, "z(0.95)", cfg.z(), 1.959963984540054, 1e-12)
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
