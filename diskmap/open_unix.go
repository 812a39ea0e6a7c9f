//go:build unix

package diskmap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open memory-maps the checked map (WriteChecked) in the file at path,
// read-only: lookups read the file's pages in place. A file whose trailer
// is missing or wrong, an empty one among them, is a corrupt map, which
// Open returns without error: its lookups answer "every page".
func Open(path string) (*Map, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("diskmap: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("diskmap: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return &Map{corrupt: true}, nil
	}
	if size >= 1<<32 {
		return nil, fmt.Errorf("diskmap: %s: %d bytes, more than a map can address", path, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("diskmap: mapping %s: %w", path, err)
	}
	m := NewChecked(data)
	m.release = func() error { return unix.Munmap(data) }
	return m, nil
}
