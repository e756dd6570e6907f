package parse

import (
	"strings"
	"testing"
)

// TestConfigDefaults pins the defaults the zero value means and checks
// that Validate reports every problem at once.
func TestConfigDefaults(t *testing.T) {
	want := Config{Profile: ProfileChangerate, BaseURL: DefaultBaseURL, CacheEntries: DefaultCacheEntries}
	if got := (Config{}).WithDefaults(); got != want {
		t.Errorf("Config{}.WithDefaults() = %+v; want %+v", got, want)
	}
	if got := (Config{CacheEntries: -1, Profile: ProfileWHATWG}).WithDefaults(); got.CacheEntries != -1 || got.Profile != ProfileWHATWG {
		t.Errorf("WithDefaults changed set fields: %+v", got)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	err := Config{Profile: "odd", BaseURL: "http://[::1", SquidLogformat: "%>a"}.Validate()
	for _, want := range []string{"parse: Profile", "parse: BaseURL", "parse: squid logformat"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v; want %q", err, want)
		}
	}
}
