package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/state"
)

// openRedis opens the Redis store of the configuration and, unless
// REDIS_REQUIRE_DURABLE is false, refuses a Redis that would lose state
// silently (eviction, no AOF).
func openRedis(ctx context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	rc := state.RedisConfig{
		Addrs: cfg.RedisAddrs, Username: cfg.RedisUsername, Password: cfg.RedisPassword, DB: cfg.RedisDB,
		Cluster: cfg.RedisCluster, KeyPrefix: cfg.RedisPrefix, KeyFormat: cfg.RedisKeyFmt, IdleTTL: cfg.IdleTTL,
		SentinelMaster: cfg.RedisSentinelMaster, SentinelPassword: cfg.RedisSentinelPassword, ExpiryEvents: cfg.RedisExpiryEvents,
		TLS: state.RedisTLS{Enable: cfg.RedisTLS, CAFile: cfg.RedisTLSCA, CertFile: cfg.RedisTLSCert, KeyFile: cfg.RedisTLSKey},
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("config: %s_REDIS_*: %w", envPrefix, err)
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
