//go:build !unix

package diskmap

import (
	"fmt"
	"os"
)

// Open reads the checked map (WriteChecked) in the file at path into
// memory: there is no memory mapping on this platform. A file whose
// trailer is missing or wrong is a corrupt map: its lookups answer "every
// page".
func Open(path string) (*Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("diskmap: %w", err)
	}
	return NewChecked(data), nil
}
