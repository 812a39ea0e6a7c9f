//go:build unix

package tracestore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only after checking that it holds want bytes,
// and adds its unmapping to closers. A file truncated while it is mapped
// faults when its lost pages are read: Store.Guard turns that fault into
// an error.
func mapFile(path string, want int64, closers *[]func() error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	if st.Size() != want {
		return nil, fmt.Errorf("tracestore: %s: %d bytes, %s says %d", path, st.Size(), fileManifest, want)
	}
	if st.Size() == 0 {
		return nil, nil
	}
	if st.Size() != int64(int(st.Size())) {
		return nil, fmt.Errorf("tracestore: %s: too large to map", path)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("tracestore: mapping %s: %w", path, err)
	}
	*closers = append(*closers, func() error { return unix.Munmap(b) })
	return b, nil
}

// dropPages drops the pages of the mapping b from the process's resident
// set; the kernel keeps them in its page cache, and a later read faults
// them back in. check, which reads a store's files once, calls it as it
// goes, so that checking a store at the end of Build costs the resident
// memory of what it read since it last dropped, not the store's size.
func dropPages(b []byte) {
	if len(b) > 0 {
		unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
