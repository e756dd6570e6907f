package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/options"
	"github.com/changerate/changerate/state"
)

// openRedis opens the Redis store of the configuration and, unless
// REDIS_REQUIRE_DURABLE is false, refuses a Redis that would lose state
// silently (eviction, no AOF).
func openRedis(ctx context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	rc := cfg.redisConfig()
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("config: %s", options.RedisError(err, "IDLE_TTL"))
	}
	r, err := state.NewRedis(rc, logger, reg)
	if err != nil {
		return nil, err
	}
	if err := r.CheckDurability(ctx); err != nil {
		if cfg.Redis.RequireDurable {
			r.Close()
			return nil, fmt.Errorf("%w (fix the Redis configuration, or set %s_REDIS_REQUIRE_DURABLE=false for tests and development)", err, envPrefix)
		}
		logger.Warn("Redis may lose state; continuing because REDIS_REQUIRE_DURABLE is false", "err", err)
	}
	return r, nil
}

// redisConfig is the configuration of the Redis store.
func (c *config) redisConfig() state.RedisConfig {
	return c.Redis.Config(c.IdleTTL)
}
