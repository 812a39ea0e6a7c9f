//go:build unix && !aix

package trampoline

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// monotonic reads CLOCK_MONOTONIC, the clock of Go's execution traces on
// Linux.
func monotonic() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clockMonotonic, &ts); err != nil {
		return 0, fmt.Errorf("trampoline: reading CLOCK_MONOTONIC: %w", err)
	}
	return ts.Nano(), nil
}
