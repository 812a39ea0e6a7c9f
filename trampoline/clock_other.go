//go:build !unix || aix

package trampoline

import (
	"fmt"
	"runtime"
)

// monotonic fails: the clock of Go's execution traces here (on windows,
// the processor's tick counter) is not one a program can read, or (aix)
// golang.org/x/sys/unix has no clock_gettime to read it with.
func monotonic() (int64, error) {
	return 0, fmt.Errorf("%w: %s has no CLOCK_MONOTONIC", ErrUnsupported, runtime.GOOS)
}
