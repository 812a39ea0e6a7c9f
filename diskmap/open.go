package diskmap

import (
	"fmt"

	"github.com/pctab/pctab/internal/mapfile"
)

// Open memory-maps the checked map (WriteChecked) in the file at path,
// read-only: lookups read the file's pages in place (where package
// mapfile cannot map, Open reads the file into memory). A file whose
// trailer is missing or wrong, an empty one among them, is a corrupt map,
// which Open returns without error: its lookups answer "every page".
func Open(path string) (*Map, error) {
	mf, err := mapfile.Open(path, func(size int64) error {
		if size >= 1<<32 {
			return fmt.Errorf("%s: %d bytes, more than a map can address", path, size)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("diskmap: %w", err)
	}
	m := NewChecked(mf.Bytes())
	m.release = mf.Close
	return m, nil
}
