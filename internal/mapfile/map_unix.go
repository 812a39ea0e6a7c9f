//go:build unix && !pctab_nommap

package mapfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// Supported says whether Map maps files in this build.
const Supported = true

func mapFile(f *os.File, size int) (*Mapping, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &Mapping{data: b, unmap: func() error { return unix.Munmap(b) }}, nil
}

func dontNeed(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }
