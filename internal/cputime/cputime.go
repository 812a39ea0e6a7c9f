// Package cputime reads the CPU time of the calling OS thread, the clock
// pctab's timings use because these machines are shared: it leaves out the
// time other processes hold the CPU.
//
// Callers lock their goroutine to its thread (runtime.LockOSThread) around
// the span they measure.
package cputime

import "time"

// Thread returns the CPU time, user and system, that the calling OS thread
// has used, and whether the platform measures it (Linux, Darwin and FreeBSD
// do; elsewhere it returns 0, false).
func Thread() (time.Duration, bool) { return thread() }

// Process returns the CPU time, user and system, that all the threads of
// the calling process have used, and whether the platform measures it.
// Tests that must run long enough for a CPU profiler to sample them loop
// until Process has advanced, not until a wall-clock deadline, so that
// they pass on a loaded machine.
func Process() (time.Duration, bool) { return process() }

// Available reports whether Thread measures thread CPU time here.
func Available() bool {
	_, ok := thread()
	return ok
}
