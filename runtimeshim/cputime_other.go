//go:build !linux

package runtimeshim

import "time"

// threadCPUTimer reports whether Compare measures the CPU time of its
// thread rather than wall-clock time.
const threadCPUTimer = false

// threadTime returns wall-clock time where thread CPU time is not
// available.
func threadTime() time.Duration { return wallTime() }
