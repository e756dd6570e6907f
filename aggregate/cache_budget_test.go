package aggregate

import "testing"

// TestMinMemoryLimit pins the arithmetic of the exported memory sizing
// that deploy/ tests use: the default cache and the batches in flight fit
// the smallest limit with half again to spare, and the default cache is
// what DefaultConfig uses.
func TestMinMemoryLimit(t *testing.T) {
	if got := DefaultConfig().CacheBytes; got != DefaultCacheBytes {
		t.Fatalf("DefaultConfig().CacheBytes = %d, want DefaultCacheBytes %d", got, DefaultCacheBytes)
	}
	need := DefaultCacheBytes + BatchHeapBytes
	if MinMemoryLimitBytes < need*3/2 {
		t.Fatalf("MinMemoryLimitBytes %d leaves less than half again over %d", MinMemoryLimitBytes, need)
	}
	if MinMemoryLimitBytes != 768<<20 {
		t.Fatalf("MinMemoryLimitBytes = %d MiB, documented as 768 MiB", MinMemoryLimitBytes>>20)
	}
}
