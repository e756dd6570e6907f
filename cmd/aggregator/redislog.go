package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// redisClientLog receives go-redis's own log lines (its connection pool
// reports dial failures and dropped connections through a package-global
// logger that otherwise prints unstructured lines to stderr) and writes them
// as records of the aggregator's logger, with component "redis-client".
// main installs it once with redis.SetLogger; run points it at the logger
// of its configuration (use). Until then, and in tests that call run
// without main, go-redis keeps its default logger.
var redisClientLog redisLog

type redisLog struct {
	l atomic.Pointer[slog.Logger]
}

// use makes l the destination of go-redis's lines.
func (r *redisLog) use(l *slog.Logger) { r.l.Store(l.With("component", "redis-client")) }

// Printf implements go-redis's internal.Logging. A failure to dial or to
// get a connection is logged at debug level: the command that needed the
// connection fails with the same error, which the aggregator logs where
// it handles it (the store check at start, a retried claim or commit, the
// readiness probe's reason). Anything else go-redis reports is a warning.
func (r *redisLog) Printf(ctx context.Context, format string, v ...any) {
	l := r.l.Load()
	if l == nil {
		return
	}
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	level := slog.LevelWarn
	if strings.Contains(msg, "failed to dial") || strings.Contains(msg, "failed to get a usable connection") {
		level = slog.LevelDebug
	}
	l.Log(ctx, level, msg)
}
