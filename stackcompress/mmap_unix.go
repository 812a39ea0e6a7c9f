//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stackcompress

import (
	"fmt"
	"os"
	"syscall"
)

// mapping is a read-only shared mapping of a whole DAG file.
type mapping struct {
	data     []byte
	pageSize int
}

// mmapFile maps the size-byte file f.
func mmapFile(f *os.File, size int64) (*mapping, error) {
	if int64(int(size)) != size {
		return nil, fmt.Errorf("stackcompress: file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("stackcompress: mmap: %w", err)
	}
	return &mapping{data: data, pageSize: os.Getpagesize()}, nil
}

func (m *mapping) load(off int64, n int, _ []byte) ([]byte, error) {
	if off < 0 || n < 0 || off > int64(len(m.data)) || int64(n) > int64(len(m.data))-off {
		return nil, fmt.Errorf("stackcompress: %d bytes at offset %d are outside the %d-byte mapping", n, off, len(m.data))
	}
	return m.data[off : off+int64(n) : off+int64(n)], nil
}

// release advises the kernel that the whole memory pages inside data, at off, are
// not needed; the next access reads them back from the file.
func (m *mapping) release(off int64, data []byte) bool {
	start := int(off)
	end := start + len(data)
	ps := m.pageSize
	a, b := (start+ps-1)/ps*ps, end/ps*ps
	if a < b {
		dontNeed(m.data[a:b])
	}
	return false // the bytes belong to the mapping
}

func (m *mapping) Close() error {
	if m.data == nil {
		return nil
	}
	err := syscall.Munmap(m.data)
	m.data = nil
	return err
}
