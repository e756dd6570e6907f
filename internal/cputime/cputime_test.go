package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsBusyWork: 50 ms of busy looping adds at least 25 ms of
// CPU time (the kernel's accounting is tick-based, hence the margin), and
// sleeping adds much less than the sleep.
func TestProcessCountsBusyWork(t *testing.T) {
	c0 := Process()
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	busy := Process() - c0
	if busy < 25*time.Millisecond {
		t.Fatalf("50 ms of busy looping counted %v of CPU time", busy)
	}
	c1 := Process()
	time.Sleep(100 * time.Millisecond)
	if idle := Process() - c1; idle > 50*time.Millisecond {
		t.Fatalf("100 ms of sleep counted %v of CPU time", idle)
	}
}
