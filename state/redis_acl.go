package state

import (
	"fmt"
	"strings"
)

// RedisACLRules returns the least-privilege Redis ACL rules (Redis 6.2+,
// `ACL SETUSER name on >password <rules>`) for a store configured by cfg:
// exactly the commands the store sends — directly, from go-redis's
// connection set-up, and from inside its Lua scripts, which Redis checks
// against the same ACL — on the keys it uses, and the one Pub/Sub pattern it
// subscribes to. It grants no CONFIG: with it, set ExpiryEvents to
// "subscribe" (or "off") and configure notify-keyspace-events Ex on the
// server; and no administrative, blocking or keyspace-wide command (KEYS,
// FLUSH*; SCAN only with the bucketed layout, whose Claim scans the
// partition's tag for keys of the previous release to migrate: Snapshot
// and MemoryUsage are tools for tests and reports, not for the
// aggregator).
//
// Keys: readable keys all start with "{" + KeyPrefix, so the rule is one
// prefix pattern. Compact keys are "{tag}hash" with a 2-4 character tag
// that does not carry the prefix: the rules match every key of that shape,
// so give changerate a Redis (or DB) of its own with compact keys.
func RedisACLRules(cfg RedisConfig) string {
	cfg = cfg.WithDefaults()
	var keys []string
	if cfg.KeyFormat != KeyFormatReadable {
		keys = []string{"~{??}*", "~{???}*", "~{????}*"}
	} else {
		keys = []string{"~" + escapeGlob("{"+cfg.KeyPrefix) + "*"}
	}
	cmds := []string{
		// connection set-up (go-redis: HELLO, AUTH; CLIENT SETINFO is disabled) and health
		"+hello", "+auth", "+ping",
		// start-up checks (CheckDurability: INFO persistence, INFO memory)
		"+info",
		// reads
		"+mget", "+hmget",
		// the claim/takeover/commit scripts and what they call
		"+evalsha", "+eval", "+hset", "+set", "+mset", "+del",
		// expired-key notifications
		"+psubscribe", "+punsubscribe",
	}
	if cfg.KeyFormat == KeyFormatBuckets {
		// the bucketed commit's deletes and sweep; the migration of the
		// previous release's keys at Claim (SCAN of the partition's tag
		// on its node, GET, PTTL); the commit's transaction (WATCH of
		// the meta hash, MULTI, EXEC; UNWATCH and DISCARD from go-redis)
		cmds = append(cmds, "+hdel", "+hgetall", "+scan", "+get", "+pttl", "+watch", "+unwatch", "+multi", "+exec", "+discard")
	}
	if cfg.DB != 0 {
		cmds = append(cmds, "+select")
	}
	if cfg.Cluster {
		cmds = append(cmds, "+cluster|slots", "+cluster|shards", "+readonly")
	}
	if cfg.ExpiryEvents == ExpiryEventsConfig {
		cmds = append(cmds, "+config|get", "+config|set")
	}
	var ch string
	if cfg.ExpiryEvents == ExpiryEventsOff {
		ch = "resetchannels"
	} else {
		ch = fmt.Sprintf("resetchannels &__keyevent@%d__:expired", cfg.DB)
	}
	return "resetkeys " + strings.Join(keys, " ") + " " + ch + " -@all " + strings.Join(cmds, " ")
}
