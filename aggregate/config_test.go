package aggregate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/stream"
)

// TestConfigDefaults: DefaultConfig is valid and holds the documented
// defaults; a 0 where 0 is a setting (no bound, no wait, off) is kept by
// WithDefaults, a 0 where it is not (BatchSize, RetryBackoff) becomes the
// default; WithDefaults is idempotent.
func TestConfigDefaults(t *testing.T) {
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	want := map[string]bool{
		"BatchSize": d.BatchSize == 20000, "Emit": d.Emit == EmitUpdate, "CacheObjects": d.CacheObjects == 200000,
		"CacheBytes": d.CacheBytes == DefaultCacheBytes, "InflightBytes": d.InflightBytes == DefaultInflightBytes, "EstimatesTopic": d.EstimatesTopic == stream.TopicEstimates,
		"LateTopic": d.LateTopic == TopicLate, "ReorderWindow": d.ReorderWindow == DefaultReorderWindow,
		"IdleRelease": d.IdleRelease == 30*time.Second, "RetryBackoff": d.RetryBackoff == 200*time.Millisecond,
		"IdleCheck": d.IdleCheck == 5*time.Second, "TakeoverDelay": d.TakeoverDelay == 10*time.Second,
		"MaxFuture":    d.MaxFuture == DefaultMaxFuture,
		"DrainTimeout": d.DrainTimeout == 10*time.Second, "OnStateLoss": d.OnStateLoss == OnStateLossStop,
		"Model.LateTolerance": d.Model.LateTolerance == time.Hour, "Model.EmitInterval": d.Model.EmitInterval == 10*time.Minute,
		"Model.PStale": d.Model.PStale == 0.1, "Alerts.MinEvents": d.Model.Alerts.MinEvents == 8,
		"Alerts.SiteObjects": d.Model.Alerts.SiteObjects == 3, "Alerts.MaxPending": d.Model.Alerts.MaxPending == 1000,
		"Seasonal.LearningPeriod": d.Model.Seasonal.LearningPeriod == 7*24*time.Hour, "Seasonal.MinEvents": d.Model.Seasonal.MinEvents == 200,
	}
	for field, ok := range want {
		if !ok {
			t.Errorf("default %s is not the documented one", field)
		}
	}
	if !reflect.DeepEqual(d.WithDefaults(), d) {
		t.Error("WithDefaults is not idempotent on DefaultConfig")
	}
	set := d
	set.CacheObjects, set.InflightBytes, set.IdleCheck, set.MaxFuture, set.BatchSize, set.RetryBackoff = 0, 0, 0, 0, 0, 0
	set.Model.EmitInterval, set.Model.Alerts.SiteObjects, set.Model.Seasonal.LearningPeriod = 0, 0, 0
	got := set.WithDefaults()
	if got.CacheObjects != 0 || got.InflightBytes != 0 || got.IdleCheck != 0 || got.MaxFuture != 0 ||
		got.Model.EmitInterval != 0 || got.Model.Alerts.SiteObjects != 0 || got.Model.Seasonal.LearningPeriod != 0 {
		t.Errorf("WithDefaults replaced a meaningful 0: %+v", got)
	}
	if got.BatchSize != 20000 || got.RetryBackoff != 200*time.Millisecond {
		t.Errorf("WithDefaults kept an invalid 0: BatchSize %d, RetryBackoff %s", got.BatchSize, got.RetryBackoff)
	}
	if err := set.Validate(); err != nil {
		t.Errorf("0 settings: %v", err)
	}
}

// TestConfigValidateListsEveryProblem: Validate reports every invalid
// field at once, each named.
func TestConfigValidateListsEveryProblem(t *testing.T) {
	c := Config{BatchSize: -1, Emit: "sometimes", CacheObjects: -2, InflightBytes: -2, IdleCheck: -2 * time.Second, RetryBackoff: -time.Second}
	c.Model.PStale = 2
	c.Model.Alerts.FDR = 3
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid Config accepted")
	}
	for _, field := range []string{"BatchSize", "Emit", "CacheObjects", "InflightBytes", "IdleCheck", "RetryBackoff", "PStale", "Alerts.FDR"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate does not name %s: %v", field, err)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Errorf("Validate's error is not a joined list: %T", err)
	}
	final := DefaultConfig()
	final.Emit = EmitFinal
	if err := final.Validate(); err == nil || !strings.Contains(err.Error(), "CacheObjects 0 (no bound)") || !strings.Contains(err.Error(), "CacheBytes 0 (no bound)") {
		t.Errorf("EmitFinal with bounded caches: %v", err)
	}
	final.CacheObjects, final.CacheBytes = 0, 0
	if err := final.Validate(); err != nil {
		t.Errorf("EmitFinal with unbounded caches: %v", err)
	}
}
