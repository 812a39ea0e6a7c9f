// Package pagecache drops a file's pages from the operating system's page
// cache, so that a benchmark can measure reads that wait for the disk.
package pagecache

import "errors"

// ErrUnsupported is returned where the platform cannot drop pages.
var ErrUnsupported = errors.New("pagecache: dropping pages is not supported on this platform")

// Drop asks the kernel to drop path's clean pages from the page cache
// (POSIX_FADV_DONTNEED on Linux). It has no effect on tmpfs, whose pages
// are the file.
func Drop(path string) error { return drop(path) }
