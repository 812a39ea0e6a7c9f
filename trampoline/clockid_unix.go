//go:build unix && !netbsd && !aix

package trampoline

import "golang.org/x/sys/unix"

const clockMonotonic = unix.CLOCK_MONOTONIC
