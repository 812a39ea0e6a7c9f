package stackcompress

import (
	"fmt"
	"os"

	"github.com/pctab/pctab/internal/mapfile"
)

// mapping is a read-only mapping of a whole DAG file.
type mapping struct {
	m    *mapfile.Mapping
	data []byte
}

// mmapFile maps the size-byte file f. Where package mapfile maps nothing
// (plan9, js, wasip1, the pctab_nommap build) it fails, and Open falls
// back to ReadAt.
func mmapFile(f *os.File, size int64) (*mapping, error) {
	m, err := mapfile.Map(f, size)
	if err != nil {
		return nil, fmt.Errorf("stackcompress: %w", err)
	}
	return &mapping{m: m, data: m.Bytes()}, nil
}

func (m *mapping) load(off int64, n int, _ []byte) ([]byte, error) {
	if off < 0 || n < 0 || off > int64(len(m.data)) || int64(n) > int64(len(m.data))-off {
		return nil, fmt.Errorf("stackcompress: %d bytes at offset %d are outside the %d-byte mapping", n, off, len(m.data))
	}
	return m.data[off : off+int64(n) : off+int64(n)], nil
}

// release tells the operating system that the whole memory pages inside
// data, at off, are not needed; the next access reads them back from the
// file.
func (m *mapping) release(off int64, data []byte) bool {
	mapfile.DontNeed(m.data[off : off+int64(len(data))])
	return false // the bytes belong to the mapping
}

func (m *mapping) Close() error {
	m.data = nil
	return m.m.Close()
}
