package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/state"
)

// openRedis opens the Redis store of the configuration and, unless
// REDIS_REQUIRE_DURABLE is false, refuses a Redis that would lose state
// silently (eviction, no AOF).
func openRedis(ctx context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	rc := cfg.redisConfig()
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("config: %s", redisError(err))
	}
	r, err := state.NewRedis(rc, logger, reg)
	if err != nil {
		return nil, err
	}
	if err := r.CheckDurability(ctx); err != nil {
		if cfg.RedisRequireDurable {
			r.Close()
			return nil, fmt.Errorf("%w (fix the Redis configuration, or set %s_REDIS_REQUIRE_DURABLE=false for tests and development)", err, envPrefix)
		}
		logger.Warn("Redis may lose state; continuing because REDIS_REQUIRE_DURABLE is false", "err", err)
	}
	return r, nil
}

// redisFields maps the fields that state.RedisConfig.Validate names to the
// options that set them, longest first.
var redisFields = []struct{ field, option string }{
	{"TLS: CertFile and KeyFile must be set together", opt("REDIS_TLS_CERT") + " and " + opt("REDIS_TLS_KEY") + " must be set together"},
	{"TLS: options set but TLS.Enable is false", "Redis TLS options are set but " + opt("REDIS_TLS") + " is false"},
	{"SentinelMaster:", opt("REDIS_SENTINEL_MASTER") + ":"},
	{"ExpiryEvents:", opt("REDIS_EXPIRY_EVENTS") + ":"},
	{"KeyFormat:", opt("REDIS_KEY_FORMAT") + ":"},
	{"KeyPrefix:", opt("REDIS_KEY_PREFIX") + ":"},
	{"IdleTTL:", opt("IDLE_TTL") + ":"},
	{"Addrs:", opt("REDIS_ADDRS") + ":"},
	{"DB:", opt("REDIS_DB") + ":"},
}

// redisError rewrites a Redis configuration error for the user: every
// problem on its line, named by the variable and flag that set it.
func redisError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "state: invalid Redis config: ")
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		for _, f := range redisFields {
			if strings.HasPrefix(l, f.field) {
				lines[i] = f.option + strings.TrimPrefix(l, f.field)
				break
			}
		}
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return "invalid Redis configuration:\n  " + strings.Join(lines, "\n  ")
}

// redisConfig maps the flat configuration onto state.RedisConfig.
func (c *config) redisConfig() state.RedisConfig {
	return state.RedisConfig{
		Addrs: c.RedisAddrs, Username: c.RedisUsername, Password: c.RedisPassword, DB: c.RedisDB,
		Cluster: c.RedisCluster, KeyPrefix: c.RedisPrefix, KeyFormat: c.RedisKeyFmt, IdleTTL: c.IdleTTL,
		SentinelMaster: c.RedisSentinelMaster, SentinelPassword: c.RedisSentinelPassword, ExpiryEvents: c.RedisExpiryEvents,
		TLS: state.RedisTLS{Enable: c.RedisTLS, CAFile: c.RedisTLSCA, CertFile: c.RedisTLSCert, KeyFile: c.RedisTLSKey},
	}
}
