// Package cputime reads the CPU time this process has used: what the server's
// GOMAXPROCS tuner divides by the wall clock, and what benchmarks divide by their
// operations to report the CPU an operation costs beside the time it takes.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time of the whole process so far, every thread's
// (getrusage RUSAGE_SELF); 0 if the system will not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
