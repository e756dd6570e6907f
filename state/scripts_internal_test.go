package state

import "testing"

// TestScriptSHA pins the SHA-1 of each embedded Lua script: the name
// EVALSHA runs it by. A change to a file under lua/ changes its SHA, so
// running processes and Redis's script cache see a different script; update
// the hashes here only with a deliberate change of a script.
func TestScriptSHA(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash string
		want string
	}{
		{"claim", claimScript.Hash(), "7b06f52698287a4f527e24f343a227eda13e745c"},
		{"takeover", takeoverScript.Hash(), "684639f95cd61750cbd2bdf96bf3c3faad18137d"},
		{"commit", commitScript.Hash(), "30abfd7b246590cda6cc1b5a5eef65a56bb8ef17"},
	} {
		if tc.hash != tc.want {
			t.Errorf("%s script SHA-1 = %s, want %s", tc.name, tc.hash, tc.want)
		}
	}
}
