package stackcompress

import "syscall"

// dontNeed drops the resident pages of a file-backed mapping range.
func dontNeed(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
