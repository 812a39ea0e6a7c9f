package tracestore

import (
	"fmt"

	"github.com/pctab/pctab/internal/mapfile"
)

// mapFile maps path read-only (or reads it, where package mapfile cannot
// map) after checking that it holds want bytes, and adds its unmapping to
// closers. A file truncated while it is mapped faults when its lost pages
// are read: Store.Guard turns that fault into an error.
func mapFile(path string, want int64, closers *[]func() error) ([]byte, error) {
	m, err := mapfile.Open(path, func(size int64) error {
		if size != want {
			return fmt.Errorf("%s: %d bytes, %s says %d", path, size, fileManifest, want)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	*closers = append(*closers, m.Close)
	return m.Bytes(), nil
}

// dropPages drops the pages of the mapping b from the process's resident
// set; the kernel keeps them in its page cache, and a later read faults
// them back in. check, which reads a store's files once, calls it as it
// goes, so that checking a store at the end of Build costs the resident
// memory of what it read since it last dropped, not the store's size.
// Where the files are read into memory (see package mapfile), it does
// nothing: only memory depends on it.
func dropPages(b []byte) { mapfile.DontNeed(b) }
