package state

import (
	"strings"
	"testing"
)

func TestParseInfo(t *testing.T) {
	// An INFO reply as redis-server 7 sends it: sections, CRLF line ends, fields with ':' in values.
	reply := "# Persistence\r\nloading:0\r\naof_enabled:1\r\nrdb_last_bgsave_status:ok\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\nexecutable:/usr/bin/redis-server\r\nweird:a:b\r\n"
	got := parseInfo(reply)
	for k, want := range map[string]string{"aof_enabled": "1", "maxmemory_policy": "noeviction", "weird": "a:b", "executable": "/usr/bin/redis-server"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if _, ok := got["# Persistence"]; ok {
		t.Error("a section header became a field")
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add("# Memory\r\nmaxmemory_policy:noeviction\r\n")
	f.Add("aof_enabled:1\n\n:\n#x:y\n")
	f.Fuzz(func(t *testing.T, s string) {
		for k, v := range parseInfo(s) {
			if strings.ContainsAny(k, "\r\n") || strings.ContainsAny(v, "\r\n") || strings.HasPrefix(k, "#") {
				t.Fatalf("field %q = %q from %q", k, v, s)
			}
		}
	})
}
