package runtimeshim

import "time"

// wallTime returns wall-clock time since the Unix epoch.
func wallTime() time.Duration { return time.Duration(time.Now().UnixNano()) }

// Timer names the clock Compare uses: "thread-cpu" (the CPU time of the
// replaying thread, which leaves out the time other processes hold the CPU)
// or "wall".
func Timer() string {
	if threadCPUTimer {
		return "thread-cpu"
	}
	return "wall"
}
