//go:build unix

package objscan

import "syscall"

// openNonblock makes opening a named pipe return at once instead of
// waiting for a writer; it changes nothing for a regular file.
const openNonblock = syscall.O_NONBLOCK
