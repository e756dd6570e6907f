package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNotDurable is returned (wrapped) by CheckDurability when a Redis
// master is configured to lose state silently.
var ErrNotDurable = errors.New("state: Redis is not configured to keep the state")

// CheckDurability checks the settings the store relies on, on every master
// (the one of standalone and Sentinel, each of a Cluster), through INFO:
//
//   - maxmemory-policy noeviction: with any other policy a full Redis evicts
//     object states or partition offsets, which are then silently lost (an
//     object starts afresh, a partition replays from its start); with
//     noeviction a full Redis refuses writes, the commits fail and are
//     retried, and the changerate_state_redis_errors_total alert fires;
//   - AOF persistence (appendonly yes): a restarted Redis otherwise comes
//     back empty or at its last RDB snapshot, minutes behind the committed
//     offsets.
//
// It returns nil or an error wrapping ErrNotDurable that names every
// problem and address. INFO is the only command it needs (the least-
// privilege ACL of RedisACLRules grants it; CONFIG is not needed).
func (r *Redis) CheckDurability(ctx context.Context) error {
	nodes, err := r.masters(ctx)
	if err != nil {
		return fmt.Errorf("state: list masters: %w", err)
	}
	var problems []string
	for _, n := range nodes {
		addr := n.Options().Addr
		txt, err := n.Info(ctx, "persistence", "memory").Result()
		if err != nil {
			return fmt.Errorf("state: INFO on %s: %w", addr, err)
		}
		info := parseInfo(txt)
		if p := info["maxmemory_policy"]; p != "noeviction" {
			problems = append(problems, fmt.Sprintf("%s: maxmemory-policy is %q, want noeviction (a full Redis would evict states)", addr, p))
		}
		if info["aof_enabled"] != "1" {
			problems = append(problems, fmt.Sprintf("%s: appendonly is off, want appendonly yes (a restart would lose committed state)", addr))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrNotDurable, strings.Join(problems, "; "))
	}
	return nil
}

// parseInfo reads the "field:value" lines of an INFO reply.
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// Ping checks that every master answers (PING), for readiness probes.
func (r *Redis) Ping(ctx context.Context) error {
	nodes, err := r.masters(ctx)
	if err != nil {
		return fmt.Errorf("state: list masters: %w", err)
	}
	for _, n := range nodes {
		if err := n.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("state: ping %s: %w", n.Options().Addr, err)
		}
	}
	return nil
}
