//go:build !linux

package lookupbench

import "time"

// threadCPUTime reports that the thread's CPU time is not known: only Linux
// timings include it.
func threadCPUTime() (time.Duration, bool) { return 0, false }
