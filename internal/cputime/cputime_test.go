package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCountsBusyWork: busy looping makes Process advance, by no more
// than the wall clock allows on this machine's CPUs, and sleeping adds much
// less than the sleep.
//
// The test waits for CPU time, not for wall-clock time: on a loaded machine
// (CI runs packages in parallel) 50 ms of wall clock can be granted 17 ms of
// CPU, so a fixed wall-clock loop would fail for reasons that are not ours.
// A Process that never advances (returns 0, or reads another clock) fails at
// the deadline.
func TestProcessCountsBusyWork(t *testing.T) {
	const want = 30 * time.Millisecond
	const deadline = 30 * time.Second
	start := time.Now()
	c0 := Process()
	var busy time.Duration
	for busy < want {
		if time.Since(start) > deadline {
			t.Fatalf("%v of busy looping counted %v of CPU time, want %v", deadline, busy, want)
		}
		busy = Process() - c0
	}
	wall := time.Since(start)
	// The kernel's accounting is tick-based (up to 10 ms per thread at
	// HZ=100), hence the slack beside the CPUs × wall-clock bound.
	if bound := wall*time.Duration(runtime.NumCPU()) + 50*time.Millisecond; busy > bound {
		t.Fatalf("busy looping for %v counted %v of CPU time, more than %d CPUs can give (%v)", wall, busy, runtime.NumCPU(), bound)
	}
	c1 := Process()
	time.Sleep(100 * time.Millisecond)
	if idle := Process() - c1; idle > 50*time.Millisecond {
		t.Fatalf("100 ms of sleep counted %v of CPU time", idle)
	}
}
