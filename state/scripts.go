package state

import (
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts of the Redis store live in lua/ and are embedded
// verbatim: a script's SHA-1 (what EVALSHA names it by) is that of the
// file's bytes, so editing a file changes the script Redis caches
// (TestScriptSHA pins them).

// Reply codes of the scripts.
const (
	codeOK       = 0
	codeFenced   = 1
	codeMismatch = 2
	codeOwner    = 3
	codeRepeat   = 4 // offset mismatch: the batch is the last one applied
	codeLayout   = 5 // bucketed commit: the stored bucket count differs
)

// claimScript: KEYS[1] meta; ARGV[1] epoch, ARGV[2] owner (compact keys:
// the partition's full name, checked against collisions; "" otherwise).
// Returns {code, stored epoch or owner, stored next}; "" for none.
//
//go:embed lua/claim.lua
var claimLua string

var claimScript = redis.NewScript(claimLua)

// takeoverScript: KEYS[1] meta; ARGV[1] epoch, ARGV[2] owner (as for
// claimScript). Sets the epoch unconditionally. Returns {code, epoch,
// stored next}.
//
//go:embed lua/takeover.lua
var takeoverLua string

var takeoverScript = redis.NewScript(takeoverLua)

// commitScript: KEYS[1] meta, KEYS[2..] objects; ARGV[1] epoch, ARGV[2]
// from, ARGV[3] to, ARGV[4] TTL in ms (0: none), ARGV[5] one byte per
// object ('s' set, 'd' delete), ARGV[6] owner (as for claimScript),
// ARGV[7..] the values of the 's' objects in order. Returns {code, stored
// epoch or owner, stored next}.
//
//go:embed lua/commit.lua
var commitLua string

var commitScript = redis.NewScript(commitLua)

// parseReply decodes a script reply {code, epoch, next}.
func parseReply(v any) (code int64, epoch, next string, err error) {
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return 0, "", "", fmt.Errorf("state: unexpected script reply %#v", v)
	}
	code, ok = a[0].(int64)
	epoch, ok2 := a[1].(string)
	next, ok3 := a[2].(string)
	if !ok || !ok2 || !ok3 {
		return 0, "", "", fmt.Errorf("state: unexpected script reply %#v", v)
	}
	return code, epoch, next, nil
}

// bclaimScript (bucketed layout): KEYS[1] meta; ARGV[1] epoch, ARGV[2]
// owner (as for claimScript), ARGV[3] the bucket count to store if none
// is, ARGV[4] "1" for a takeover (no epoch check). Returns {code, stored
// epoch or owner, next, nb, sw, l2}; "" for none.
//
//go:embed lua/bclaim.lua
var bclaimLua string

var bclaimScript = redis.NewScript(bclaimLua)

// bcommitScript (bucketed layout): KEYS[1] meta, KEYS[2..1+nw] the
// buckets written, then the buckets to sweep; ARGV[1] epoch, ARGV[2]
// from, ARGV[3] to, ARGV[4] owner, ARGV[5] the bucket count, ARGV[6] nw,
// ARGV[7] the sweep's cutoff (Unix ms; "" no sweep), ARGV[8] the sweep
// cursor after it, then per written bucket: the number of sets s and of
// deletes d, s field-value pairs, d fields. Returns {code, stored epoch,
// owner or bucket count, stored next, fields swept}.
//
//go:embed lua/bcommit.lua
var bcommitLua string

var bcommitScript = redis.NewScript(bcommitLua)

// migrateScript: KEYS[1] meta, KEYS[2..1+n] per-object keys of the
// previous release, then bucket keys; ARGV[1] epoch, ARGV[2] n, ARGV[3]
// now (Unix ms), ARGV[4] IdleTTL in ms (0: none), then per key its
// field and the index of its bucket among the bucket keys (from 1), then
// "1" to record the layout as current (meta "l2" = "next"). Returns
// {code, stored epoch, keys moved}.
//
//go:embed lua/migrate.lua
var migrateLua string

var migrateScript = redis.NewScript(migrateLua)
