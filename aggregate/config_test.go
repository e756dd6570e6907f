package aggregate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/stream"
)

// TestConfigZeroMeansDefault: the zero Config is valid and means the
// documented defaults; WithDefaults keeps what is set (sentinels too) and
// is idempotent.
func TestConfigZeroMeansDefault(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	d := Config{}.WithDefaults()
	want := map[string]bool{
		"BatchSize": d.BatchSize == 20000, "Emit": d.Emit == EmitUpdate, "CacheObjects": d.CacheObjects == 200000,
		"CacheBytes": d.CacheBytes == DefaultCacheBytes, "InflightBytes": d.InflightBytes == DefaultInflightBytes, "EstimatesTopic": d.EstimatesTopic == stream.TopicEstimates,
		"LateTopic": d.LateTopic == TopicLate, "ReorderWindow": d.ReorderWindow == DefaultReorderWindow,
		"IdleRelease": d.IdleRelease == 30*time.Second, "RetryBackoff": d.RetryBackoff == 200*time.Millisecond,
		"IdleCheck": d.IdleCheck == 5*time.Second, "TakeoverDelay": d.TakeoverDelay == 10*time.Second,
		"DrainTimeout": d.DrainTimeout == 10*time.Second, "OnStateLoss": d.OnStateLoss == OnStateLossStop,
		"Model.LateTolerance": d.Model.LateTolerance == time.Hour, "Model.EmitInterval": d.Model.EmitInterval == 10*time.Minute,
		"Model.PStale": d.Model.PStale == 0.1, "Alerts.MinEvents": d.Model.Alerts.MinEvents == 8,
		"Alerts.SiteObjects": d.Model.Alerts.SiteObjects == 3, "Alerts.MaxPending": d.Model.Alerts.MaxPending == 1000,
	}
	for field, ok := range want {
		if !ok {
			t.Errorf("default %s is not the documented one", field)
		}
	}
	if !reflect.DeepEqual(DefaultConfig(), d) || !reflect.DeepEqual(d.WithDefaults(), d) {
		t.Error("DefaultConfig differs from Config{}.WithDefaults(), or WithDefaults is not idempotent")
	}
	set := Config{CacheObjects: Unbounded, InflightBytes: Unbounded, IdleCheck: ZeroDuration, BatchSize: 7}
	set.Model.EmitInterval = ZeroDuration
	set.Model.Alerts.SiteObjects = ZeroCount
	got := set.WithDefaults()
	if got.CacheObjects != Unbounded || got.IdleCheck != ZeroDuration || got.BatchSize != 7 ||
		got.Model.EmitInterval != ZeroDuration || got.Model.Alerts.SiteObjects != ZeroCount {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
	eff := set.effective()
	if eff.CacheObjects != 0 || eff.InflightBytes != 0 || eff.IdleCheck != 0 || eff.Model.EmitInterval != 0 || eff.Model.Alerts.SiteObjects != 0 || eff.CacheBytes != DefaultCacheBytes {
		t.Errorf("effective: sentinels not resolved to 0: %+v", eff)
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
	final := Config{Emit: EmitFinal}
	if err := final.Validate(); err == nil || !strings.Contains(err.Error(), "CacheObjects Unbounded") || !strings.Contains(err.Error(), "CacheBytes Unbounded") {
		t.Errorf("EmitFinal with bounded caches: %v", err)
	}
	final.CacheObjects, final.CacheBytes = Unbounded, Unbounded
	if err := final.Validate(); err != nil {
		t.Errorf("EmitFinal with Unbounded caches: %v", err)
	}
}
