package trampoline

// clockMonotonic is CLOCK_MONOTONIC of NetBSD's <time.h> (and Go's
// runtime, os_netbsd.go), which golang.org/x/sys/unix does not define.
const clockMonotonic = 3
