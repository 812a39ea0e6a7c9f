package runtimeshim

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// threadCPUTimer reports whether Compare measures the CPU time of its
// thread (it does on Linux) rather than wall-clock time.
const threadCPUTimer = true

// threadTime returns the CPU time the calling thread has used. The caller
// must be locked to its thread.
func threadTime() time.Duration {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return wallTime()
	}
	return time.Duration(ts.Nano())
}
