// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per unit of work beside wall clock (on a shared machine
// the wall clock depends on what the scheduler grants; CPU time much less).
package cputime

import (
	"syscall"
	"time"
)

// Process returns the user and system CPU time of this process so far (all
// its threads: the benchmark's goroutines, an in-process broker, the
// garbage collector), or 0 if the kernel does not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
