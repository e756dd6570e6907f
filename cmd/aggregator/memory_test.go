package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"

	"github.com/changerate/changerate/aggregate"
)

func TestCacheBytesConfig(t *testing.T) {
	c := newConfig()
	c.CacheBytes, c.CacheObjects, c.Emit, c.BatchSize = 512<<20, 10, aggregate.EmitUpdate, 100
	if pc := c.processorConfig(); pc.CacheBytes != 512<<20 || pc.CacheObjects != 10 {
		t.Errorf("update mode: CacheBytes %d, CacheObjects %d", pc.CacheBytes, pc.CacheObjects)
	}
	c.Emit = aggregate.EmitFinal
	if pc := c.processorConfig(); pc.CacheBytes != 0 || pc.CacheObjects != 0 {
		t.Errorf("final mode: CacheBytes %d, CacheObjects %d, want both 0", pc.CacheBytes, pc.CacheObjects)
	}
}

// TestSetGCPercent: without GOGC the service sets defaultGCPercent; a GOGC
// in the environment wins (the runtime read it at start, and it is left
// alone).
func TestSetGCPercent(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "120")
	setGCPercent(logger)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d, want it left at 100", got)
	}

	os.Unsetenv("GOGC") // restored by t.Setenv's cleanup
	setGCPercent(logger)
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, defaultGCPercent)
	}
}
