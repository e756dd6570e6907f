package state_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/state"
)

// TestRedisConfigDefaults pins the defaults that the zero value means; the
// key format agrees with cmd/aggregator's (buckets).
func TestRedisConfigDefaults(t *testing.T) {
	got := state.RedisConfig{}.WithDefaults()
	if got.Now == nil {
		t.Errorf("Now has no default")
	}
	got.Now = nil
	want := state.RedisConfig{
		Addrs: []string{"localhost:6379"}, KeyPrefix: "cr:", KeyFormat: state.KeyFormatBuckets, Buckets: state.DefaultBuckets,
		ExpiryEvents: state.ExpiryEventsConfig, ExpiryScope: state.ExpiryScopeOwned, ExpiryEventsRecheck: time.Minute,
		DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
	}
	if len(got.Addrs) != 1 || got.Addrs[0] != want.Addrs[0] {
		t.Errorf("Addrs = %v; want %v", got.Addrs, want.Addrs)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RedisConfig{}.WithDefaults() =\n%+v\nwant\n%+v", got, want)
	}
	// Set fields are kept.
	set := state.RedisConfig{KeyFormat: state.KeyFormatReadable, KeyPrefix: "x:", ReadTimeout: time.Second}.WithDefaults()
	if set.KeyFormat != state.KeyFormatReadable || set.KeyPrefix != "x:" || set.ReadTimeout != time.Second {
		t.Errorf("WithDefaults changed set fields: %+v", set)
	}
}

// TestRedisConfigValidateAll: Validate reports every problem at once.
func TestRedisConfigValidateAll(t *testing.T) {
	err := state.RedisConfig{DB: -1, KeyPrefix: "{", PoolSize: -1, KeyFormat: "tiny", ReadTimeout: -1, Buckets: -1}.Validate()
	if err == nil {
		t.Fatal("Validate = nil; want errors")
	}
	for _, field := range []string{"DB", "KeyPrefix", "PoolSize", "KeyFormat", "ReadTimeout", "Buckets"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("Validate = %v; does not name %s", err, field)
		}
	}
}

func TestMemoryConfig(t *testing.T) {
	if c := (state.MemoryConfig{}).WithDefaults(); c.Now == nil || c.IdleTTL != 0 {
		t.Errorf("MemoryConfig{}.WithDefaults() = %+v; want Now = time.Now, IdleTTL 0", c)
	}
	if err := (state.MemoryConfig{}).Validate(); err != nil {
		t.Errorf("zero MemoryConfig: %v", err)
	}
	err := state.MemoryConfig{IdleTTL: -time.Second}.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "state: ") || !strings.Contains(err.Error(), "IdleTTL") {
		t.Errorf("Validate = %v; want a state: error naming IdleTTL", err)
	}
}
