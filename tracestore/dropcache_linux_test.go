package tracestore

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache drops path's clean pages from the page cache.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
