package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of the container's memory limit given to the
// Go heap (GOMEMLIMIT): the rest is left to the runtime's own memory,
// thread stacks and the kernel's accounting of page cache.
const memLimitRatio = 0.9

// setMemoryLimit sets GOMEMLIMIT to memLimitRatio of the container's
// memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes, through
// KimMachineGun/automemlimit), so that the garbage collector works harder
// before the kernel's OOM killer would act; the cache (CACHE_BYTES) is the
// bulk of the heap. A GOMEMLIMIT variable in the environment wins
// (AUTOMEMLIMIT=off disables the setting); without a cgroup limit nothing
// is set. automemlimit is used rather than reading the cgroup files by
// hand: it finds the cgroup mount and version, and handles cgroup v1 and
// the unlimited values.
func setMemoryLimit(logger *slog.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(memLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		logger.Info("no container memory limit found; GOMEMLIMIT not set", "reason", err)
	case limit > 0 && limit < math.MaxInt64:
		logger.Info("GOMEMLIMIT set", "bytes", limit, "ratio_of_container_limit", memLimitRatio)
	}
}

// defaultGCPercent is the garbage collector's target in service mode when
// GOGC is not set: the heap may grow 75 % past the live data before a
// collection (Go's default is 100 %). Most of the aggregator's live heap
// is the bounded cache, and with the default the peak RSS was about twice
// it; 75 gave 7 % less peak RSS for 7 % more aggregator CPU in make bench's
// live-crawl shape with 1,000,000 objects (docs/bench.md). With the cache
// in pointer-free slabs (aggregate/cache_slab.go) it still does there:
// 695 against 775 bytes of peak RSS per object for 6.85 against 6.46 µs of
// aggregator CPU per observation (one run each), and at 100,000 objects
// the CPU was the same (6.70–6.73 against 6.78–6.80, two runs each).
// Prometheus made the same choice (GOGC=75 unless set) for the same kind
// of heap.
const defaultGCPercent = 75

// setGCPercent applies defaultGCPercent unless GOGC is in the environment
// (which wins, as GOMEMLIMIT does in setMemoryLimit).
func setGCPercent(logger *slog.Logger) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		logger.Info("GOGC from the environment", "GOGC", v)
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	logger.Info("GOGC set", "percent", defaultGCPercent)
}
