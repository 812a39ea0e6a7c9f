// Package mapfile gives read-only access to a file's bytes: memory-mapped
// where the platform can (unix: mmap; windows: CreateFileMapping and
// MapViewOfFile), read into memory elsewhere (plan9, js/wasm, wasip1) or
// when built with the tag pctab_nommap, which tests the fallback on any
// platform. Packages tracestore, stackcompress and diskmap read their
// files through it.
package mapfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"
)

// ErrUnsupported is returned by Map where the platform, or the build
// (tag pctab_nommap), maps no files.
var ErrUnsupported = errors.New("mapfile: memory mapping is not supported on this platform or build")

// Mapping is the read-only contents of a file, mapped (Mapped) or read
// into memory.
type Mapping struct {
	data  []byte
	unmap func() error // nil unless mapped
}

// Map maps the first size bytes of f read-only; a size of 0 maps nothing
// and returns an empty Mapping. Reading a page of the mapping past the
// end of a file truncated after Map faults (see debug.SetPanicOnFault).
// Map returns ErrUnsupported where it cannot map.
func Map(f *os.File, size int64) (*Mapping, error) {
	if err := checkSize(f, size); err != nil {
		return nil, err
	}
	if size == 0 {
		return &Mapping{}, nil
	}
	m, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("mapfile: mapping %d bytes of %s: %w", size, f.Name(), err)
	}
	return m, nil
}

// Load returns the first size bytes of f: mapped where Map can, read into
// memory where Map returns ErrUnsupported.
func Load(f *os.File, size int64) (*Mapping, error) {
	m, err := Map(f, size)
	if errors.Is(err, ErrUnsupported) {
		return read(f, size)
	}
	return m, err
}

// Open loads (Load) the file at path, after check, unless nil, accepts
// its size. It returns the errors of os.Open, os.Stat and check as they
// are.
func Open(path string, check func(size int64) error) (*Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(st.Size()); err != nil {
			return nil, err
		}
	}
	return Load(f, st.Size())
}

func checkSize(f *os.File, size int64) error {
	if size < 0 || int64(int(size)) != size {
		return fmt.Errorf("mapfile: %s: %d bytes cannot be addressed in memory", f.Name(), size)
	}
	return nil
}

// read reads the first size bytes of f into memory.
func read(f *os.File, size int64) (*Mapping, error) {
	b := make([]byte, size)
	if n, err := io.ReadFull(io.NewSectionReader(f, 0, size), b); err != nil {
		return nil, fmt.Errorf("mapfile: reading %s: %d of %d bytes: %w", f.Name(), n, size, err)
	}
	return &Mapping{data: b}, nil
}

// Bytes returns the file's bytes, valid until Close.
func (m *Mapping) Bytes() []byte { return m.data }

// Mapped reports whether the bytes are a memory mapping of the file
// rather than a copy in memory (or empty).
func (m *Mapping) Mapped() bool { return m.unmap != nil }

// Close unmaps the bytes (or lets them go); Bytes must not be read after.
// A second Close does nothing.
func (m *Mapping) Close() error {
	unmap := m.unmap
	m.data, m.unmap = nil, nil
	if unmap == nil {
		return nil
	}
	return unmap()
}

// DontNeed drops the whole pages inside b, which must lie inside the
// Bytes of a Mapping that Map or Load returned, from the process's
// resident set; the operating system keeps them in its page cache and a
// later read faults them back in from the file. It only saves memory:
// where the bytes are no mapping, or the platform has no equivalent, it
// does nothing and the pages stay resident. On unix it is madvise's
// MADV_DONTNEED, which on other memory would discard its contents.
func DontNeed(b []byte) {
	if p := wholePages(b); len(p) > 0 {
		dontNeed(p)
	}
}

// wholePages returns the part of b made of whole pages.
func wholePages(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	ps := os.Getpagesize()
	lo := (ps - int(addr(b)%uintptr(ps))) % ps
	if lo >= len(b) {
		return nil
	}
	return b[lo : lo+(len(b)-lo)/ps*ps]
}

// addr returns the address of b's first byte.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
