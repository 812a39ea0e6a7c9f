package runtimeshim

import (
	"time"

	"github.com/pctab/pctab/internal/cputime"
)

// Timer names the clock Compare uses: "thread-cpu" (the CPU time of the
// replaying thread, which leaves out the time other processes hold the CPU)
// or "wall" where the platform has no thread CPU clock.
func Timer() string {
	if cputime.Available() {
		return "thread-cpu"
	}
	return "wall"
}

// threadTime returns the CPU time of the calling thread, or the wall clock
// where there is none (as Timer says). The caller must be locked to its
// thread.
func threadTime() time.Duration {
	if t, ok := cputime.Thread(); ok {
		return t
	}
	return time.Duration(time.Now().UnixNano())
}
