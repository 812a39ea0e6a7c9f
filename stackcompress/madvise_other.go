//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package stackcompress

// dontNeed does nothing where package syscall offers no madvise; the
// kernel reclaims clean file pages under memory pressure.
func dontNeed([]byte) {}
