//go:build !linux

package stackreport

import "time"

// threadCPU is unavailable here; the report falls back to wall time.
func threadCPU() (time.Duration, bool) { return 0, false }
