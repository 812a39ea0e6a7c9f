package diskmap

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache asks the kernel to drop path's clean pages from the page cache
// (POSIX_FADV_DONTNEED). It has no effect on tmpfs.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
