package forest

import "golang.org/x/sys/unix"

// reserve maps size bytes of anonymous memory that the kernel backs with
// pages only as they are touched (MAP_NORESERVE: no swap is reserved).
func reserve(size int) ([]byte, func() error, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil, err
	}
	return mem, func() error { return unix.Munmap(mem) }, nil
}
