package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"testing"

	"github.com/changerate/changerate/aggregate"
)

func TestByteSizeDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"500MB", 500e6, true},
		{"1048576", 1 << 20, true},
		{"0", 0, true},
		{"12xyz", 0, false},
		{"-5MiB", 0, false},
		{"", 0, false},
	} {
		var b byteSize
		err := b.Decode(tc.in)
		if (err == nil) != tc.ok || (tc.ok && int64(b) != tc.want) {
			t.Errorf("Decode(%q) = %d, %v; want %d (ok %v)", tc.in, b, err, tc.want, tc.ok)
		}
	}
}

func TestCacheBytesConfig(t *testing.T) {
	c := config{CacheBytes: 512 << 20, CacheObjects: 10, Emit: aggregate.EmitUpdate, BatchSize: 100}
	if pc := c.processorConfig(); pc.CacheBytes != 512<<20 || pc.CacheObjects != 10 {
		t.Errorf("update mode: CacheBytes %d, CacheObjects %d", pc.CacheBytes, pc.CacheObjects)
	}
	c.Emit = aggregate.EmitFinal
	if pc := c.processorConfig(); pc.CacheBytes != aggregate.Unbounded || pc.CacheObjects != aggregate.Unbounded {
		t.Errorf("final mode: CacheBytes %d, CacheObjects %d, want both Unbounded", pc.CacheBytes, pc.CacheObjects)
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
