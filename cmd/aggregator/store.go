package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/state"
)

// openRedis opens the Redis store of the configuration.
func openRedis(_ context.Context, cfg *config, logger *slog.Logger, reg prometheus.Registerer) (state.Store, error) {
	rc := state.RedisConfig{
		Addrs: cfg.RedisAddrs, Username: cfg.RedisUsername, Password: cfg.RedisPassword, DB: cfg.RedisDB,
		Cluster: cfg.RedisCluster, KeyPrefix: cfg.RedisPrefix, KeyFormat: cfg.RedisKeyFmt, IdleTTL: cfg.IdleTTL,
		TLS: state.RedisTLS{Enable: cfg.RedisTLS, CAFile: cfg.RedisTLSCA, CertFile: cfg.RedisTLSCert, KeyFile: cfg.RedisTLSKey},
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("config: %s_REDIS_*: %w", envPrefix, err)
	}
	return state.NewRedis(rc, logger, reg)
}
